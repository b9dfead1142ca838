"""Iterative Utility Maximization: one reranker that learns from several RAG agents (Salemi & Zamani, ICTIR 2025)."""
