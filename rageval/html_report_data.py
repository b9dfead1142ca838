"""What ``rageval report RUN --html`` shows, computed from the run file (:func:`compute_report`): the gold-answer
2 x 2, the correlations and the k sweep, the sentences, the leaderboard rows and a sample of failure cases, with the
display names and limits the HTML uses. :mod:`rageval.html_report` draws it as one self-contained HTML file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import RagevalError, StoreError
from rageval.labelmethods import LLM_RELEVANCE, display_name
from rageval.paths import shipped_runs_dir, user_runs_dir

if TYPE_CHECKING:
    import pandas as pd

    from rageval.findings import Finding, GoldAnswerTable, LabelWarning
    from rageval.stats.intervals import MeanInterval
    from rageval.store import RunReader



#: Display names of judges and answer metrics: the dashboard's (``ui/format.py``, ``ui/render_correlations.py``),
#: which the engine may not import; unknown names are shown as stored. Label methods: their kinds' own
#: (:func:`rageval.labelmethods.display_name`).
JUDGE_NAMES = {"em": "exact match", "token_f1": "token F1", "cosine": "MiniLM cosine", "llm": "LLM (few-shot prompt)"}
METRIC_NAMES = {"em": "EM", "f1": "token F1", "accuracy": "accuracy", "rougeL": "ROUGE-L", "bertscore": "BERTScore"}
#: Runs up to this many queries without stored correlations get them computed (the dashboard's Home rule).
SMALL_RUN_QUERIES = 2_000
#: Failure cases shown per category A-F.
CASES_PER_CATEGORY = 2
#: Characters of a question or reason shown in the failure-case table (the rest is cut, marked with "…").
TEXT_CHARS = 400
#: Bytes of a passage's text read for the failure-case table (never a whole huge passage).
PASSAGE_BYTES = 1_000
MISSING = "–"


def method_name(method: str) -> str:
    return display_name(method)


def judge_name(judge: str) -> str:
    return JUDGE_NAMES.get(judge, judge)


def find_run(run: str | os.PathLike) -> Path:
    """The run file ``run`` names: a path to a file, or a run's name (the file's stem, the dashboard's ``?run=``)
    looked up in the user's runs folder (``$RAGEVAL_RUNS_DIR``) and then among the shipped runs (``data/runs``),
    sub-folders included, as the dashboard lists them. A :class:`~rageval.errors.RagevalError` says where it
    looked when the name is found nowhere."""
    path = Path(run).expanduser()
    if path.is_file():
        return path
    name = str(run)
    looks_like_a_name = path.suffix != ".sqlite" and os.sep not in name and "/" not in name
    if looks_like_a_name:
        for folder in _run_folders():
            found = [candidate for candidate in list_run_files(folder)[0] if candidate.stem == name]
            if found:
                return found[0]
    if path.exists():
        raise RagevalError(f"{path}: is a folder; expected a run file (.sqlite) or a run's name")
    where = " or ".join(str(folder) for folder in _run_folders())
    raise RagevalError(f"{name}: no such run file" + (f", and no run of that name in {where}" if looks_like_a_name
                                                       else ""))


def list_run_files(folder: Path) -> tuple[list[Path], list[str]]:
    """(the run files of ``folder`` and its sub-folders, as the dashboard lists them: top level first, hidden
    sub-folders left out, files of another rageval kind left out, a file that is not SQLite at all kept so that
    opening it says what is wrong; ``"file: reason"`` for each entry that cannot be looked at, such as a dangling
    link or a folder named ``*.sqlite``). Each entry is looked at on its own: one bad entry never hides the
    others."""
    from rageval.store import RUN, sqlite_application_id
    from rageval.store.files import describe_missing

    if not folder.is_dir():
        return [], []
    try:
        candidates = sorted(folder.glob("*.sqlite")) + sorted(
            p for p in folder.glob("*/**/*.sqlite") if not any(part.startswith(".")
                                                               for part in p.relative_to(folder).parts))
    except OSError as error:
        return [], [f"{folder}: cannot be listed ({error.strerror or error})"]
    found, problems = [], []
    for candidate in candidates:
        try:
            describe_missing(candidate, RUN)  # a dangling link, a folder, a pipe, an empty file: said, not raised
        except (StoreError, OSError) as error:
            problems.append(str(error))
            continue
        application_id = sqlite_application_id(candidate)
        if application_id is None or application_id == RUN.application_id:
            found.append(candidate)
    return found, problems


def _run_folders() -> list[Path]:
    """The folders the dashboard lists runs from: the user's runs folder, then the shipped runs."""
    shipped = shipped_runs_dir()
    return [user_runs_dir(), *([shipped] if shipped is not None else [])]


