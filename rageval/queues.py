"""Annotation queues: sampled items, each assigned to N annotators, with agreement and adjudication."""
