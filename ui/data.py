"""The dashboard's data layer: the only module that caches (``st.cache_resource`` / ``st.cache_data``).

Runs come from two folders (:func:`find_all_runs`): the user's runs folder (:func:`runs_dir`,
``rageval.paths.user_runs_dir()``: ``$RAGEVAL_RUNS_DIR``, else ``~/.local/share/rageval/runs``), where uploads, jobs
and ``rageval evaluate`` write, and the shipped demo runs (``data/runs``), listed after them and read-only. A file
that cannot even be listed is reported, never fatal to the list.

Pages identify a run by ``(path, mtime_ns)`` (see :func:`run_key`): a run file rewritten in place gets a new
key, so no page ever shows stale tables. A file that turns out to be damaged while a page reads it (every reader
raises :class:`~rageval.errors.StoreError` naming the file) stops that page with the error in a box
(:func:`unreadable`); code that reads many runs for one page does so :func:`isolated`, so one bad file never hides
the others. Open readers are shared resources (one SQLite connection per run
file, guarded by a lock because Streamlit serves sessions from several threads); tables are cached copies.
Nothing here creates widgets.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from rageval import paths
from rageval.correlations import (
    SWEEP_COLUMNS,
    best_measures,
    current_stored_taus,
    in_table_at_k,
    k_sweep,
    kendall_taus,
    measure_sort_key,
    stored_table_is_current,
)
from rageval.errors import StoreError
from rageval.stats.correlation import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from rageval.store import (
    APPLICATION_ID,
    ATTRIBUTION,
    ATTRIBUTION_APPLICATION_ID,
    IUM_APPLICATION_ID,
    RUN,
    E2EOutput,
    RunReader,
    SqliteKind,
    sqlite_application_id,
)
from rageval.store.attribution import AttributionReader
from rageval.store.files import describe_missing, reading
from rageval.store.runs import RANKING_COLUMNS
from rageval.types import Query
from ui.stop import stop_with_error

RUNS_DIR_ENV = "RAGEVAL_RUNS_DIR"
#: Sub-folders of :func:`runs_dir` holding the other kinds of run file (``rageval attribution``, ``rageval ium``).
ATTRIBUTION_SUBDIR = "attribution"
IUM_SUBDIR = "ium"
_TTL_S = 3600

T = TypeVar("T")


def runs_dir() -> Path:
    """The user's runs folder (:func:`rageval.paths.user_runs_dir`: ``$RAGEVAL_RUNS_DIR``, else
    ``~/.local/share/rageval/runs``): where uploads, jobs and annotations write."""
    return paths.user_runs_dir()


def shipped_runs_dir() -> Path | None:
    """The shipped demo runs (``data/runs``; :func:`rageval.paths.shipped_runs_dir`), listed read-only."""
    return paths.shipped_runs_dir()


def is_shipped(path: Path) -> bool:
    """Whether ``path`` is a shipped, read-only run (no upload or job writes there)."""
    return paths.is_shipped(path)


def list_run_files(folder: Path | None) -> tuple[list[Path], list[str]]:
    """The eRAG run files (``*.sqlite``) of ``folder``, newest first, then those of its sub-folders (newest
    first), as :func:`rageval.store.list_runs`; but each file is looked at on its own, so one that cannot be read
    (a directory, a dangling link, no permission) is returned as ``"path: reason"`` instead of breaking the list.
    A file that is not SQLite at all (empty, gzip, truncated header) stays listed: the page that opens it says what
    is wrong with it; a SQLite file of another kind is left out, as :func:`rageval.store.list_runs` does."""
    if folder is None or not folder.is_dir():
        return [], []
    found: list[tuple[int, float, Path]] = []
    problems: list[str] = []
    try:
        candidates = [(0, p) for p in folder.glob("*.sqlite")] + [
            (1, p) for p in folder.glob("*/**/*.sqlite") if not any(part.startswith(".")
                                                                     for part in p.relative_to(folder).parts)]
    except OSError as error:
        return [], [f"{folder}: cannot be listed ({error})"]
    for depth, path in candidates:
        try:
            if not path.is_file():
                describe_missing(path, RUN)  # raises, saying what it is: a folder, a dangling link, a pipe
        except StoreError as error:
            problems.append(str(error))
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError as error:
            problems.append(f"{path}: cannot be read ({error.strerror or error})")
            continue
        application_id = sqlite_application_id(path)
        if application_id is not None and application_id != APPLICATION_ID:
            continue  # a SQLite file of another kind (attribution, IUM, annotations, or not ours): not a run

        found.append((depth, -mtime, path))
    return [path for _, _, path in sorted(found, key=lambda x: (x[0], x[1], str(x[2])))], problems


@dataclass(frozen=True)
class RunListing:
    """Every run the dashboard shows: ``runs`` maps the ``?run=`` name (the file stem) to the file, the user's
    runs first (newest first), then the shipped ones; ``shipped`` names the read-only ones; ``problems`` lists
    files that could not be looked at (``"path: reason"``); ``shadowed`` the shipped runs hidden by a user run
    of the same name."""

    runs: dict[str, Path]
    shipped: frozenset[str]
    problems: tuple[str, ...]
    shadowed: tuple[Path, ...] = ()


def find_all_runs() -> RunListing:
    """The user's runs and the shipped runs (not cached: a new run should appear on the next rerun)."""
    user, user_problems = list_run_files(runs_dir())
    shipped_folder = shipped_runs_dir()
    if shipped_folder is not None and shipped_folder.resolve() == runs_dir().resolve():
        shipped_folder = None  # $RAGEVAL_RUNS_DIR pointed at data/runs: list it once
    shipped, shipped_problems = list_run_files(shipped_folder)
    runs: dict[str, Path] = {}
    for path in user:
        runs.setdefault(path.stem, path)
    shadowed = tuple(path for path in shipped if path.stem in runs)
    shipped_names = frozenset(path.stem for path in shipped if path.stem not in runs)
    for path in shipped:
        runs.setdefault(path.stem, path)
    return RunListing(runs, shipped_names, tuple(user_problems + shipped_problems), shadowed)


