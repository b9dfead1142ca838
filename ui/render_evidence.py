"""Render helpers of one query's end-to-end outputs, label evidence and LLM-retEval facts (semi-gold answers,
verdicts, failure cases) and of the LLM-retEval table, shared by the Query inspector, LLM-retEval and Failure cases
pages. These go into tables: their text is never Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from rageval.reteval import CATEGORY_NAMES, RECALL_FAILURES
from ui import auth, navigation, render
from ui import format as fmt
from ui.format import escape_markdown, judge_name, method_name


def e2e_outputs_view(outputs: pd.DataFrame) -> pd.DataFrame:
    """One query's E2E answers, one row per k: k, the answer, its exact match (✓/✗ and value)."""
    return pd.DataFrame({"k": outputs["k"].astype(int), "End-to-end answer": outputs["output"],
                         "EM": [render.score_cell(s) for s in outputs["score"]]})


_REPLY_EVIDENCE = re.compile(r"^(?P<model>.+?) (?P<verb>replied|answered) '(?P<reply>.*)'(?P<rest>[^']*)$", re.DOTALL)


def evidence_reply_first(evidence: str) -> str:
    """An LLM's label evidence with its reply first, then the model: ``MODEL replied 'Yes.'`` (LLM relevance,
    :func:`rageval.erag.baselines.compute_judge_labels`) reads ``'Yes.' (replied by MODEL)``, and
    ``MODEL answered 'X' from this passage alone (…)`` (a re-score job) ``'X' from this passage alone (…)
    (answered by MODEL)``: a long model id first cut the reply off in the table's cell. Other evidence is kept."""
    match = _REPLY_EVIDENCE.match(evidence)
    if match is None:
        return evidence
    return f"'{match['reply']}'{match['rest']} ({match['verb']} by {match['model']})"


def evidence_view(evidence: pd.DataFrame, ranking: pd.DataFrame) -> pd.DataFrame:
    """Label evidence of one query beside the ranked passage it is about: rank, title, method, label, evidence
    (an LLM's reply first: :func:`evidence_reply_first`); passages outside the ranking (e.g. unretrieved gold
    passages) come last without a rank."""
    ranked = ranking.set_index("passage_id")
    rows = []
    for row in evidence.itertuples():
        retrieved = row.passage_id in ranked.index
        label = ranked.at[row.passage_id, row.method] if retrieved and row.method in ranked.columns else None
        rows.append({"Rank": ranked.at[row.passage_id, "rank"] if retrieved else None,
                     "Title": ranked.at[row.passage_id, "title"] if retrieved else "",
                     "Passage id": row.passage_id, "Labels": method_name(row.method),
                     "Label": render.format_label(label), "Evidence": evidence_reply_first(row.evidence)})
    view = pd.DataFrame(rows, columns=["Rank", "Title", "Passage id", "Labels", "Label", "Evidence"])
    return view.sort_values(["Rank", "Labels"], na_position="last").reset_index(drop=True).astype({"Rank": "Int64"})


def semi_gold_view(samples: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"Sample": samples["sample"].astype(int), "Answer from the gold passages": samples["output"]})


