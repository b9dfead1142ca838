"""LLM-retEval's tables (Alinejad et al., 2024, Tables 1-2): the verdicts next to the classic measures.

Per k: Recall@k = |G ∩ R_k| / |G|, Precision@k = |G ∩ R_k| / k and F1@k against the gold passages G; the
LLM-retEval score (mean Yes verdict against the semi-gold answers); QA accuracy (the judge against the gold
answers); and Spearman's rho between the per-query verdict and Recall@k over all queries and over the
*Refined* ones (no recall failure A-C at that k).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rageval.reteval.failures import RECALL_FAILURES, RETEVAL_FAILURES
from rageval.reteval.judges import GOLD_ANSWERS, SEMI_GOLD
from rageval.stats.correlation import spearman_rho


def recall_precision_f1(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int) -> tuple[float, float, float]:
    """Recall@k = |G ∩ R_k| / |G|, Precision@k = |G ∩ R_k| / k, F1@k their harmonic mean (0 when both are 0)."""
    gold = set(gold_ids)
    if not gold:
        return 0.0, 0.0, 0.0
    found = len(gold & set(retrieved_ids[:k]))
    recall, precision = found / len(gold), found / k
    f1 = 2 * recall * precision / (recall + precision) if found else 0.0
    return recall, precision, f1


def reteval_table(queries: pd.DataFrame, rankings: Mapping[str, Sequence[str]], verdicts: pd.DataFrame,
                  failure_cases: pd.DataFrame, e2e: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The paper's Tables 1-2 for one judge: per k, failure counts per category, Recall/Precision/F1@k, the
    LLM-retEval score, QA accuracy (judge vs gold answers), QA exact match, and Spearman's rho between the
    per-query LLM-retEval verdict and Recall@k on ALL queries and on Refined (no A-C failure at that k).

    ``queries``: columns query_id, answers (JSON or list), gold_passage_ids (list); ``rankings``: query id -> ids.
    """
    rows = []
    mine = verdicts[verdicts["judge"] == judge]
    cases = failure_cases[failure_cases["judge"] == judge]
    query_ids = queries["query_id"].tolist()
    gold_ids = dict(zip(query_ids, queries["gold_passage_ids"]))
    for k in sorted(mine["k"].unique()):
        at_k = mine[mine["k"] == k]
        semi = at_k[at_k["reference"] == SEMI_GOLD].set_index("query_id")["verdict"].astype(float)
        gold = at_k[at_k["reference"] == GOLD_ANSWERS].set_index("query_id")["verdict"].astype(float)
        judged = set(semi.index.tolist())
        ids = [q for q in query_ids if q in judged]  # in query order
        if not ids:
            continue
        rpf = np.array([recall_precision_f1(rankings.get(q, []), gold_ids[q], int(k)) for q in ids])
        k_cases = cases[cases["k"] == k]
        recall_failed = set(k_cases[k_cases["category"].isin(RECALL_FAILURES)]["query_id"])
        refined = [i for i, q in enumerate(ids) if q not in recall_failed]
        verdict = semi.loc[ids].to_numpy()
        e2e_k = e2e[e2e["k"] == k].set_index("query_id")["score"]
        row: dict[str, float] = {"k": int(k), "n": len(ids)}
        for category in RECALL_FAILURES + RETEVAL_FAILURES:
            row[category] = int((k_cases["category"] == category).sum())
        row["recall_failures"] = len(recall_failed)
        row["reteval_failures"] = int(k_cases[k_cases["category"].isin(RETEVAL_FAILURES)]["query_id"].nunique())
        row.update({"recall": rpf[:, 0].mean(), "precision": rpf[:, 1].mean(), "f1": rpf[:, 2].mean(),
                    "llm_reteval": verdict.mean(), "qa_accuracy": gold.loc[ids].mean(),
                    "qa_em": e2e_k.reindex(ids).mean(),
                    "rho_all": spearman_rho(verdict, rpf[:, 0]),
                    "rho_refined": spearman_rho(verdict[refined], rpf[refined, 0]) if len(refined) > 1 else np.nan,
                    "n_refined": len(refined)})
        rows.append(row)
    return pd.DataFrame(rows)


def read_reteval_table(reader, judge: str) -> pd.DataFrame:
    """LLM-retEval's Tables 1-2 for ``judge`` (:func:`reteval_table`) from a run file's lean reads
    (:func:`rageval.store.aggregates.read_reteval_inputs`), remembered per version of the file
    (:func:`~rageval.store.files.remembered_summary`): at 100,000 queries the reads and the per-query Recall@k take
    seconds, once. An empty frame when the run has no verdict of ``judge``."""
    import json

    from rageval.store.aggregates import read_reteval_inputs
    from rageval.store.files import remembered_summary

    def compute() -> list[dict]:
        inputs = read_reteval_inputs(reader, judge)
        if inputs is None:
            return []
        queries, rankings, verdicts, cases, e2e = inputs
        table = reteval_table(queries, rankings, verdicts, cases, e2e, judge)
        return json.loads(table.to_json(orient="records"))  # NaN (an undefined rho) as null

    rows = remembered_summary(reader.path, f"reteval_table:1:{judge}", compute)
    return pd.DataFrame(rows).apply(pd.to_numeric)  # null (JSON) back to NaN