def find_runs(folder: Path | None = None) -> list[Path]:
    """Run files in ``folder``, newest first; with no folder, every run :func:`find_all_runs` lists."""
    if folder is None:
        return list(find_all_runs().runs.values())
    return list_run_files(folder)[0]


def run_id(path: Path) -> str:
    """A run file's absolute path, links not resolved: the name every message about the file uses is the one the
    user sees in the runs folder."""
    return os.path.abspath(path)


def run_key(path: Path) -> tuple[str, int]:
    """The cache key of a run file: its absolute path (:func:`run_id`) and modification time in nanoseconds."""
    return run_id(path), path.stat().st_mtime_ns


@dataclass(frozen=True)
class _OpenRun:
    reader: Any  # RunReader or AttributionReader
    lock: threading.Lock


_READERS = {"erag": RunReader, "attribution": AttributionReader}


@st.cache_resource(max_entries=12, show_spinner=False, on_release=lambda run: run.reader.close())
def _open_run(path: str, mtime_ns: int, kind: str = "erag") -> _OpenRun:
    """One open reader per (file, version, kind), shared by all sessions; the lock serialises its connection."""
    return _OpenRun(_READERS[kind](path), threading.Lock())


_ISOLATION = threading.local()


@contextmanager
def isolated() -> Iterator[None]:
    """Within, a damaged file raises its :class:`StoreError` to the caller instead of stopping the page: for code
    that reads many runs (the cross-run pages), so it can name the bad ones and show every other."""
    _ISOLATION.depth = getattr(_ISOLATION, "depth", 0) + 1
    try:
        yield
    finally:
        _ISOLATION.depth -= 1


def unreadable(error: StoreError) -> NoReturn:
    """A file the page needs is damaged: the error (file and reason) in a box, and the page stops there; within
    :func:`isolated`, the error is raised instead."""
    if getattr(_ISOLATION, "depth", 0):
        raise error
    stop_with_error(error)


@contextmanager
def checked(path: str | Path, kind: SqliteKind = RUN) -> Iterator[None]:
    """Reading (or computing on what was read from) the ``kind`` file ``path``: a failure of a damaged file is
    :func:`unreadable`."""
    try:
        with reading(path, kind):
            yield
    except StoreError as error:
        unreadable(error)


