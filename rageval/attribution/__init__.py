"""Attributed answers: statements, citations and their entailment (Djeddal et al., CIKM 2024; SPEC §3)."""