@dataclass(frozen=True)
class LeaderboardRow:
    """One run in a row, as the dashboard's leaderboard shows it: its E2E score at its k with the 95% interval
    (``interval``: ``Wilson`` for 0/1 scores, else ``Student-t``) and the eRAG measure whose Kendall's tau with it is
    highest, with its bootstrap interval (``correlations``: ``stored`` in the run, ``computed`` here for a run of at
    most :data:`SMALL_RUN_QUERIES` queries, or ``not stored``)."""

    run: str
    dataset: str
    retriever: str
    model: str
    k: int | None
    queries: int
    metric: str
    e2e: MeanInterval | None = None
    interval: str = ""
    best_method: str = ""
    best_measure: str = ""
    tau: float = math.nan
    tau_low: float = math.nan
    tau_high: float = math.nan
    tau_n: int = 0
    correlations: str = ""
    this_run: bool = False


@dataclass(frozen=True)
class Report:
    """Everything the HTML file shows about one run (:func:`compute_report`)."""

    path: Path
    settings: Mapping[str, Any]
    counts: Mapping[str, int]
    main_k: int | None
    metric: str
    gold: GoldAnswerTable | None = None
    gold_source: str | None = None
    findings: tuple[Finding, ...] = ()
    warnings: tuple[LabelWarning, ...] = ()
    warning_measure: str | None = None
    correlations: pd.DataFrame | None = None  # every (method, measure) at main_k: n, tau, tau_low, tau_high
    correlations_source: str = ""  # "stored", "computed", or why there are none
    sweep: pd.DataFrame | None = None  # method, family, measure, k, tau, n: the k sweep (None: fewer than two ks)
    leaderboard: tuple[LeaderboardRow, ...] = ()
    unreadable: tuple[str, ...] = ()
    e2e: MeanInterval | None = None
    e2e_interval: str = ""
    failure_judge: str | None = None
    failure_k: int | None = None
    failure_counts: Mapping[str, int] = field(default_factory=dict)  # category -> queries at failure_k
    failure_judged: int = 0  # queries judged at failure_k
    failure_sample: pd.DataFrame | None = None  # query_id, text, k, category, reason
    held: Mapping[str, bool] = field(default_factory=dict)  # what a finding is made from -> the run has it

    @property
    def name(self) -> str:
        return self.path.stem

    def best_measures(self) -> pd.DataFrame | None:
        """Each label method's best measure at k (:func:`rageval.correlations.best_measures`), best first."""
        from rageval.correlations import best_measures

        if self.correlations is None or self.main_k is None:
            return None
        return best_measures(self.correlations, self.main_k)


def metric_of(settings: Mapping[str, Any]) -> str:
    """The E2E score's metric in words (``EM``), from the run's ``e2e_metric`` (else ``label_metric``) setting."""
    metric = str(settings.get("e2e_metric") or settings.get("label_metric") or "em")
    return METRIC_NAMES.get(metric, metric)


def _read_gold(reader: RunReader, k: int) -> tuple[GoldAnswerTable | None, str | None]:
    """The 2 x 2 at ``k`` and where its gold passages come from (the queries' ``gold_passage_ids``, else the first
    gold-label method present), as the Home page reads it; (None, None) when no query has gold passages."""
    from rageval.findings import compute_gold_answer_table
    from rageval.store import aggregates

    source, method = aggregates.gold_source(reader)
    table = compute_gold_answer_table(aggregates.read_gold_retrieval(reader, k, method), k,
                                      own_lists=reader.answers_are_imported())
    if source is None or table.without_gold == table.n_queries:
        return None, None
    return table, source


