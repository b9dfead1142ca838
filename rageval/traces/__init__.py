"""Traces from the tools RAG teams already log with (OpenInference / Phoenix, Langfuse, LangSmith, RAGAS, TREC RAG),
read into one shape (:mod:`rageval.traces.records`) and imported as a run."""
