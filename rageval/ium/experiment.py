"""One IUM run end to end: agents, offline IUM (personalised and not), online IUM per batch size, baselines, test
outcomes, McNemar tests and personalisation, stored in one run file (issue 6; Salemi & Zamani, ICTIR 2025).

Queries: NQ-open agents train on NQ queries from index ``nq_train_offset`` (the first 1,000 are evaluation queries
elsewhere in rageval) and are tested on the first ``num_test``; HotpotQA agents train on dev questions from
``hotpotqa_train_offset`` and are tested on the first ``num_test``. Agents of one dataset share their queries, so the
lists they are served for the same query can be compared (personalisation).

Methods evaluated on every agent's test queries (the agent reads its top k): BM25, dense (MiniLM), the three
one-round rerankers, offline IUM after each iteration (personalised and not; t = 0 is BM25), and online IUM for each
batch size b (starting from the last personalised offline checkpoint).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rageval.ium.agents import Agent, AgentSpec
from rageval.ium.learning import FeedbackRow, IumConfig, SearchEngine, offline_ium, online_ium, train_baselines
from rageval.stats.intervals import MeanInterval
from rageval.stats.paired import jaccard, mcnemar_exact, top_k_kendall_tau
from rageval.types import Passage, Query

Log = Callable[[str], None]

DEFAULT_AGENTS = (
    AgentSpec("nq/gemma/em", "nq_open", "nq", "gemma", k=3, utility="em"),
    AgentSpec("nq/smollm2/contains", "nq_open", "nq", "smollm2", k=2, utility="contains"),
    AgentSpec("hotpotqa/gemma/em", "hotpotqa", "hotpotqa", "gemma", k=3, utility="em"),
    AgentSpec("hotpotqa/smollm2/f1", "hotpotqa", "hotpotqa", "smollm2", k=2, utility="f1"),
)
#: The engines of the paper's Table 3; ``first-stage`` stands for BM25 when the agents come from run files, each
#: with its own retriever's lists (rageval.ium.run_file_agents).
MAIN_METHODS = ("BM25", "first-stage", "dense", "reranker-individual", "reranker-dataset", "uRAG", "offline-IUM",
                "online-IUM")


@dataclass(frozen=True)
class IumPlan:
    """Sizes of one IUM run; ``config`` holds the learning hyper-parameters."""

    name: str = "ium-nq-hotpotqa"
    agents: tuple[AgentSpec, ...] = DEFAULT_AGENTS
    num_train: int = 40
    num_test: int = 30
    nq_train_offset: int = 1000
    hotpotqa_train_offset: int = 100
    config: IumConfig = IumConfig()

    @property
    def file_name(self) -> str:
        return f"{self.name}.sqlite"


# The GPU configuration: closer to the paper (first stage 100, k = 32 offline, T = 3, all layers trained), 300
# training and 100 test queries per dataset (HotpotQA ships 400 dev questions: test 0..99, train 100..399).
FULL_PLAN = IumPlan(name="ium-nq-hotpotqa-full", num_train=300, num_test=100, nq_train_offset=1000,
                    hotpotqa_train_offset=100,
                    config=IumConfig(first_stage_depth=100, train_k=32, iterations=3, epochs=2,
                                     online_batch_sizes=(25, 50), batch_size=32, trainable_layers=None))


def plan_queries(plan: IumPlan, nq_queries: Sequence[Query], hotpotqa_queries: Sequence[Query]
                 ) -> dict[str, tuple[list[Query], list[Query]]]:
    """(train, test) queries per dataset; disjoint by construction (test from 0, train from the offset)."""
    out = {}
    for dataset, queries, offset in (("nq_open", nq_queries, plan.nq_train_offset),
                                     ("hotpotqa", hotpotqa_queries, plan.hotpotqa_train_offset)):
        if offset < plan.num_test:
            raise ValueError(f"{dataset}: the train offset {offset} overlaps the {plan.num_test} test queries")
        train, test = list(queries[offset:offset + plan.num_train]), list(queries[:plan.num_test])
        if len(train) < plan.num_train or len(test) < plan.num_test:
            raise ValueError(f"{dataset}: {len(queries)} queries cannot give {plan.num_train} train from {offset} "
                             f"and {plan.num_test} test")
        out[dataset] = (train, test)
    return out


@dataclass
class IumResult:
    """Everything a run stores (tables as DataFrames; see :mod:`rageval.store.ium`)."""

    settings: dict
    agents: pd.DataFrame
    queries: pd.DataFrame
    served: pd.DataFrame
    outcomes: pd.DataFrame
    feedback: pd.DataFrame
    online_trained_on: pd.DataFrame
    significance: pd.DataFrame = field(default_factory=pd.DataFrame)
    personalisation: pd.DataFrame = field(default_factory=pd.DataFrame)


def run_ium(plan: IumPlan, agents: Sequence[Agent], split: Mapping[str, tuple[list[Query], list[Query]]],
            passages: Mapping[str, Passage], bm25, dense=None, log: Log = print, command: str = "",
            checkpoints: Path | None = None) -> IumResult:
    """Train and evaluate every method of the module docstring; returns the tables to store. Offline and baseline
    models are kept in ``checkpoints`` when given, so a killed run resumes without retraining them (the online
    retrains are small and redone)."""
    started = time.perf_counter()
    config = plan.config
    train = {a.name: split[a.spec.dataset][0] for a in agents}
    test = {a.name: split[a.spec.dataset][1] for a in agents}
    all_queries = list({q.query_id: q for qs in (*train.values(), *test.values()) for q in qs}.values())
    candidates = {qid: r.passage_ids for qid, r in bm25.batch_search(all_queries, config.first_stage_depth).items()}
    log(f"first stage: BM25 top {config.first_stage_depth} for {len(all_queries)} queries "
        f"({time.perf_counter() - started:.0f} s)")
    given: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
    if dense is not None:
        dense_lists = {q.query_id: r.passage_ids for q in all_queries
                       for r in [dense.search(q.text, max(a.spec.k for a in agents), q.query_id)]}
        given["dense"] = {a.name: {q.query_id: tuple(dense_lists[q.query_id][:a.spec.k]) for q in test[a.name]}
                          for a in agents}
    served, feedback_frames, trained_on_rows = train_and_serve(
        agents, train, test, candidates, passages, config, first_stage="BM25", given=given, log=log,
        checkpoints=checkpoints, started=started)
    outcomes = answer_outcomes(agents, test, served, passages, log)
    log(f"outcomes: {len(outcomes)} answers ({time.perf_counter() - started:.0f} s)")
    settings = {
        "kind": "ium", "plan": {**dataclasses.asdict(plan), "agents": [dataclasses.asdict(s) for s in plan.agents]},
        "generators": {a.name: a.generator.model_id for a in agents}, "command": command,
        "first_stage": f"BM25 (Lucene, k1=0.9, b=0.4) top {config.first_stage_depth} over the rageval corpus",
        "dense": getattr(dense, "model_id", "all-MiniLM-L6-v2") if dense is not None else None,
        "online_default_batch_size": config.online_batch_sizes[0],
        "seconds": round(time.perf_counter() - started, 1),
    }
    return assemble_result(settings, agents, train, test, served, outcomes, feedback_frames, trained_on_rows)


def train_and_serve(agents: Sequence[Agent], train: Mapping[str, Sequence[Query]], test: Mapping[str, Sequence[Query]],
                    candidates: Mapping, passages: Mapping[str, Passage], config: IumConfig, *,
                    first_stage: str = "BM25", given: Mapping[str, Mapping[str, Mapping[str, tuple[str, ...]]]]
                    | None = None, first_feedback: Sequence[FeedbackRow] | None = None, log: Log = print,
                    checkpoints: Path | None = None, started: float | None = None
                    ) -> tuple[dict[str, dict[str, dict[str, tuple[str, ...]]]], list[pd.DataFrame], list[tuple]]:
    """Every method's lists on every agent's test queries, the feedback each phase collected and, per online
    method, what the serving parameters had been trained on: the one path of every IUM run (the shipped agents
    over BM25, agents from run files over their own rankings).

    ``candidates``: the first stage's lists (shared, or :class:`~rageval.ium.learning.AgentCandidates`); served as
    they are under the method ``first_stage`` (also offline iteration t = 0). ``given``: more lists served as they
    are (``{method: {agent: {query id: ids}}}``, e.g. dense retrieval). ``first_feedback``: offline iteration 1's
    feedback as given (:func:`~rageval.ium.learning.offline_ium`); the one-round baselines learn from iteration 1's
    feedback either way."""
    started = time.perf_counter() if started is None else started
    served: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}  # method -> agent -> query -> list

    def serve_all(method: str, engine_for: Callable[[Agent], SearchEngine]) -> None:
        served[method] = {a.name: engine_for(a).serve(a.spec, test[a.name], a.spec.k) for a in agents}

    serve_all(first_stage, lambda a: SearchEngine(candidates, passages))
    for method, lists in (given or {}).items():
        served[method] = {name: dict(per_query) for name, per_query in lists.items()}

    feedback_frames = []
    iterations = offline_ium(agents, train, candidates, passages, config, personalised=True, log=log,
                             checkpoints=checkpoints, first_feedback=first_feedback)
    plain_iterations = offline_ium(agents, train, candidates, passages, config, personalised=False, log=log,
                                   checkpoints=checkpoints, first_feedback=first_feedback)
    for label, runs, personalised in (("offline-IUM", iterations, True),
                                      ("offline-IUM-nonpersonalised", plain_iterations, False)):
        for iteration in runs:
            method = f"{label}@t{iteration.number}"
            def engine(a: Agent, m: object = iteration.model, p: bool = personalised) -> SearchEngine:
                return SearchEngine(candidates, passages, m, p)

            serve_all(method, engine)
            feedback_frames.append(_feedback_frame(iteration.feedback, f"{label}@t{iteration.number}"))
        served[f"{label}@t0"] = served[first_stage]
    served["offline-IUM"] = served[f"offline-IUM@t{config.iterations}"]
    log(f"offline IUM: {config.iterations} iterations x 2 ({time.perf_counter() - started:.0f} s)")

    # One round of feedback on the first stage's lists: offline iteration 1's.
    baselines = train_baselines(agents, iterations[0].feedback, train, passages, config, log=log,
                                checkpoints=checkpoints)
    for method, per_agent in baselines.items():
        def baseline_engine(a: Agent, pa: Mapping[str, tuple[object, bool]] = per_agent) -> SearchEngine:
            return SearchEngine(candidates, passages, pa[a.name][0], pa[a.name][1])

        serve_all(method, baseline_engine)
    log(f"baselines ({time.perf_counter() - started:.0f} s)")

    trained_on_rows = []
    for b in config.online_batch_sizes:
        method = f"online-IUM@b{b}"
        served[method] = {}
        for agent in agents:
            result = online_ium(agent, test[agent.name], iterations[-1].model, candidates, passages, b, config)
            served[method][agent.name] = result.served
            feedback_frames.append(_feedback_frame(result.feedback, method))
            trained_on_rows += [(method, agent.name, qid, " ".join(seen)) for qid, seen in result.trained_on.items()]
        log(f"{method} ({time.perf_counter() - started:.0f} s)")
    served["online-IUM"] = served[f"online-IUM@b{config.online_batch_sizes[0]}"]
    return served, feedback_frames, trained_on_rows


def assemble_result(settings: dict, agents: Sequence[Agent], train: Mapping[str, Sequence[Query]],
                    test: Mapping[str, Sequence[Query]], served, outcomes: pd.DataFrame,
                    feedback_frames: Sequence[pd.DataFrame], trained_on_rows: Sequence[tuple],
                    agent_columns: Mapping[str, Mapping[str, object]] | None = None) -> IumResult:
    """The tables of one run (:class:`IumResult`); ``agent_columns``: more columns of the agents table, per agent."""
    more = agent_columns or {}
    return IumResult(
        settings=settings,
        agents=pd.DataFrame([{**dataclasses.asdict(a.spec), "generator": a.generator.model_id, **more.get(a.name, {})}
                             for a in agents]),
        queries=pd.DataFrame([(a.name, part, q.query_id, q.text, " | ".join(q.answers)) for a in agents
                              for part, qs in (("train", train[a.name]), ("test", test[a.name])) for q in qs],
                             columns=["agent", "split", "query_id", "text", "answers"]),
        served=pd.DataFrame([(m, a, qid, rank, pid) for m, per_agent in served.items() for a, lists in per_agent.items()
                             for qid, pids in lists.items() for rank, pid in enumerate(pids, start=1)],
                            columns=["method", "agent", "query_id", "rank", "passage_id"]),
        outcomes=outcomes,
        feedback=pd.concat(feedback_frames, ignore_index=True),
        online_trained_on=pd.DataFrame(trained_on_rows, columns=["method", "agent", "query_id", "trained_on"]),
        significance=significance_table(outcomes),
        personalisation=personalisation_table(served, agents, test),
    )


def _feedback_frame(rows, phase: str) -> pd.DataFrame:
    return pd.DataFrame([(phase, r.agent, r.query_id, r.passage_id, r.utility) for r in rows],
                        columns=["phase", "agent", "query_id", "passage_id", "utility"])


def answer_outcomes(agents: Sequence[Agent], test: Mapping[str, Sequence[Query]],
                    served: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]],
                    passages: Mapping[str, Passage], log: Log = lambda message: None) -> pd.DataFrame:
    """Every agent's answer and downstream score on its test queries under every method (one generator call per
    agent; identical prompts across methods are answered once by the cache)."""
    rows = []
    for agent in agents:
        keys = [(method, q) for method in served for q in test[agent.name]]
        started = time.perf_counter()
        answers = agent.answer([(q, [passages[pid] for pid in served[method][agent.name][q.query_id]])
                                for method, q in keys])
        rows += [(method, agent.name, q.query_id, output, score) for (method, q), (output, score) in zip(keys, answers)]
        log(f"outcomes of {agent.name}: {len(keys)} answers ({time.perf_counter() - started:.0f} s)")
    return pd.DataFrame(rows, columns=["method", "agent", "query_id", "output", "score"])


def summary_table(outcomes: pd.DataFrame, methods: Sequence[str] = MAIN_METHODS) -> pd.DataFrame:
    """Mean downstream score per agent (rows) and method (columns), with the macro average over agents."""
    table = outcomes[outcomes.method.isin(methods)].pivot_table(index="agent", columns="method", values="score",
                                                                aggfunc="mean")
    table = table[[m for m in methods if m in table.columns]]
    table.loc["macro average"] = table.mean(axis=0)
    return table


def macro_interval(outcomes: pd.DataFrame, agents: pd.DataFrame, method: str, baseline: str | None = None,
                   n_resamples: int = 2000, seed: int = 0) -> MeanInterval:
    """The macro average of ``method`` over agents (or, with ``baseline``, of ``method`` minus ``baseline`` on the
    same test questions) with its 95% bootstrap interval: questions resampled within each task, one draw shared
    by the agents of a task (:func:`rageval.stats.intervals.macro_bootstrap_interval`). ``agents``: the run's
    agents table (``name``, ``task_id``)."""
    from rageval.stats.intervals import macro_bootstrap_interval

    wide = outcomes[outcomes.method.isin([method, baseline])].pivot_table(
        index=["agent", "query_id"], columns="method", values="score", aggfunc="first").reset_index()
    if method not in wide or (baseline is not None and baseline not in wide):
        return MeanInterval(float("nan"), float("nan"), float("nan"), 0)
    value = wide[method] - wide[baseline] if baseline is not None else wide[method]
    task_of = dict(zip(agents["name"], agents["task_id"]))
    frame = pd.DataFrame({"cluster": wide.agent.map(task_of).fillna(wide.agent), "agent": wide.agent,
                          "query_id": wide.query_id, "value": value})
    return macro_bootstrap_interval(frame, n_resamples=n_resamples, seed=seed)


def first_stage_method(outcomes: pd.DataFrame) -> str:
    """The method every engine is compared with: ``first-stage`` (runs-based IUM: each run's own ranking), else
    ``BM25`` (the shipped four agents)."""
    return "first-stage" if (outcomes.method == "first-stage").any() else "BM25"


def macro_interval_table(outcomes: pd.DataFrame, agents: pd.DataFrame, methods: Sequence[str] = MAIN_METHODS,
                         base: str | None = None, n_resamples: int = 2000) -> pd.DataFrame:
    """One row per method present (index): ``macro`` with ``low`` / ``high`` (its 95% interval) and ``difference``
    from ``base`` (default :func:`first_stage_method`) on the same questions with ``difference_low`` /
    ``difference_high``, all as fractions (:func:`macro_interval`); NaN differences on the base's own row."""
    base = base or first_stage_method(outcomes)
    rows = {}
    for method in [m for m in methods if (outcomes.method == m).any()]:
        level = macro_interval(outcomes, agents, method, n_resamples=n_resamples)
        gap = (macro_interval(outcomes, agents, method, base, n_resamples=n_resamples) if method != base
               else MeanInterval(float("nan"), float("nan"), float("nan"), 0))
        rows[method] = {"macro": level.mean, "low": level.low, "high": level.high, "difference": gap.mean,
                        "difference_low": gap.low, "difference_high": gap.high}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")


def iteration_curve(outcomes: pd.DataFrame, prefix: str = "offline-IUM") -> pd.Series:
    """Macro-average downstream score (mean over agents of each agent's mean over its test queries) after each
    offline iteration t of the methods ``<prefix>@t<t>``, indexed by t (0 is BM25); the paper's Figure 2a."""
    rows = outcomes[outcomes.method.str.startswith(prefix + "@t")]
    means = rows.groupby(["method", "agent"]).score.mean().groupby("method").mean()
    return means.rename(index=lambda m: int(m.rsplit("@t", 1)[1])).sort_index().rename_axis("t")


def batch_size_curve(outcomes: pd.DataFrame) -> pd.Series:
    """Macro-average downstream score of online IUM for each batch size b (methods ``online-IUM@b<b>``), indexed
    by b; the paper's Figure 2b."""
    rows = outcomes[outcomes.method.str.match(r"online-IUM@b\d+$")]
    means = rows.groupby(["method", "agent"]).score.mean().groupby("method").mean()
    return means.rename(index=lambda m: int(m.rsplit("@b", 1)[1])).sort_index().rename_axis("b")


def significance_table(outcomes: pd.DataFrame, methods: Sequence[str] = MAIN_METHODS) -> pd.DataFrame:
    """Exact McNemar tests (outcome = score >= 0.5) between every pair of main methods, per agent and over all
    agents' test queries pooled (the paper's 'average' comparison)."""
    rows = []
    present = [m for m in methods if m in set(outcomes.method)]
    for agent, group in [*outcomes.groupby("agent"), ("all agents", outcomes)]:
        wide = group[group.method.isin(present)].pivot_table(index=["agent", "query_id"], columns="method",
                                                             values="score", aggfunc="first")
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                test = mcnemar_exact((wide[a] >= 0.5).tolist(), (wide[b] >= 0.5).tolist())
                rows.append((agent, a, b, len(wide), test.only_a, test.only_b, test.p_value))
    return pd.DataFrame(rows, columns=["agent", "method_a", "method_b", "n", "only_a", "only_b", "p_value"])


def personalisation_table(served, agents: Sequence[Agent], test: Mapping[str, Sequence[Query]],
                          methods: Sequence[str] = ("offline-IUM", "offline-IUM-nonpersonalised@t1", "uRAG")
                          ) -> pd.DataFrame:
    """Kendall's tau and Jaccard between the lists two agents of one dataset were served for the same test query
    (top min(k_a, k_b) of each); tau is NaN when that depth is 1 (one item a list ranks nothing: two different
    items would read as tau = -1)."""
    rows = []
    for method in methods:
        if method not in served:
            continue
        for i, a in enumerate(agents):
            for b in agents[i + 1:]:
                if a.spec.dataset != b.spec.dataset:
                    continue
                depth = min(a.spec.k, b.spec.k)
                for q in test[a.name]:
                    if q.query_id not in served[method][b.name]:  # agents from runs may hold other questions
                        continue
                    la, lb = served[method][a.name][q.query_id][:depth], served[method][b.name][q.query_id][:depth]
                    tau = top_k_kendall_tau(la, lb) if depth >= 2 else float("nan")
                    rows.append((method, a.name, b.name, q.query_id, tau, jaccard(la, lb)))
    return pd.DataFrame(rows, columns=["method", "agent_a", "agent_b", "query_id", "kendall_tau", "jaccard"])


def personalisation_summary(personalisation: pd.DataFrame, agents: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean Kendall's tau and Jaccard over the test queries of each (method, agent_a, agent_b) of
    :func:`personalisation_table`, with ``n``, the queries averaged over (columns method, agent_a, agent_b,
    kendall_tau, jaccard, n; the paper's Figure 5). With the run's ``agents`` table (name, k), tau is NaN for a
    pair whose shorter list holds one passage (runs written before :func:`personalisation_table` said so)."""
    if agents is not None and {"name", "k"} <= set(agents.columns):
        k_of = dict(zip(agents["name"], agents["k"]))
        single = [min(k_of.get(a, 2), k_of.get(b, 2)) < 2
                  for a, b in zip(personalisation["agent_a"], personalisation["agent_b"])]
        personalisation = personalisation.assign(
            kendall_tau=personalisation["kendall_tau"].mask(pd.Series(single, index=personalisation.index)))
    grouped = personalisation.groupby(["method", "agent_a", "agent_b"])
    summary = grouped[["kendall_tau", "jaccard"]].mean()
    summary["n"] = grouped.size()
    return summary.reset_index()


def write_ium_run(result: IumResult, path: Path) -> Path:
    """Store ``result`` as an IUM run file (SQLite kind "RAGI"; one table per :class:`IumResult` field,
    :func:`rageval.store.ium.write_ium_file`)."""
    from rageval.store.ium import write_ium_file

    tables = ("agents", "queries", "served", "outcomes", "feedback", "online_trained_on", "significance",
              "personalisation")
    return write_ium_file(result.settings, {name: getattr(result, name) for name in tables}, path)


def default_checkpoints_dir() -> Path:
    """Where the trained offline/baseline models of a run are kept so a killed run resumes without retraining
    them: ``models/ium-checkpoints`` in the user cache."""
    from rageval.paths import cache_dir

    return cache_dir() / "models" / "ium-checkpoints"


def build_shipped_ium_run(plan: IumPlan, out_path: Path, *, data_dir: Path, dense: bool = True,
                          dtype: str | None = "bfloat16", cache_path: Path | None = None,
                          checkpoints: Path | None = None, log: Callable[[str], None] = print,
                          command: str = "") -> IumResult:
    """``rageval ium``: the four shipped agents (NQ-open / HotpotQA x Gemma / SmolLM2, their LLM calls through the
    LLM-call cache at ``cache_path``, default the user cache) over the shipped corpus under ``data_dir``,
    :func:`run_ium` with BM25 (and the dense baseline unless ``dense`` is false), stored by :func:`write_ium_run`
    into ``out_path``."""
    from rageval.corpus import build_corpus
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.gemma import load_gemma_generator
    from rageval.generation.smollm2 import chat_prompt, load_smollm2_generator
    from rageval.ium.agents import build_agents
    from rageval.retrieval.evaluate import hotpotqa_queries
    from rageval.retrieval.retrievers import Retrievers

    corpus = build_corpus(data_dir)
    resources = Retrievers(corpus.passages)
    cache = LLMCache(cache_path) if cache_path else LLMCache()
    gemma = load_gemma_generator(batch_size=8, dtype=dtype)
    smollm2 = load_smollm2_generator(batch_size=8, dtype=dtype)
    generators = {"gemma": CachedGenerator(gemma, cache), "smollm2": CachedGenerator(smollm2, cache)}
    smollm2_tokenizer = smollm2.tokenizer
    agents = build_agents(plan.agents, generators,
                          {"smollm2": lambda message: chat_prompt(smollm2_tokenizer, message)})
    split = plan_queries(plan, corpus.nq_queries, hotpotqa_queries(corpus, data_dir))
    result = run_ium(plan, agents, split, resources.passages, resources.bm25, resources.dense if dense else None,
                     log=log, command=command, checkpoints=checkpoints)
    write_ium_run(result, out_path)
    return result