def _read_correlations(reader: RunReader, k: int, queries: int) -> tuple[pd.DataFrame | None, str]:
    """The run's correlation table at ``k`` (method, measure, n, tau, tau_low, tau_high, ...) and where it comes
    from: as ``rageval evaluate`` stored it; else, for a run of at most :data:`SMALL_RUN_QUERIES` queries,
    :func:`rageval.correlations.correlation_table_at_k` now (the dashboard's numbers: same resamples and seed);
    else none."""
    from rageval.correlations import correlation_table_at_k
    from rageval.stats.correlation import DEFAULT_RESAMPLES
    from rageval.store import aggregates

    stored = reader.correlations(k)
    if not stored.empty:
        return stored, "stored"
    if queries > SMALL_RUN_QUERIES:
        return None, f"not stored in this run, and not computed for a report of over {SMALL_RUN_QUERIES:,} queries"
    measures, e2e = aggregates.read_measures_at(reader, k)
    if measures.empty or e2e.empty:
        return None, "none: the run has no measures or answers at this k"
    scores = e2e.rename("score").rename_axis("query_id").reset_index().assign(k=k)
    return correlation_table_at_k(measures, scores, k, DEFAULT_RESAMPLES), "computed"


def _e2e_interval(reader: RunReader, k: int) -> tuple[MeanInterval | None, str]:
    """The mean E2E score at ``k`` with its 95% interval: Wilson for 0/1 scores, else Student-t (the leaderboard's
    rule)."""
    import pandas as pd

    from rageval.stats.intervals import MeanInterval, intervals_from_moments, share_from_counts
    from rageval.store import aggregates

    moments = aggregates.read_e2e_moments(reader, k)
    n = moments["n"]
    if not n:
        return None, ""
    if moments["n_binary"] == n:
        return share_from_counts(round(moments["mean"] * n), int(n)), "Wilson"
    row = intervals_from_moments(pd.DataFrame([moments])).iloc[0]
    return MeanInterval(float(row["mean"]), float(row["low"]), float(row["high"]), int(n)), "Student-t"


def _constant_sides(reader: RunReader, k: int):
    """:func:`rageval.correlations.constant_sides` at ``k`` when the E2E score at k is the same for every query,
    else None (the Home page's rule)."""
    import pandas as pd

    from rageval.correlations import constant_sides
    from rageval.store import aggregates

    scores = reader.e2e_scores(k)["score"].dropna()
    if scores.empty or scores.nunique() > 1:
        return None
    ks = reader.e2e_ks()
    e2e = pd.concat([reader.e2e_scores(at).assign(k=at) for at in ks], ignore_index=True)
    measures = pd.concat([aggregates.read_measures_at(reader, at)[0] for at in ks], ignore_index=True)
    return constant_sides(measures, e2e, k)


def leaderboard_row(path: Path, this_run: bool = False) -> LeaderboardRow:
    """One run's row of the leaderboard (:class:`LeaderboardRow`)."""
    from rageval.correlations import best_measures
    from rageval.findings import key_correlations
    from rageval.store import RunReader, aggregates

    with RunReader(path) as reader:
        settings = reader.settings()
        k = reader.main_k()
        queries = reader.query_count()
        row: dict[str, Any] = {
            "run": path.stem, "dataset": str(settings.get("dataset", MISSING)),
            "retriever": str(settings.get("retriever", MISSING)), "model": str(settings.get("model_id", MISSING)),
            "k": k, "queries": queries, "metric": metric_of(settings), "this_run": this_run}
        if k is None:
            return LeaderboardRow(**row)
        row["e2e"], row["interval"] = _e2e_interval(reader, k)
        table = reader.correlations(k)
        if not table.empty:
            row["correlations"] = "stored"
        elif queries <= SMALL_RUN_QUERIES:
            measures, e2e = aggregates.read_measures_at(reader, k)
            table = key_correlations(measures, e2e, k)
            row["correlations"] = "computed"
        else:
            return LeaderboardRow(**row, correlations="not stored")
    best = best_measures(table, k)
    best = best[best["method"].str.startswith("erag:").astype(bool)]
    if len(best):
        top = best.iloc[0]
        row.update(best_method=top["method"], best_measure=top["measure"], tau=float(top["tau"]),
                   tau_low=float(top["tau_low"]), tau_high=float(top["tau_high"]), tau_n=int(top["n"]))
    return LeaderboardRow(**row)


