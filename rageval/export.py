"""Export a run's labels, verdicts and failure cases as CSV, and its labels as TREC qrels.

CSV files carry everything needed to read a row without the run file (method, ids, rank, value and the
label's evidence; judge, reference, k, verdict and evidence). Qrels files hold one label method each, in the
format trec_eval and pytrec_eval read (``query_id 0 passage_id label``; fractional eRAG labels keep their
value, which pytrec_eval accepts only as integers, so export binary methods for it).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rageval.errors import RagevalError
from rageval.store import RunReader
from rageval.trec import write_trec_qrels

EXPORTS = ("labels", "verdicts", "failures")


def labels_frame(reader: RunReader, method: str | None = None) -> pd.DataFrame:
    """Labels with the passage's rank in the query's list (empty for unretrieved gold passages) and evidence."""
    labels = reader.labels(method)
    ranks = pd.DataFrame([(q, pid, rank) for q, r in reader.rankings().items()
                          for rank, pid in enumerate(r.passage_ids, start=1)],
                         columns=["query_id", "passage_id", "rank"])
    frame = labels.merge(ranks, on=["query_id", "passage_id"], how="left")
    evidence = reader.label_evidence()
    if not evidence.empty:
        frame = frame.merge(evidence, on=["method", "query_id", "passage_id"], how="left")
    else:
        frame["evidence"] = ""
    frame["rank"] = frame["rank"].astype("Int64")
    frame["evidence"] = frame["evidence"].fillna("")
    return frame.sort_values(["method", "query_id", "rank"]).reset_index(drop=True)[
        ["method", "query_id", "passage_id", "rank", "value", "evidence"]]


def export_run(run_path: Path, what: str, out: Path, *, fmt: str = "csv", method: str | None = None) -> Path:
    """Write ``what`` (labels, verdicts or failures) of the run at ``run_path`` to ``out`` as ``fmt`` (csv or
    qrels; qrels only for labels, and then ``method`` is required)."""
    if what not in EXPORTS:
        raise RagevalError(f"export: expected one of {', '.join(EXPORTS)}, got {what!r}")
    with RunReader(run_path) as reader:
        if method is not None and method not in reader.label_methods():
            raise RagevalError(f"{run_path}: no label method {method!r}; the run has "
                               f"{', '.join(reader.label_methods())}")
        if fmt == "qrels":
            if what != "labels" or method is None:
                raise RagevalError("export --format qrels: only labels, of one --method, can be written as qrels")
            frame = reader.labels(method).rename(columns={"value": "label"})[["query_id", "passage_id", "label"]]
            return write_trec_qrels(frame, out)
        if fmt != "csv":
            raise RagevalError(f"export --format: expected csv or qrels, got {fmt!r}")
        if what == "labels":
            frame = labels_frame(reader, method)
        elif what == "verdicts":
            frame = reader.verdicts().sort_values(["judge", "reference", "k", "query_id"])
        else:
            frame = reader.failure_cases().sort_values(["judge", "k", "category", "query_id"])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    return Path(out)
