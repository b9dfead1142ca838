"""eRAG: evaluating retrieval by the RAG LLM's own use of each document (Salemi & Zamani, SIGIR 2024).

    G_q[d] = E(M(q, {d}), y)     the eRAG label of document d: the LLM's answer from d alone, scored (labels)
    E2E_q@k = E(M(q, R_k), y)    the end-to-end score it is judged against (e2e)

Any IR measure aggregates the labels into one score per ranked list (measures), next to the classic baselines
(baselines); cost compares eRAG's and E2E's time and memory (the paper's Table 2). Label-method names: methods.

The package re-exports nothing: import each name from the submodule that defines it (labels, e2e,
baselines, measures, methods).
"""