def verdicts_view(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One query's verdicts: k, judge, what the top-k answer was compared with, Yes/No and the evidence."""
    return pd.DataFrame({
        "k": verdicts["k"].astype(int), "Judge": verdicts["judge"].map(judge_name),
        "Compared with": verdicts["reference"].map(lambda r: render.REFERENCE_NAMES.get(r, r)),
        "Verdict": ["Yes" if v else "No" for v in verdicts["verdict"]], "Evidence": verdicts["evidence"],
    })


def failure_cases_view(cases: pd.DataFrame, *, with_judge: bool = True) -> pd.DataFrame:
    """Failure cases with the category's name (``rageval.reteval.CATEGORY_NAMES``) and the rule's reason;
    ``cases`` has columns k, category, reason and, optionally, judge and text (the question)."""
    view = pd.DataFrame({"k": cases["k"].astype(int)})
    if with_judge and "judge" in cases.columns:
        view["Judge"] = cases["judge"].map(judge_name)
    if "text" in cases.columns:
        view["Question"] = cases["text"]
    view["Category"] = cases["category"]
    view["What failed"] = ["recall" if c in RECALL_FAILURES else "LLM-retEval" for c in cases["category"]]
    view["Meaning"] = cases["category"].map(lambda c: CATEGORY_NAMES.get(c, "unknown category"))
    view["Reason"] = cases["reason"]
    return view


def render_failure_case(case: Mapping[str, Any], run: str, k: int,
                        list_params: Mapping[str, str] | None = None) -> None:
    """One failure case in a box: category, its meaning, k, run and query; the question and the rule's reason as
    text; a link to the query in the inspector (walking the worklist ``list_params``, ``list`` and ``list_name``,
    when given). ``case`` has query_id, text, category and reason."""
    with st.container(border=True):
        st.caption(escape_markdown(
            f"{case['category']} · {CATEGORY_NAMES.get(case['category'], 'unknown category')} · k={k} · "
            f"run {run} · query {case['query_id']}"))
        st.text(case["text"])
        st.text(case["reason"])
        auth.page_link(st, navigation.INSPECTOR, label="Open this query in the query inspector",
                       icon=":material/search:",
                       query_params={"run": run, **(list_params or {}), "query": case["query_id"]})


RETEVAL_ROWS = (
    ("A", "A · not all correct passages annotated"),
    ("B", "B · corpus/label mismatch"),
    ("C", "C · distraction by retrieved passages"),
    ("recall_failures", "Recall failures (queries with A, B or C)"),
    ("D", "D · LLM cannot answer from the gold passages"),
    ("E", "E · semi-gold answers cover only some answers"),
    ("F", "F · judge compared wrongly"),
    ("reteval_failures", "LLM-retEval failures (queries with D, E or F)"),
    ("recall", "Recall@k"),
    ("precision", "Precision@k"),
    ("f1", "F1@k"),
    ("llm_reteval", "LLM-retEval (share of Yes vs semi-gold, 95% Wilson interval)"),
    ("qa_accuracy", "QA accuracy (judge vs gold answers, 95% Wilson interval)"),
    ("qa_em", "QA exact match (E2E EM, 95% Wilson interval)"),
    ("rho_all", "Spearman's rho, LLM-retEval vs Recall@k: ALL"),
    ("n", "n (ALL)"),
    ("rho_refined", "Spearman's rho, LLM-retEval vs Recall@k: Refined"),
    ("n_refined", "n (Refined: no A-C failure)"),
)


_COUNT_ROWS = {"A", "B", "C", "D", "E", "F", "recall_failures", "reteval_failures", "n", "n_refined"}


#: Rows of :data:`RETEVAL_ROWS` that are shares of 0/1 outcomes over the row ``n`` (Yes verdicts, exact matches):
#: shown as percentages with their Wilson interval.
RETEVAL_SHARE_ROWS = frozenset({"llm_reteval", "qa_accuracy", "qa_em"})


def format_reteval_cell(key: str, value: Any, n: Any = None) -> str:
    """A cell of :func:`reteval_view`: counts as integers; a share of 0/1 outcomes (:data:`RETEVAL_SHARE_ROWS`)
    over ``n`` queries as ``67.0% [62.1%, 71.5%]`` (Wilson interval); other rates (Recall/Precision/F1@k, means
    of graded values) with 3 decimals; a rho is ``undefined`` when nan (a constant input, or fewer than 2
    queries)."""
    if key in _COUNT_ROWS:
        return fmt.format_count(value)
    if fmt.is_missing(value):
        return "undefined" if key.startswith("rho") else fmt.MISSING
    if key in RETEVAL_SHARE_ROWS and not fmt.is_missing(n) and int(n) > 0:
        from rageval.stats.intervals import wilson_interval

        low, high = wilson_interval(min(round(float(value) * int(n)), int(n)), int(n))
        return fmt.format_share_estimate(value, low, high)
    return fmt.format_number(value, fmt.MEAN_DIGITS)


def reteval_view(table: pd.DataFrame) -> pd.DataFrame:
    """The LLM-retEval paper's Tables 1-2 as it prints them: one row per quantity, one column per k."""
    columns = {f"k={int(row['k'])}": [format_reteval_cell(key, row[key], row["n"]) for key, _ in RETEVAL_ROWS]
               for _, row in table.iterrows()}
    view = pd.DataFrame(columns, index=[label for _, label in RETEVAL_ROWS])
    view.index.name = "LLM-retEval"
    return view