def _read(path: str, mtime_ns: int, read: Callable[[Any], T], kind: str = "erag") -> T:
    with checked(path, ATTRIBUTION if kind == "attribution" else RUN):
        run = _open_run(path, mtime_ns, kind)
        with run.lock:
            return read(run.reader)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_settings(path: str, mtime_ns: int) -> dict[str, Any]:
    return _read(path, mtime_ns, RunReader.settings)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_unparsed_counts(path: str, mtime_ns: int) -> list[tuple[str, str, int, int]]:
    """Per LLM judge with an answer it could not read: (judge, model, unparsed, answers)
    (:meth:`rageval.store.RunReader.unparsed_counts`)."""
    return _read(path, mtime_ns, RunReader.unparsed_counts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_counted_as_no(path: str, mtime_ns: int) -> list[tuple[str, str, int, int]]:
    """Per LLM judge, the unread answers an older rageval stored as No: (judge, model, count, answers)
    (:meth:`rageval.store.RunReader.counted_as_no`)."""
    return _read(path, mtime_ns, RunReader.counted_as_no)


def load_read_note(path: str, mtime_ns: int) -> str | None:
    """Why the run file may not read as its writer left it (an interrupted write read around), else None."""
    return _read(path, mtime_ns, lambda reader: reader.note)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_counts(path: str, mtime_ns: int) -> dict[str, int]:
    return _read(path, mtime_ns, RunReader.counts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_query_table(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.query_table)


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_has_rows(path: str, mtime_ns: int, table: str) -> bool:
    """Whether the run's ``table`` holds a row (:meth:`rageval.store.RunReader.has_rows`)."""
    return _read(path, mtime_ns, lambda reader: reader.has_rows(table))


def has_correlation_data(key: tuple[str, int]) -> bool:
    """A run the Correlations page can show: it stores end-to-end answers and per-query measure values."""
    return load_has_rows(*key, "e2e_outputs") and load_has_rows(*key, "measure_values")


def has_reteval_data(key: tuple[str, int]) -> bool:
    """A run the LLM-retEval page can show: it stores LLM-retEval verdicts."""
    return load_has_rows(*key, "verdicts")


@st.cache_data(ttl=_TTL_S, max_entries=256, show_spinner=False)
def load_query_ids(path: str, mtime_ns: int) -> frozenset[str]:
    """The run's query ids (a set: which queries two runs share)."""
    return frozenset(_read(path, mtime_ns, RunReader.query_ids))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_query_order(path: str, mtime_ns: int) -> tuple[str, ...]:
    """The run's query ids in run order: what a worklist token (:mod:`ui.worklist`) is read against."""
    return tuple(_read(path, mtime_ns, RunReader.query_ids))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_questions(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every query's id and question in run order (columns query_id, text; :meth:`RunReader.questions`)."""
    return _read(path, mtime_ns, RunReader.questions)


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_question_texts(path: str, mtime_ns: int, query_ids: tuple[str, ...]) -> dict[str, str]:
    """The questions of ``query_ids`` only, by query id (:meth:`RunReader.question_texts`): what a page shows of
    a big run (its table's rows, the points it draws), instead of every question (:func:`load_questions`)."""
    return _read(path, mtime_ns, lambda reader: reader.question_texts(query_ids))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_measure_moments(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.measure_moments)


def load_measure_summary(path: str, mtime_ns: int) -> pd.DataFrame:
    return compute_measure_summary(load_measure_moments(path, mtime_ns))


def load_measure_intervals(path: str, mtime_ns: int) -> pd.DataFrame:
    """Mean of every (label method, measure) over queries with its 95% interval
    (:func:`rageval.stats.intervals.intervals_from_moments`): Student-t, or Wilson for a measure whose per-query
    values are all 0 or 1 (a share, e.g. Hit@k); columns method, measure, mean, low, high, n."""
    from rageval.stats.intervals import intervals_from_moments

    return intervals_from_moments(load_measure_moments(path, mtime_ns), binary_as_share=True)[
        ["method", "measure", "mean", "low", "high", "n"]]


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query(path: str, mtime_ns: int, query_id: str) -> Query:
    return _read(path, mtime_ns, lambda reader: reader.query(query_id))


#: Passage text is shown in parts of this many UTF-8 bytes (about as many characters; read with
#: :func:`rageval.store.text.text_window`): a huge passage is never loaded, cached or sent to the browser whole.
PASSAGE_PAGE_SIZE = 5_000
#: What a ranked passage the run's ``passages`` table lacks shows instead of its text.
MISSING_PASSAGE_TEXT = "(passage text missing from the run file)"


@dataclass(frozen=True)
class RankedPassages:
    """One query's ranked passages as the pages show them (:func:`clean_ranking`), and what was odd in the file:
    ``missing`` ranked passages without a row in ``passages`` (shown with :data:`MISSING_PASSAGE_TEXT`),
    ``duplicates`` ranking rows dropped (a rank, or a passage, stored twice: the first is kept), ``negative``
    label method -> its negative labels among these passages (shown as stored)."""

    table: pd.DataFrame
    missing: int = 0
    duplicates: int = 0
    negative: dict[str, int] = dataclasses.field(default_factory=dict)


def clean_ranking(table: pd.DataFrame) -> RankedPassages:
    """A ranking table (:meth:`RunReader.ranking_table`, ordered by rank then stored order) with each rank and
    each passage once (the first row kept) and missing passages given an empty title and
    :data:`MISSING_PASSAGE_TEXT`, with the counts of what was dropped, missing or negative."""
    unique = table.drop_duplicates("rank").drop_duplicates("passage_id")
    duplicates = len(table) - len(unique)
    missing = unique["text"].isna()
    unique = unique.assign(title=unique["title"].where(~missing, ""), text=unique["text"].where(~missing,
                                                                                               MISSING_PASSAGE_TEXT))
    negative = {}
    for method in (c for c in unique.columns if c not in RANKING_COLUMNS):
        count = int((pd.to_numeric(unique[method], errors="coerce") < 0).sum())
        if count:
            negative[method] = count
    return RankedPassages(unique.reset_index(drop=True), int(missing.sum()), duplicates, negative)


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_ranking(path: str, mtime_ns: int, query_id: str) -> RankedPassages:
    """The query's ranked passages (:func:`clean_ranking`), each text cut to its first part
    (:data:`PASSAGE_PAGE_SIZE`; ``text_size`` holds the whole size, :func:`load_passage_page` reads the rest)."""
    return clean_ranking(_read(path, mtime_ns, lambda reader: reader.ranking_table(query_id, PASSAGE_PAGE_SIZE)))


def load_ranking_table(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    return load_ranking(path, mtime_ns, query_id).table


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_passage_page(path: str, mtime_ns: int, passage_id: str, page: int) -> str:
    """Part ``page`` (0 first) of a passage's text: its bytes ``[page * N, (page + 1) * N)``, N =
    :data:`PASSAGE_PAGE_SIZE` (:func:`rageval.store.text.text_window`); empty when the run lacks the passage."""
    window = _read(path, mtime_ns, lambda reader: reader.passage_text(
        passage_id, page * PASSAGE_PAGE_SIZE, PASSAGE_PAGE_SIZE))
    return window[0] if window else ""


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_nonfinite_measure_counts(path: str, mtime_ns: int) -> dict[str, int]:
    """Label method -> its per-query measure values that are missing or not finite numbers (left out of every
    mean and statistic; :meth:`RunReader.nonfinite_measure_counts`)."""
    return _read(path, mtime_ns, RunReader.nonfinite_measure_counts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_negative_label_counts(path: str, mtime_ns: int) -> dict[str, int]:
    """Label method -> its negative labels in the whole run (:meth:`RunReader.negative_label_counts`)."""
    return _read(path, mtime_ns, RunReader.negative_label_counts)


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_e2e_output(path: str, mtime_ns: int, query_id: str) -> E2EOutput | None:
    return _read(path, mtime_ns, lambda reader: reader.e2e_output(query_id))


def compute_measure_summary(moments: pd.DataFrame) -> pd.DataFrame:
    """Mean of each (label method, measure) over queries, from :meth:`RunReader.measure_moments`: one row per
    method, one column per measure (in the order P, R, AP, RR, nDCG, Hit, Rprec, then any other), plus ``n``,
    the number of queries (every measure of a method has one value per query)."""
    if moments.empty:
        return pd.DataFrame(columns=["n"])
    means = moments.pivot(index="method", columns="measure", values="mean")
    means = means[sorted(means.columns, key=measure_sort_key)]
    means.columns.name = None
    means["n"] = moments.groupby("method")["n"].max()
    return means


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Bootstrapping correlations…")
def load_correlation_table(path: str, mtime_ns: int, cutoff: int,
                           n_resamples: int = DEFAULT_RESAMPLES) -> pd.DataFrame:
    """Kendall's tau-b and Spearman's rho (bootstrap CIs) of every label method's measures at ``cutoff``
    (and R-precision) against the per-query E2E score at the same k, computed now: eRAG's Table 1 on this run.
    Reads only those measures' values (:func:`load_measure_values`), not the whole measure table."""
    from rageval.correlations import correlation_table_at_k

    measures = load_measures_at(path, mtime_ns, cutoff)
    e2e = load_e2e_scores(path, mtime_ns, cutoff).table.assign(k=cutoff)
    with checked(path):
        return correlation_table_at_k(measures, e2e, cutoff, n_resamples, with_rprec=True).drop(columns="family")


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_measure_names(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every (label method, measure) the run has per-query values of: columns method, measure, by method then in
    measure order (:meth:`RunReader.measure_names`, without reading the values)."""
    names = _read(path, mtime_ns, RunReader.measure_names)
    order = sorted(range(len(names)), key=lambda i: (names["method"].iat[i], measure_sort_key(names["measure"].iat[i])))
    return names.iloc[order].reset_index(drop=True)


@st.cache_data(ttl=_TTL_S, max_entries=128, show_spinner=False)
def load_measure_values_stored(path: str, mtime_ns: int, method: str, measure: str) -> pd.DataFrame:
    """One measure's per-query values as stored (missing or non-finite ones too): columns query_id, value. Reads
    that measure's rows only (:meth:`RunReader.measure_values`)."""
    return _read(path, mtime_ns, lambda reader: reader.measure_values(method, measure))


@st.cache_data(ttl=_TTL_S, max_entries=128, show_spinner=False)
def load_measure_values(path: str, mtime_ns: int, method: str, measure: str) -> pd.DataFrame:
    """One measure's finite per-query values (:func:`keep_finite`): columns method, measure, query_id, value."""
    stored = load_measure_values_stored(path, mtime_ns, method, measure)
    values = pd.to_numeric(stored["value"], errors="coerce").astype(float).to_numpy()
    finite = np.isfinite(values)
    return pd.DataFrame({"method": method, "measure": measure, "query_id": stored["query_id"].to_numpy()[finite],
                         "value": values[finite]}, columns=["method", "measure", "query_id", "value"])


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_measures_of(path: str, mtime_ns: int, pairs: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    """The finite per-query values of the (method, measure) ``pairs``, read at once (:meth:`RunReader.measures_of`):
    columns method, measure, query_id, value."""
    return keep_finite(_read(path, mtime_ns, lambda reader: reader.measures_of(list(pairs))), "value",
                       ["method", "measure"]).table


def load_measures_at(path: str, mtime_ns: int, cutoff: int) -> pd.DataFrame:
    """The finite per-query values of every measure at ``cutoff`` and R-precision, all methods: columns method,
    measure, query_id, value."""
    names = load_measure_names(path, mtime_ns)
    pairs = zip(names["method"], names["measure"])
    return load_measures_of(path, mtime_ns, tuple((m, x) for m, x in pairs if in_table_at_k(x, cutoff)))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_e2e_scores(path: str, mtime_ns: int, k: int) -> FiniteValues:
    """The finite E2E scores at ``k`` (columns query_id, score), the others counted (``dropped``: k, n)."""
    stored = _read(path, mtime_ns, lambda reader: reader.e2e_scores(k))
    if stored.empty:
        return FiniteValues(stored, pd.DataFrame({"k": pd.Series(dtype=int), "n": pd.Series(dtype=int)}))
    finite = keep_finite(stored.assign(k=k), "score", ["k"])
    return FiniteValues(finite.table.drop(columns="k"), finite.dropped)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_measure_counts(path: str, mtime_ns: int, cutoff: int) -> pd.DataFrame:
    """Per (label method, measure at ``cutoff`` or R-precision): values ``stored``, ``finite`` and ``scored``
    (finite, with a finite E2E score at ``cutoff``), and ``dropped`` (stored - finite), aggregated by SQLite
    (:meth:`RunReader.measure_counts`)."""
    names = load_measure_names(path, mtime_ns)
    pairs = [(m, x) for m, x in zip(names["method"], names["measure"]) if in_table_at_k(x, cutoff)]
    return _measure_counts(path, mtime_ns, pairs, cutoff)


def _measure_counts(path: str, mtime_ns: int, pairs: list[tuple[str, str]], k: int) -> pd.DataFrame:
    everyone = load_every_query_scored(path, mtime_ns, k)
    counts = _read(path, mtime_ns, lambda reader: reader.measure_counts(pairs, k, everyone))
    return counts.assign(dropped=counts["stored"] - counts["finite"])


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_every_query_scored(path: str, mtime_ns: int, k: int) -> bool:
    """Whether every query of the run has a finite E2E score at ``k`` (:meth:`RunReader.every_query_scored`)."""
    return _read(path, mtime_ns, lambda reader: reader.every_query_scored(k))


def load_dropped_measures(path: str, mtime_ns: int, cutoff: int) -> pd.DataFrame:
    """The values of measures at ``cutoff`` (and R-precision) that are missing or not finite, per (method,
    measure) with any: columns method, measure, n (like ``load_finite_measures(...).dropped``)."""
    counts = load_measure_counts(path, mtime_ns, cutoff)
    dropped = counts[counts["dropped"] > 0]
    return pd.DataFrame({"method": dropped["method"], "measure": dropped["measure"], "n": dropped["dropped"]}
                        ).reset_index(drop=True)


@dataclass(frozen=True)
class Correlations:
    """The correlation table the Correlations page shows at one k, and where it came from: ``stored`` when
    ``rageval evaluate`` wrote it into the run, else computed now. ``table``: method, measure, n, tau, tau_low,
    tau_high, rho, rho_low, rho_high."""

    table: pd.DataFrame
    stored: bool
    n_resamples: int
    confidence: float


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_correlations(path: str, mtime_ns: int, cutoff: int) -> Correlations:
    """The run's stored correlations at ``cutoff`` (:meth:`RunReader.correlations`) when they still describe the
    run (:func:`rageval.correlations.stored_table_is_current`), else :func:`load_correlation_table`, computed now."""
    stored = _read(path, mtime_ns, lambda reader: reader.correlations(cutoff))
    if stored_table_is_current(stored, _current_counts(path, mtime_ns, cutoff)):
        return Correlations(stored.drop(columns=["k", "n_resamples", "confidence"]).reset_index(drop=True), True,
                            int(stored["n_resamples"].iloc[0]), float(stored["confidence"].iloc[0]))
    return Correlations(load_correlation_table(path, mtime_ns, cutoff), False, DEFAULT_RESAMPLES, DEFAULT_CONFIDENCE)


def _current_counts(path: str, mtime_ns: int, cutoff: int) -> dict[tuple[str, str], int]:
    """Queries per (label method, measure at ``cutoff`` or R-precision) with an E2E score at ``cutoff``: the
    ``n`` of each row a correlation table of the run as it is now would have (counted by SQLite)."""
    counts = load_measure_counts(path, mtime_ns, cutoff)
    return {(m, x): int(n) for m, x, n in zip(counts["method"], counts["measure"], counts["scored"])}


# --- the k sweep ---------------------------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_e2e_ks(path: str, mtime_ns: int) -> list[int]:
    return _read(path, mtime_ns, RunReader.e2e_ks)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_main_k(path: str, mtime_ns: int) -> int | None:
    return _read(path, mtime_ns, RunReader.main_k)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Computing the k sweep…")
def load_k_sweep(path: str, mtime_ns: int) -> pd.DataFrame:
    """eRAG's Figure 1 on the run (:func:`rageval.correlations.k_sweep`: method, family, measure, k, tau, n): each
    label method's best measure family at the run's main k, taken from the correlation table there
    (:func:`load_correlations`), then that family's tau against the E2E score at every k: the stored
    correlation's tau where it still holds (:func:`rageval.correlations.current_stored_taus`), else computed from
    those measures' values only."""
    main_k = load_main_k(path, mtime_ns)
    if main_k is None:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    best = best_measures(load_correlations(path, mtime_ns, main_k).table, main_k)
    names = load_measure_names(path, mtime_ns)

    def taus_at(k: int, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, int]]:
        stored = _read(path, mtime_ns, lambda reader: reader.correlations(k))
        counts = _measure_counts(path, mtime_ns, pairs, k)
        taus = current_stored_taus(stored, dict(zip(zip(counts["method"], counts["measure"]), counts["scored"])))
        uncovered = tuple(p for p in pairs if p not in taus)
        if uncovered:  # the E2E scores at k only then (100,000 rows a k for nothing otherwise)
            downstream = load_e2e_scores(path, mtime_ns, k).table.set_index("query_id")["score"]
            computed = kendall_taus(load_measures_of(path, mtime_ns, uncovered), downstream)
            taus.update(dict.fromkeys(uncovered, (math.nan, 0)))  # a pair without a shared query: undefined
            taus.update({(m, x): (tau, n) for m, x, tau, n in zip(computed["method"], computed["measure"],
                                                                   computed["tau"], computed["n"])})
        return taus

    with checked(path):
        return k_sweep(best, load_e2e_ks(path, mtime_ns), set(zip(names["method"], names["measure"])), taus_at)


# --- one query's outputs and evidence -------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_stored_e2e_table(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every E2E output as stored (scores may be missing or non-finite in a file another tool wrote)."""
    return _read(path, mtime_ns, RunReader.e2e_table)


@dataclass(frozen=True)
class FiniteValues:
    """A table of per-query values with the rows whose value is missing (NULL) or not a finite number dropped
    (:func:`keep_finite`); ``dropped`` counts them per key (columns: the key columns, then ``n``)."""

    table: pd.DataFrame
    dropped: pd.DataFrame


def keep_finite(table: pd.DataFrame, value: str, keys: list[str]) -> FiniteValues:
    """``table`` without the rows whose ``value`` is NULL, NaN, infinite or not a number (as float), and how many
    were dropped per ``keys``: statistics (bootstrap, permutation tests) are only defined on finite numbers."""
    values = pd.to_numeric(table[value], errors="coerce").astype(float)
    finite = np.isfinite(values.to_numpy())
    kept = table[finite].assign(**{value: values[finite]}).reset_index(drop=True)
    dropped = table[~finite].groupby(keys).size().rename("n").reset_index()
    return FiniteValues(kept, dropped.astype({"n": int}))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_finite_e2e(path: str, mtime_ns: int) -> FiniteValues:
    """The E2E outputs with a finite score (:func:`keep_finite`), the others counted per k."""
    return keep_finite(load_stored_e2e_table(path, mtime_ns), "score", ["k"])


def load_e2e_table(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every E2E output with a finite score: columns query_id, k, output, score (what statistics use)."""
    return load_finite_e2e(path, mtime_ns).table


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query_e2e_outputs(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's E2E outputs at every k (as stored, a missing score too): columns k, output, score (EM),
    ascending k; read alone (:meth:`RunReader.query_e2e_outputs`), not from the whole table."""
    return _read(path, mtime_ns, lambda reader: reader.query_e2e_outputs(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_label_evidence(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's label evidence (e.g. the LLM's replies to the relevance prompt): method, passage_id, evidence."""
    return _read(path, mtime_ns, lambda reader: reader.label_evidence(query_id)).drop(columns="query_id")


def load_rescored_answers(path: str, mtime_ns: int, query_id: str) -> dict[str, dict[str, str]]:
    """The answers re-score jobs' models gave from each of the query's passages alone (stored as the label
    evidence of their ``erag:<metric>@<model>`` methods, :func:`rageval.jobs.labelling.answer_from_evidence`):
    method -> passage id -> answer."""
    from rageval.jobs.labelling import answer_from_evidence

    answers: dict[str, dict[str, str]] = {}
    evidence = load_label_evidence(path, mtime_ns, query_id)
    for method, passage_id, text in zip(evidence["method"], evidence["passage_id"], evidence["evidence"]):
        answer = answer_from_evidence(text) if method.startswith("erag:") and "@" in method else None
        if answer is not None:
            answers.setdefault(method, {})[passage_id] = answer
    return answers


# --- reading many runs, each on its own (the LLM-retEval and Failure cases loaders: ui/data_failures.py) --------

def readable_runs(run_keys: tuple[tuple[str, int], ...], read: Callable[[str, int], Any] = load_settings
                  ) -> tuple[dict[str, Any], dict[str, str]]:
    """(path -> ``read(path, mtime_ns)`` for each run of ``run_keys`` that can be read, path -> ``"file: reason"``
    for each that cannot): every run is read on its own (:func:`isolated`), so one bad file never hides the
    others. By default ``read`` is :func:`load_settings`: the file opens (kind, version, pages, tables checked) and
    its settings parse."""
    found: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for path, mtime_ns in run_keys:
        try:
            with isolated():
                found[path] = read(path, mtime_ns)
        except (StoreError, OSError) as error:
            problems[path] = str(error) if str(path) in str(error) else f"{path}: {error}"
    return found, problems


def safe_run_keys(runs: list[Path]) -> tuple[tuple[str, int], ...]:
    """:func:`run_key` of each run that still exists (a file deleted between listing and reading is skipped)."""
    keys = []
    for path in runs:
        try:
            keys.append(run_key(path))
        except OSError:
            continue
    return tuple(keys)


# --- other kinds of run file: where they are (loaders: ui/data_attribution.py, ui/data_ium.py) ----------------

def _runs_of_kind(folder: Path | None, application_id: int) -> list[Path]:
    """The ``*.sqlite`` files of one kind (their SQLite ``application_id``) in ``folder``, newest first; a file
    that cannot be looked at is skipped."""
    if folder is None or not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.sqlite"):
        try:
            if path.is_file() and sqlite_application_id(path) == application_id:
                found.append((path.stat().st_mtime, path))
        except OSError:
            continue
    return [path for _, path in sorted(found, key=lambda x: x[0], reverse=True)]


def _kind_folders(subdir: str) -> list[Path | None]:
    """Where runs of another kind live: the user's runs folder and its ``subdir``, then the shipped ``subdir``."""
    shipped = shipped_runs_dir()
    return [runs_dir(), runs_dir() / subdir, shipped / subdir if shipped is not None else None]


def _runs_of_kind_everywhere(subdir: str, application_id: int) -> list[Path]:
    found: list[Path] = []
    for folder in _kind_folders(subdir):
        found += [p for p in _runs_of_kind(folder, application_id) if p not in found]
    return found


def attribution_runs_dir() -> Path:
    return runs_dir() / ATTRIBUTION_SUBDIR


def find_attribution_runs() -> list[Path]:
    """Attributed-answer run files (kind "RAGA") in the user's runs folder, its ``attribution/`` and the shipped
    ``attribution/``, each newest first (not cached)."""
    return _runs_of_kind_everywhere(ATTRIBUTION_SUBDIR, ATTRIBUTION_APPLICATION_ID)


def ium_runs_dir() -> Path:
    return runs_dir() / IUM_SUBDIR


def find_ium_runs() -> list[Path]:
    """IUM run files (kind "RAGI") in the user's runs folder, its ``ium/`` and the shipped ``ium/``, each newest
    first (not cached)."""
    return _runs_of_kind_everywhere(IUM_SUBDIR, IUM_APPLICATION_ID)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_finite_measures(path: str, mtime_ns: int) -> FiniteValues:
    """The per-query measure values that are finite numbers (:func:`keep_finite`), the others counted per
    (method, measure)."""
    return keep_finite(_read(path, mtime_ns, RunReader.measure_table), "value", ["method", "measure"])


def load_measure_table(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every per-query measure value of the run that is a finite number: method, measure, query_id, value."""
    return load_finite_measures(path, mtime_ns).table


def dropped_count(dropped: pd.DataFrame, **key: Any) -> int:
    """How many values :func:`keep_finite` dropped for one key (``method=..., measure=...`` or ``k=...``)."""
    rows = dropped
    for column, value in key.items():
        rows = rows[rows[column] == value]
    return int(rows["n"].sum())


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_labels(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every label of the run (all methods): method, query_id, passage_id, value."""
    return _read(path, mtime_ns, RunReader.labels)


@st.cache_data(ttl=_TTL_S, max_entries=16, show_spinner=False)
def load_stage_analysis(path: str, mtime_ns: int) -> dict[str, Any] | None:
    """The stage analysis of a run imported from traces with two stages (:func:`rageval.traces.stages.analyse_run`):
    ``method`` (the helpful label method, None when the run has none), ``fates`` (query_id, passage_id, fate,
    first_rank, final_rank, k) and ``table`` (:func:`rageval.traces.stages.stage_table`); None for a run that keeps
    fewer than two stages."""
    from dataclasses import asdict

    from rageval.traces.stages import PassageFate, analyse_run

    def read(reader: RunReader) -> dict[str, Any] | None:
        if len(reader.trace_stages()) < 2:
            return None
        analysis = analyse_run(reader)
        columns = list(PassageFate.__dataclass_fields__)
        return {"method": analysis.method, "table": analysis.table,
                "fates": pd.DataFrame([asdict(f) for f in analysis.fates], columns=columns)}

    return _read(path, mtime_ns, read)