def leaderboard(path: Path, others: Sequence[Path] | None = None) -> tuple[list[LeaderboardRow], list[str]]:
    """(the rows of ``path`` and ``others``, default every run the dashboard lists: the user's runs folder, then the
    shipped runs, one per name; ``"file: reason"`` for each that cannot be read): best E2E score first, runs
    without one last."""
    problems: list[str] = []
    if others is None:
        seen: dict[str, Path] = {}
        for folder in _run_folders():
            listed, unlisted = list_run_files(folder)
            problems += unlisted
            for candidate in listed:
                seen.setdefault(candidate.stem, candidate)
        others = list(seen.values())
    rows = []
    chosen = path.resolve()
    for candidate in dict.fromkeys([path, *(p for p in others if Path(p).resolve() != chosen)]):
        try:
            rows.append(leaderboard_row(Path(candidate), this_run=Path(candidate) == path))
        except (StoreError, OSError) as error:
            problems.append(str(error) if str(candidate) in str(error) else f"{candidate}: {error}")
    rows.sort(key=lambda r: (r.e2e is None or math.isnan(r.e2e.mean), -(r.e2e.mean if r.e2e else 0.0), r.run))
    return rows, problems


def _k_sweep(reader: RunReader, k: int, table: pd.DataFrame, queries: int) -> pd.DataFrame | None:
    """The k sweep (:func:`rageval.correlations.k_sweep`) of the run: each label method's best measure family at
    ``k`` (from ``table``, the correlations there), its tau at every k the run has answers for: the stored tau where
    the run stores correlations at that k, else computed (point estimates) for a run of at most
    :data:`SMALL_RUN_QUERIES` queries. None with fewer than two ks."""
    from rageval.correlations import best_measures, k_sweep, kendall_taus

    ks = reader.e2e_ks()
    if len(ks) < 2:
        return None
    names = reader.measure_names()
    measured = set(zip(names["method"], names["measure"]))

    def taus_at(at: int, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, int]]:
        stored = reader.correlations(at)
        found = {(m, x): (float(tau), int(n)) for m, x, tau, n in
                 zip(stored["method"], stored["measure"], stored["tau"], stored["n"]) if (m, x) in set(pairs)}
        missing = [pair for pair in pairs if pair not in found]
        if missing and queries <= SMALL_RUN_QUERIES:
            downstream = reader.e2e_scores(at).set_index("query_id")["score"]
            computed = kendall_taus(reader.measures_of(missing), downstream)
            found.update({(m, x): (float(tau), int(n)) for m, x, tau, n in
                          zip(computed["method"], computed["measure"], computed["tau"], computed["n"])})
        return found

    return k_sweep(best_measures(table, k), ks, measured, taus_at)


def _failure_sample(reader: RunReader, k: int | None, per_category: int
                    ) -> tuple[str | None, int | None, dict[str, int], int, pd.DataFrame | None]:
    """(judge, k, queries per category, queries judged, the sample) of LLM-retEval's failure cases: judge ``em``
    (else the first), at ``k`` when judged there (else the largest judged k); the first ``per_category`` cases of
    each category in the run's query order, each with the E2E answer at that k (``answer``) and the passage ranked
    first (``top_passage``: id, title, the first :data:`PASSAGE_BYTES` of its text; None without a ranking)."""
    from rageval.reteval import CATEGORY_NAMES
    from rageval.store import aggregates

    counts = aggregates.read_failure_counts(reader)
    if counts.empty:
        return None, None, {}, 0, None
    judge = sorted(counts["judge"].unique(), key=lambda j: (j != "em", j))[0]
    judged = counts[counts["judge"] == judge]
    at = k if k in set(judged["k"]) else int(judged["k"].max())
    n = int(judged.loc[judged["k"] == at, "n"].iloc[0])
    cases = reader.failure_case_table(judge, at, details=False)  # lean: a big run's questions are megabytes
    per = {c: int(cases.loc[cases["category"] == c, "query_id"].nunique()) for c in CATEGORY_NAMES}
    sample = cases.groupby("category", sort=True).head(per_category).reset_index(drop=True)
    details = reader.failure_case_details(judge, list(dict.fromkeys(sample["query_id"])))
    sample = sample.merge(details.astype({"k": int}), how="left", on=["query_id", "k", "category"])
    tops, answers = [], []
    for query_id in sample["query_id"]:
        ranked = reader.ranking_table(query_id, preview=PASSAGE_BYTES)
        first = ranked.iloc[0] if len(ranked) else None
        tops.append(None if first is None else (str(first["passage_id"]), first["title"], first["text"]))
        output = reader.e2e_output(query_id, at)
        answers.append(None if output is None else output.output)
    return judge, at, per, n, sample.assign(top_passage=tops, answer=answers)


