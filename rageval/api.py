"""The Python API for notebooks: :func:`evaluate` builds a run, :func:`open` opens one, and a :class:`Run` gives its
tables as pandas DataFrames. ``import rageval`` makes the three names available as ``rageval.evaluate``,
``rageval.open`` and ``rageval.Run`` without importing this module until one of them is used (docs/api.md)::

    import rageval

    run = rageval.open("nq_open-bm25-gemma3_270m")          # a run file, or a run's name
    run.measures()          # method, measure, query_id, value: every per-query measure of every label method
    run.labels()            # method, query_id, passage_id, value
    run.correlations()      # Kendall's tau / Spearman's rho of each measure with the answer, with 95% intervals
    run.failure_cases()     # LLM-retEval's failure cases A-F with the question and the reason

    run = rageval.evaluate(queries=[...], corpus=[...], run={"q1": {"p1": 3.2}}, model="gemma-3-270m",
                           methods="erag,e2e,baselines")

:func:`evaluate` is ``rageval evaluate``: the same configuration (:class:`rageval.pipeline.config.EvaluateConfig`,
built from the same flat names) through the same pipeline (:func:`rageval.pipeline.run.evaluate`). Inputs given as
Python objects (lists of dicts, a qrels or run dict, a DataFrame) are written to a temporary folder in the formats
the pipeline reads (JSONL questions and passages, TREC run and qrels), so they are validated by the same readers and
a bad record is reported as ``queries= (in memory), row 3, field 'answers': ...``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import DataError, RagevalError

if TYPE_CHECKING:
    import pandas as pd

    from rageval.generation.factory import ModelSettings

#: What a value of ``queries=``, ``corpus=``, ``run=`` or ``qrels=`` may be besides a path, in words (errors).
_IN_MEMORY = {
    "queries": "a path, a list of dicts (query_id, text, answers, optional gold_passage_ids) or a DataFrame of "
               "those columns",
    "corpus": "a path, a list of dicts (passage_id, title, text) or a DataFrame of those columns",
    "run": "a path (TREC run or rageval's one-JSONL form), a dict {query_id: {passage_id: score}}, a DataFrame "
           "(query_id, passage_id, score) or a list of dicts in rageval's one-JSONL form",
    "qrels": "a path (TREC or BEIR qrels), a dict {query_id: {passage_id: relevance}} or a DataFrame (query_id, "
             "passage_id, relevance)",
}


class Run:
    """One run file, read when asked: each method opens the file, reads one table and closes it again, so a
    :class:`Run` holds no open file and always shows the file as it is now (a re-scoring job may add labels)."""

    def __init__(self, path: str | os.PathLike):
        from rageval.store import RunReader

        self.path = Path(path)
        with RunReader(self.path) as reader:  # refuses a missing, damaged or foreign file: a StoreError naming it
            self._settings = reader.settings()

    def __repr__(self) -> str:
        settings = self._settings
        return (f"rageval.Run({str(self.path)!r}: dataset {settings.get('dataset')}, retriever "
                f"{settings.get('retriever')}, model {settings.get('model_id')}, k={settings.get('k')})")

    @property
    def name(self) -> str:
        """The run's name: its file name without ``.sqlite`` (the dashboard's ``?run=``)."""
        return self.path.stem

    @property
    def settings(self) -> dict[str, Any]:
        """What produced the run: dataset, retriever, model_id, k, the stored config, timings, LLM-call counts."""
        return dict(self._settings)

    def _read(self, read):
        from rageval.store import RunReader

        with RunReader(self.path) as reader:
            return read(reader)

    @property
    def main_k(self) -> int | None:
        """The k the run is about (its ``k`` setting when it has answers there, else the largest k with answers);
        None for a run without end-to-end answers."""
        return self._read(lambda reader: reader.main_k())

    def queries(self) -> pd.DataFrame:
        """One row per query in run order: query_id, text, dataset, answers (a JSON list), and the end-to-end
        answer and its score at :attr:`main_k` (e2e_output, e2e_score; NaN without one)."""
        return self._read(lambda reader: reader.query_table())

    def measures(self) -> pd.DataFrame:
        """Every per-query measure value: columns method (the label method: ``erag:em``, ``gold``, ``qrels``,
        ``contains_answer``...), measure (ir_measures' names: ``P@5``, ``nDCG@10``, ``Rprec``), query_id, value;
        sorted by method, measure and query id."""
        table = self._read(lambda reader: reader.measure_table())
        return table.sort_values(["method", "measure", "query_id"], kind="stable").reset_index(drop=True)

    def labels(self, method: str | None = None) -> pd.DataFrame:
        """The relevance labels of every label method (or of ``method``): columns method, query_id, passage_id,
        value (0/1, or a grade); sorted by method, query id and passage id."""
        table = self._read(lambda reader: reader.labels(method))
        return table.sort_values(["method", "query_id", "passage_id"], kind="stable").reset_index(drop=True)

    def correlations(self, k: int | None = None) -> pd.DataFrame:
        """Kendall's tau-b and Spearman's rho across queries of each (label method, measure at k, and R-precision)
        with the end-to-end answer's score at k, with 95% percentile-bootstrap intervals over queries (eRAG's
        Table 1): columns k, method, measure, n (queries), tau, tau_low, tau_high, rho, rho_low, rho_high,
        n_resamples, confidence, and source: ``stored`` (computed by ``rageval evaluate`` and stored in the run)
        or ``computed`` (the run stores none, e.g. an upload: computed now by the same function,
        :func:`rageval.pipeline.evaluate.correlations_from_tables`). Every k with answers, or only ``k``. Empty
        when there is nothing to correlate, with the reason in ``frame.attrs["reason"]``."""
        import pandas as pd

        from rageval.store.schemas import CORRELATION_COLUMNS

        def read(reader) -> pd.DataFrame:
            stored = reader.correlations(k)
            if not stored.empty:
                return stored.assign(source="stored")
            e2e = reader.e2e_table()
            if e2e.empty:
                return _no_correlations("the run has no end-to-end answers")
            from rageval.pipeline.evaluate import correlations_from_tables

            scores = e2e[["query_id", "k", "score"]] if k is None else e2e.loc[e2e["k"] == k,
                                                                                 ["query_id", "k", "score"]]
            scores = scores[scores["score"].notna()]
            if scores.empty:
                return _no_correlations("no end-to-end answer has a score (the questions have no gold answers)"
                                        + ("" if k is None else f" at k={k}"))
            rows = [asdict(c) for c in correlations_from_tables(reader.measure_table(), scores)]
            return pd.DataFrame(rows, columns=list(CORRELATION_COLUMNS)).assign(source="computed")

        def _no_correlations(reason: str) -> pd.DataFrame:
            empty = pd.DataFrame(columns=[*CORRELATION_COLUMNS, "source"])
            empty.attrs["reason"] = reason
            return empty

        return self._read(read).reset_index(drop=True)

    def failure_cases(self, judge: str | None = None, k: int | None = None) -> pd.DataFrame:
        """LLM-retEval's failure cases (Alinejad et al. 2024; categories A-C: the retriever missed what the answer
        needs, D-F: the evaluation itself erred): columns judge, query_id, text (the question), k, category,
        reason; of every judge (or ``judge``) at every k (or ``k``), sorted by judge, k, category and the run
        order of the queries. Empty for a run without LLM-retEval."""
        import pandas as pd

        def read(reader) -> pd.DataFrame:
            judges = [judge] if judge is not None else reader.judges()
            frames = [reader.failure_case_table(j, k).assign(judge=j) for j in judges]
            frames = [f for f in frames if not f.empty]
            columns = ["judge", "query_id", "text", "k", "category", "reason"]
            if not frames:
                return pd.DataFrame(columns=columns)
            return pd.concat(frames, ignore_index=True)[columns]

        return self._read(read)


def open(run: str | os.PathLike) -> Run:  # the public name: rageval.open(path)
    """The run at ``run``: a run file's path, or a run's name (the file's stem) looked up in the user's runs folder
    (``$RAGEVAL_RUNS_DIR``) and then the shipped runs (``data/runs``). A name found nowhere, or a file that is not a
    rageval run, raises a :class:`~rageval.errors.RagevalError` that says so."""
    from rageval.html_report_data import find_run

    return Run(find_run(run))


def evaluate(*, queries: Any = None, corpus: Any = None, run: Any = None, qrels: Any = None,
             retriever: str | None = None, model: str | ModelSettings | Mapping[str, Any] | None = None,
             methods: str | Sequence[str] = "all", k: int | str | Sequence[int] | None = None,
             dataset: str | None = None, out: str | os.PathLike | None = None, log=None,
             **settings: Any) -> Run:
    """Evaluate a retrieval run end to end, as ``rageval evaluate`` does, and open the run file it writes.

    - ``queries``: the questions; ``corpus``: the passages (their texts); ``run``: the candidate lists, or
      ``retriever`` (``bm25``, ``dense``, ``hybrid``) to retrieve them from ``corpus``; ``qrels``: optional
      relevance judgments (their positives become the gold passages). Each is a path or a Python object: see
      :data:`_IN_MEMORY` (lists of dicts, a dict of dicts, a DataFrame).
    - ``model``: the RAG LLM, a model setting: ``"gemma-3-270m"`` (default), ``"smollm2-135m-instruct"``, a local
      Hugging Face model folder or a hub id already cached; with ``backend="openai", base_url="http://.../v1"``
      the name a server with the OpenAI API serves (vLLM, Ollama, ``rageval serve-model``). Also a
      :class:`~rageval.generation.factory.ModelSettings`, or a dict of its fields.
    - ``methods``: ``"all"`` or some of ``erag``, ``e2e``, ``baselines``, ``reteval`` (a comma string or a list);
      ``k``: the E2E cutoffs (default 1, 5, 10; the largest is the eRAG depth).
    - ``settings``: any other flat name of ``rageval evaluate``'s config (``metric``, ``label_metrics``,
      ``judges``, ``measures``, ``max_new_tokens``, ``cache``, ``backend``, ``base_url``, ``device``, ``dtype``,
      ``batch_size`` ...; :data:`rageval.pipeline.config.FIELD_NAMES`); a list is joined with commas.
    - ``out``: the run file; default ``<dataset>-<retriever or run>-<model>.sqlite`` in the user's runs folder
      (``$RAGEVAL_RUNS_DIR``). ``dataset``: the question set's name (default: the questions file's name, or
      ``notebook`` for questions given in memory). ``log``: a function of one message (default: stderr).

    Every LLM call goes through the LLM-call cache, so a second call with the same inputs costs no model time.
    Raises :class:`~rageval.errors.RagevalError` (a :class:`~rageval.errors.DataError` naming the argument, row
    and field of a bad record) before any model loads or any file is written."""
    from rageval.pipeline import run as pipeline
    from rageval.pipeline.config import FIELD_NAMES, MODEL_FIELDS, build_config

    unknown = sorted(set(settings) - set(FIELD_NAMES))
    if unknown:
        raise RagevalError(f"rageval.evaluate: unknown setting {unknown[0]!r}; known: {', '.join(FIELD_NAMES)}")
    flat: dict[str, Any] = {name: _flat_value(value) for name, value in settings.items()}
    flat.update(_model_fields(model, MODEL_FIELDS))
    flat.update(methods=_flat_value(methods), retriever=retriever, dataset=dataset)
    if k is not None:
        flat["k"] = _flat_value(k)
    if out is not None:
        flat["out"] = str(out)
    given = {"queries": queries, "corpus": corpus, "run": run, "qrels": qrels}
    with _input_files(given) as (paths, written):
        if dataset is None and "queries" in written:
            flat["dataset"] = "notebook"
        flat.update({name: str(path) for name, path in paths.items()})
        config = build_config({}, flat)
        described = {name: f"<{text}>" for name, text in _described(given, written).items()}
        described.update({name: repr(value) for name, value in flat.items()
                          if value is not None and name not in described})
        command = f"rageval.evaluate({', '.join(f'{name}={text}' for name, text in described.items())})"
        try:
            path = pipeline.evaluate(config, command=command, **({"log": log} if log is not None else {}))
        except DataError as error:
            raise _in_memory_error(error, written) from None
    return Run(path)


def _flat_value(value: Any) -> Any:
    """A setting as the config's flat names hold it: a list or tuple joined with commas (``k=[1, 5]`` ->
    ``"1,5"``), anything else as it is."""
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return value


def _model_fields(model: Any, names: Sequence[str]) -> dict[str, Any]:
    """The flat model fields of ``model`` (a name or path, a ModelSettings, or a dict of its fields)."""
    from rageval.generation.factory import ModelSettings

    if model is None:
        return {}
    if isinstance(model, ModelSettings):
        return {name: value for name, value in model.as_dict().items() if name in names}
    if isinstance(model, Mapping):
        unknown = sorted(set(model) - set(names))
        if unknown:
            raise RagevalError(f"rageval.evaluate: model: unknown field {unknown[0]!r}; known: {', '.join(names)}")
        return dict(model)
    if isinstance(model, str | os.PathLike):
        return {"model": str(model)}
    raise RagevalError(f"rageval.evaluate: model: expected a model name or folder, a ModelSettings or a dict of its "
                       f"fields, got {type(model).__name__}")


def _described(given: Mapping[str, Any], written: Mapping[str, Path]) -> dict[str, str]:
    """Each in-memory input, for the command stored in the run: its type and size (``list of 3 in memory``)."""
    out = {}
    for name in written:
        value = given[name]
        size = f" of {len(value)}" if hasattr(value, "__len__") else ""
        out[name] = f"{type(value).__name__}{size} in memory"
    return out


@contextmanager
def _input_files(given: Mapping[str, Any]) -> Iterator[tuple[dict[str, Path], dict[str, Path]]]:
    """(every input's path; the in-memory ones' temporary files): each input given as a path stays that path,
    each Python object is written into a temporary folder (removed afterwards) in the format the pipeline reads."""
    with tempfile.TemporaryDirectory(prefix="rageval-api-") as folder:
        paths: dict[str, Path] = {}
        written: dict[str, Path] = {}
        for name, value in given.items():
            if value is None:
                continue
            if isinstance(value, str | os.PathLike):
                paths[name] = Path(value).expanduser()
                continue
            path = _write_input(name, value, Path(folder))
            paths[name] = written[name] = path
        yield paths, written


def _write_input(name: str, value: Any, folder: Path) -> Path:
    """``value`` of argument ``name`` as a file in ``folder``: questions and passages as JSONL (one record a line,
    row i on line i + 1), a run dict or table as a TREC run, a list of one-JSONL records as JSONL, qrels as TREC
    qrels."""
    from rageval.trec import write_trec_qrels, write_trec_run

    if name in ("queries", "corpus") or (name == "run" and _is_records(value) and _has_passages(value)):
        records = _records(name, value)
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(_plain(r), ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        return path
    frame = _table(name, value)
    try:
        if name == "run":
            return write_trec_run(frame, folder / "in_memory.trec", tag="in_memory")
        return write_trec_qrels(frame, folder / "qrels.txt")
    except (ValueError, TypeError) as error:
        raise RagevalError(f"{name}= (in memory): {error}") from None


def _is_records(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(r, Mapping) for r in value)


def _has_passages(records: Sequence[Mapping]) -> bool:
    return bool(records) and "passages" in records[0]


def _records(name: str, value: Any) -> list[Mapping[str, Any]]:
    """The records of a list of dicts or a DataFrame (one per row)."""
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return value.to_dict("records")
    if _is_records(value):
        return list(value)
    raise RagevalError(f"{name}=: expected {_IN_MEMORY[name]}, got {type(value).__name__}")


def _plain(value: Any) -> Any:
    """A record's value as JSON writes it: numpy arrays and tuples as lists, numpy numbers as Python numbers,
    a missing value (NaN, None) of a DataFrame cell as absent from its record."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if not _missing(v)}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _table(name: str, value: Any) -> pd.DataFrame:
    """A run (query_id, passage_id, score) or qrels (query_id, passage_id, label) table from a nested dict
    ``{query_id: {passage_id: value}}`` (pytrec_eval's and ranx's form), a DataFrame or a list of row dicts."""
    import pandas as pd

    column = "score" if name == "run" else "label"
    if isinstance(value, Mapping):
        if not all(isinstance(inner, Mapping) for inner in value.values()):
            raise RagevalError(f"{name}=: expected {_IN_MEMORY[name]}; a dict must map each query id to a dict "
                               "{passage_id: value}")
        rows = [(str(q), str(p), v) for q, inner in value.items() for p, v in inner.items()]
        frame = pd.DataFrame(rows, columns=["query_id", "passage_id", column])
    elif isinstance(value, pd.DataFrame) or _is_records(value):
        frame = pd.DataFrame(value)
        if name == "qrels" and "label" not in frame.columns:
            frame = frame.rename(columns={"relevance": "label"})
        missing = [c for c in ("query_id", "passage_id", column) if c not in frame.columns]
        if missing:
            raise RagevalError(f"{name}=: lacks column(s) {', '.join(missing)}; expected {_IN_MEMORY[name]}")
    else:
        raise RagevalError(f"{name}=: expected {_IN_MEMORY[name]}, got {type(value).__name__}")
    try:
        values = pd.to_numeric(frame[column])
    except (ValueError, TypeError):
        raise RagevalError(f"{name}= (in memory): column {column}: expected numbers") from None
    return frame.assign(**{column: values})


def _in_memory_error(error: DataError, written: Mapping[str, Path]) -> DataError:
    """``error`` about a temporary file of an in-memory input, said about the argument instead: ``queries= (in
    memory), row 1, field 'answers': ...`` (row i of a list or DataFrame was written on line i + 1 of its JSONL
    file; a TREC file's lines are sorted, so there the message's ids say where). Other errors as they are."""
    import re

    name = next((n for n, path in written.items() if str(path) == error.path), None)
    if name is None:
        return error
    text = str(error)
    if text.startswith(f"{error.path}: {error.path}"):  # a reader's message that names the file again
        text = text[len(error.path) + 2:]
    jsonl = written[name].suffix == ".jsonl"

    def said(match: re.Match) -> str:
        line = match.group(1)
        return f"{name}= (in memory)" + (f", row {int(line) - 1}" if line and jsonl else "")

    text = re.sub(re.escape(error.path) + r"(?:, line (\d+))?", said, text)
    where, _, message = text.partition(": ")
    return DataError(where, message)


__all__ = ["Run", "evaluate", "open"]