def compute_report(run: str | os.PathLike, *, others: Sequence[str | os.PathLike] = (), all_runs: bool = False,
                   cases_per_category: int = CASES_PER_CATEGORY) -> Report:
    """What the report of ``run`` (a path or a run's name, :func:`find_run`) shows, computed as the Findings page
    computes it. The leaderboard holds this run only, plus ``others`` (paths or names) where given, or every run
    the dashboard lists with ``all_runs``: a report is sent to people outside the team."""
    from rageval import findings
    from rageval.store import RunReader, aggregates

    path = find_run(run)
    other_paths = [find_run(other) for other in others]
    with RunReader(path) as reader:
        settings = reader.settings()
        counts = reader.counts()
        k = reader.main_k()
        metric = metric_of(settings)
        values: dict[str, Any] = {}
        found: list[Finding] = []
        if k is not None:
            values["gold"], values["gold_source"] = _read_gold(reader, k)
            values["e2e"], values["e2e_interval"] = _e2e_interval(reader, k)
            constant = _constant_sides(reader, k)
            if constant is not None and (sentence := findings.constant_answer_finding(constant, metric)):
                found.append(sentence)
            table, source = _read_correlations(reader, k, counts["queries"])
            values["correlations"], values["correlations_source"] = table, source
            if table is not None and (sentence := findings.correlation_finding(table, k, method_name)):
                found.append(sentence)
            if values["gold"] is not None and (sentence := findings.two_by_two_finding(values["gold"])):
                found.append(sentence)
        else:
            constant = None
        share = aggregates.read_label_share(reader, LLM_RELEVANCE)
        if (sentence := findings.label_share_finding(LLM_RELEVANCE, *share, name=method_name)) is not None:
            found.append(sentence)
        failures = aggregates.read_failure_counts(reader)
        if (sentence := findings.failure_finding(failures, k, judge_name)) is not None:
            found.append(sentence)
        values["held"] = {"correlations": values.get("correlations") is not None,
                          "gold passages": values.get("gold") is not None,
                          "LLM-relevance labels": bool(share[0]), "LLM-retEval": not failures.empty}
        warn_k = k if k is not None else settings.get("k")
        if isinstance(warn_k, int):
            measure = f"P@{warn_k}"
            spread = aggregates.read_measure_spread(reader, aggregates.read_label_methods(reader), measure)
            values["warnings"] = tuple(findings.label_method_warnings(
                spread, measure, name=method_name, answer_constant=constant is not None and warn_k == k))
            values["warning_measure"] = measure
        if k is not None and values.get("correlations") is not None:
            values["sweep"] = _k_sweep(reader, k, values["correlations"], counts["queries"])
        judge, at, per, judged, sample = _failure_sample(reader, k, cases_per_category)
    if all_runs:
        rows, problems = leaderboard(path, None)
    else:
        rows, problems = leaderboard(path, other_paths)
    return Report(path=path, settings=settings, counts=counts, main_k=k, metric=metric, findings=tuple(found),
                  leaderboard=tuple(rows), unreadable=tuple(problems), failure_judge=judge, failure_k=at,
                  failure_counts=per, failure_judged=judged, failure_sample=sample, **values)
