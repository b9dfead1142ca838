"""IUM over run files a user already has (issue 19): each eRAG run file is one agent, and one search engine learns
from the labels they hold.

A run file (kind "RAGE", :mod:`rageval.store.runs`) gives an agent everything IUM needs:

* **who it is**: task id = the run's dataset, model id = a short name of the model that answered (settings
  ``model_id``), k = the passages it reads, utility = the run's downstream metric (``e2e_metric``, else
  ``label_metric``, else ``em``);
* **its questions** (with gold answers) and **its first stage**: the run's ranking of each question (cut at
  ``depth``), whatever retriever produced it;
* **its feedback**: the eRAG labels ``erag:<metric>`` the run stores per (question, passage), G_q[d] = E(M(q, {d}),
  y), exactly the per-passage utility IUM asks an agent for (Salemi & Zamani, ICTIR 2025, §4);
* **its answers**: the E2E answers the run stores for its own top-k lists.

Offline iteration 1 is every stored label of the training questions (no model call). Later iterations, online
batches and the test answers ask for the labels and answers of the lists the engine serves: the run's stored ones
first, then the LLM-call cache, then the run's own model, described by the run's settings (``config``, as
``rageval evaluate`` wrote it, or a packaged model's id) and loaded through the one generator factory
(:func:`rageval.generation.factory.load_generator`) only when a prompt is in neither. When that model cannot be
loaded or reached, the run stops with one error naming the run file, the model and how many answers it lacks (the
trained models are kept as checkpoints, so the rerun after starting the model costs no training).

Questions are split per agent by a seeded hash of (task, question id): a question is a test question for every
agent of its task or for none, so the engine never trains on a question another agent is tested on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings
from rageval.ium.agents import Agent, AgentSpec
from rageval.ium.experiment import IumResult, answer_outcomes, assemble_result, train_and_serve
from rageval.ium.learning import AgentCandidates, FeedbackRow, IumConfig
from rageval.types import Passage, Query

if TYPE_CHECKING:
    from rageval.generation.factory import ModelSettings

Log = Callable[[str], None]

#: eRAG's metric names -> the IUM utility of the same function (``accuracy`` is ``contains``).
RUN_METRICS = {"em": "em", "f1": "f1", "accuracy": "accuracy", "rougeL": "rougeL"}
FIRST_STAGE = "first-stage"


@dataclass(frozen=True)
class RunSplit:
    """How each agent's questions are split: a question is a test question when its seeded hash falls below
    ``test_share`` (the same for every agent of a task); at most ``max_train`` / ``max_test`` per agent (None: all),
    taken in hash order."""

    test_share: float = 0.3
    max_train: int | None = None
    max_test: int | None = None
    seed: int = 0

    def __post_init__(self):
        if not 0 < self.test_share < 1:
            raise RagevalError(f"test share {self.test_share}: expected a number strictly between 0 and 1")
        for name in ("max_train", "max_test"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise RagevalError(f"{name.replace('_', ' ')}: expected at least 1, got {value}")


def question_hash(seed: int, task: str, query_id: str) -> float:
    """A uniform number in [0, 1) from (seed, task, question id): the split's key."""
    digest = hashlib.sha256(f"{seed}\x1f{task}\x1f{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def split_questions(queries: Sequence[Query], task: str, split: RunSplit) -> tuple[list[Query], list[Query]]:
    """(train, test) of one agent's questions (see :class:`RunSplit`)."""
    keyed = sorted(queries, key=lambda q: (question_hash(split.seed, task, q.query_id), q.query_id))
    test = [q for q in keyed if question_hash(split.seed, task, q.query_id) < split.test_share]
    train = [q for q in keyed if question_hash(split.seed, task, q.query_id) >= split.test_share]
    return train[:split.max_train], test[:split.max_test]


@dataclass
class RunAgentSource:
    """What one run file gives IUM (see the module docstring)."""

    path: Path
    run_name: str
    dataset: str
    model_id: str
    metric: str
    k: int
    first_stage: str
    queries: list[Query]
    candidates: dict[str, tuple[str, ...]]
    passages: dict[str, Passage]
    labels: dict[tuple[str, str], float]
    answers: dict[tuple[str, tuple[str, ...]], str]
    prompt: object  # a rageval.prompts.PromptTemplate
    decoding: DecodingSettings
    model_settings: ModelSettings | None  # None when the run does not say
    model_problem: str | None
    dropped_queries: int = 0
    notes: list[str] = field(default_factory=list)

    def identity(self) -> str:
        """Equal for two files that would be the same agent on the same data (dataset, model, metric, k, questions
        and first-stage lists)."""
        payload = repr((self.dataset, self.model_id, self.metric, self.k,
                        sorted((qid, ids) for qid, ids in self.candidates.items())))
        return hashlib.sha256(payload.encode()).hexdigest()


def short_model_name(model_id: str) -> str:
    """A token-safe short name of a model id: ``google/gemma-3-270m (GGUF Q4_K_M, ...) [bfloat16]`` ->
    ``gemma-3-270m``; ``openai-compatible:llama3`` -> ``llama3``."""
    base = re.split(r" [(\[]", model_id, maxsplit=1)[0]
    base = base.split(":", 1)[1] if base.startswith("openai-compatible:") else base
    base = base.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-") or "model"


def _token_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "task"


def model_settings_of_run(settings: Mapping) -> tuple[ModelSettings | None, str | None]:
    """(ModelSettings, None) for the model a run's settings describe, or (None, why not): the ``config`` that
    ``rageval evaluate`` stores (model, backend, base URL, ...), else a packaged model recognised by its id (the
    shipped demo runs: Gemma-3-270M, SmolLM2), with the precision its id names."""
    from rageval.generation import factory

    config = settings.get("config")
    names = {f.name for f in dataclasses.fields(factory.ModelSettings)}
    if isinstance(config, Mapping) and config.get("model"):
        try:
            return factory.ModelSettings(**{k: v for k, v in config.items() if k in names}), None
        except (RagevalError, TypeError) as error:
            return None, f"its recorded model settings are not valid ({error})"
    model_id = str(settings.get("model_id") or "")
    dtype = re.search(r" \[(float32|bfloat16|float16)\]$", model_id)
    for name, id_of in ((factory.DEFAULT_MODEL, "rageval.generation.gemma:gemma_model_id"),
                        (factory.SMOLLM2_MODEL, "rageval.generation.smollm2:smollm2_model_id")):
        module, function = id_of.split(":")
        try:
            import importlib

            packaged = getattr(importlib.import_module(module), function)()
        except (RagevalError, ImportError):
            continue
        if model_id.split(" (", 1)[0] == packaged.split(" (", 1)[0]:
            return factory.ModelSettings(model=name, dtype=dtype.group(1) if dtype else None), None
    return None, (f"the run records no model settings (no 'config' from rageval evaluate) and its model "
                  f"{model_id or '(none)'!r} is not a packaged model")


def _prompt_of(settings: Mapping, path: Path):
    """The QA prompt template the run's answers were made with (settings ``prompt`` and ``prompts``)."""
    from rageval.prompts import QA_FEW_SHOT, FewShotExample, PromptTemplate

    identifier = settings.get("prompt")
    if not identifier or identifier == QA_FEW_SHOT.identifier:
        return QA_FEW_SHOT
    stored: Any = (settings.get("prompts") or {}).get(identifier)
    try:
        template = PromptTemplate(stored["name"], str(stored["version"]), stored["instruction"],
                                  tuple(FewShotExample(**e) for e in stored["examples"]))
    except (KeyError, TypeError) as error:
        raise RagevalError(f"{path}: the run's prompt {identifier!r} is not stored in its settings 'prompts' "
                           f"({error}); its answers cannot be asked for again") from None
    if template.identifier != identifier:
        raise RagevalError(f"{path}: the stored prompt reads as {template.identifier!r}, not {identifier!r}")
    return template


def _decoding_of(settings: Mapping, path: Path) -> DecodingSettings:
    stored = settings.get("decoding") or {}
    try:
        return DecodingSettings(max_new_tokens=int(stored.get("max_new_tokens", 16)),
                                temperature=float(stored.get("temperature", 0.0)),
                                stop=tuple(stored.get("stop", ("\n",))))
    except (TypeError, ValueError) as error:
        raise RagevalError(f"{path}: settings 'decoding': {error}") from None


def read_run_agent(path: str | Path, metric: str | None = None, k: int | None = None,
                   depth: int | None = None) -> RunAgentSource:
    """One run file as an agent (module docstring); a :class:`RagevalError` naming the file for a file that is not
    a run, a run without eRAG labels under the metric, or one whose questions lack gold answers or rankings."""
    from rageval.labelmethods import erag_method
    from rageval.store import read_run

    path = Path(path)
    run = read_run(path)  # StoreError naming the file for anything that is not a readable run
    settings = dict(run.settings)
    metric = metric or settings.get("e2e_metric") or settings.get("label_metric") or "em"
    if metric not in RUN_METRICS:
        raise RagevalError(f"{path}: downstream metric {metric!r} cannot be an IUM utility; expected one of "
                           f"{', '.join(RUN_METRICS)} (--metric)")
    method = erag_method(metric)
    labels = {(x.query_id, x.passage_id): float(x.value) for x in run.labels if x.method == method}
    if not labels:
        held = sorted({x.method for x in run.labels if x.method.startswith("erag:")})
        raise RagevalError(f"{path}: no eRAG labels under {metric} (label method {method}); "
                           + (f"it holds {', '.join(held)} (--metric)" if held else
                              "compute them with `rageval evaluate` or the dashboard's 'compute what this run lacks'"))
    rankings = {r.query_id: r.passage_ids[:depth] if depth else r.passage_ids for r in run.rankings}
    kept = [q for q in run.queries if q.answers and rankings.get(q.query_id)]
    if not kept:
        raise RagevalError(f"{path}: no question has both gold answers and a ranking; IUM scores answers against "
                           "the gold answers")
    passages = {p.passage_id: p for p in run.passages}
    missing = sorted({pid for q in kept for pid in rankings[q.query_id] if pid not in passages})
    if missing:
        raise RagevalError(f"{path}: ranked passage {missing[0]!r} is not in the run's passage table "
                           f"({len(missing)} missing)")
    depth_of_run = max(len(rankings[q.query_id]) for q in kept)
    stored_ks = sorted({o.k for o in run.e2e_outputs})
    if k is None:  # the largest stored E2E k below the depth (the first stage's answers are then stored), else 5
        below = [x for x in stored_ks if x < depth_of_run]
        k = below[-1] if below else min(5, depth_of_run)
    if k < 1:
        raise RagevalError(f"k: expected at least 1, got {k}")
    answers = {(o.query_id, tuple(rankings[o.query_id][:o.k])): o.output for o in run.e2e_outputs
               if o.query_id in rankings and o.k <= len(rankings[o.query_id])}
    model_id = str(settings.get("model_id") or "")
    model_settings, problem = model_settings_of_run(settings)
    name = str(settings.get("name") or path.stem)
    dataset = str(settings.get("dataset") or (kept[0].dataset if kept[0].dataset else "") or "run")
    return RunAgentSource(
        path=path, run_name=name, dataset=dataset, model_id=model_id or "unknown", metric=metric, k=k,
        first_stage=str(settings.get("retriever") or settings.get("retriever_name") or "the run's ranking"),
        queries=kept, candidates={q.query_id: tuple(rankings[q.query_id]) for q in kept},
        passages={pid: passages[pid] for q in kept for pid in rankings[q.query_id]}, labels=labels, answers=answers,
        prompt=_prompt_of(settings, path), decoding=_decoding_of(settings, path), model_settings=model_settings,
        model_problem=problem, dropped_queries=len(run.queries) - len(kept))


class RunModel:
    """A run's own model, loaded through the generator factory on the first prompt that neither the run nor the LLM
    cache answers. Its ``model_id`` is the run's, so the LLM-call cache finds the run's answers without loading
    anything; a model that loads under another id is refused (its answers would not be the run's model's)."""

    def __init__(self, source: RunAgentSource):
        self.source = source
        self._generator: Any = None

    @property
    def model_id(self) -> str:
        return self.source.model_id

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]:
        if not prompts:
            return []
        source = self.source
        lacking = (f"{source.path}: {len(prompts)} answers of this run's model are neither in the run nor in the "
                   f"LLM-call cache")
        if self._generator is None:
            if source.model_problem or source.model_settings is None:
                raise RagevalError(f"{lacking}, and the model cannot be loaded: {source.model_problem}")
            from rageval.generation.factory import load_generator

            try:
                generator = load_generator(source.model_settings)
            except RagevalError as error:
                raise RagevalError(f"{lacking}, and the model cannot be loaded: {error}") from None
            if generator.model_id != source.model_id:
                raise RagevalError(f"{lacking}; the model its settings describe loads as {generator.model_id!r}, "
                                   f"not the run's {source.model_id!r}, so its answers would not be the run's model's")
            self._generator = generator
        try:
            return self._generator.generate(prompts, settings)
        except RagevalError as error:
            raise RagevalError(f"{lacking}, and the model did not answer: {error}") from None


def agent_specs(sources: Sequence[RunAgentSource], log: Log = print) -> list[AgentSpec]:
    """One :class:`AgentSpec` per run: task id = the dataset, model id = the model's short name (distinct models of
    the same short name get a suffix of their id's hash), name ``task/model/metric/k<k>``; a name two runs share
    gets each run's name appended, and every renaming is logged."""
    models: dict[str, set[str]] = {}
    for source in sources:
        models.setdefault(short_model_name(source.model_id), set()).add(source.model_id)
    model_tokens = {}
    for short, ids in models.items():
        for model_id in ids:
            model_tokens[model_id] = short if len(ids) == 1 else \
                f"{short}-{hashlib.sha256(model_id.encode()).hexdigest()[:6]}"
    base = [f"{_token_safe(s.dataset)}/{model_tokens[s.model_id]}/{s.metric}/k{s.k}" for s in sources]
    names = []
    for source, name in zip(sources, base):
        if base.count(name) > 1:
            renamed = f"{name}@{source.run_name}"
            while renamed in names:
                renamed += "'"
            log(f"agent name {name} is shared by {base.count(name)} runs: {source.path.name} is {renamed}")
            name = renamed
        names.append(name)
    return [AgentSpec(name, s.dataset, _token_safe(s.dataset), model_tokens[s.model_id], s.k, RUN_METRICS[s.metric])
            for s, name in zip(sources, names)]


def check_distinct(sources: Sequence[RunAgentSource]) -> None:
    """One :class:`RagevalError` naming both files when two runs are the same agent on the same data."""
    seen: dict[str, Path] = {}
    for source in sources:
        identity = source.identity()
        if identity in seen:
            raise RagevalError(f"{source.path}: the same agent as {seen[identity]} (dataset {source.dataset}, model "
                               f"{source.model_id}, metric {source.metric}, k = {source.k}, the same questions and "
                               "first-stage lists); give each run once")
        seen[identity] = source.path


def build_run_agents(sources: Sequence[RunAgentSource], cache, log: Log = print,
                     generators: Mapping[str, object] | None = None) -> list[Agent]:
    """The agents of ``sources``: each asks its run's stored labels and answers first, then the LLM-call ``cache``,
    then its run's model (:class:`RunModel`; ``generators`` maps a run's model id to a ready generator instead:
    tests)."""
    from rageval.erag.labels import prompt_builder
    from rageval.generation.cache import CachedGenerator

    specs = agent_specs(sources, log)
    agents = []
    for spec, source in zip(specs, sources):
        model = (generators or {}).get(source.model_id) or RunModel(source)
        generator = CachedGenerator(model, cache)  # type: ignore[arg-type]
        agents.append(Agent(spec, generator, prompt_builder(generator, source.prompt),  # type: ignore[arg-type]
                            source.decoding, known_feedback=source.labels, known_answers=source.answers))
    return agents


def _prepare(paths: Sequence[str | Path], split: RunSplit, cache, metric: str | None, k: int | None,
             depth: int | None, log: Log, generators: Mapping[str, object] | None, first_labels: int | None):
    """The runs as agents (:func:`read_run_agent`, :func:`build_run_agents`), each agent's training and test
    questions, the first-stage candidates per agent, every passage by id, and offline iteration 1's feedback (every
    stored label of the training questions' candidates, or of their first ``first_labels``); one error naming the
    file(s) for runs that cannot be agents together."""
    if first_labels is not None and first_labels < 1:
        raise RagevalError(f"first labels: expected at least 1, got {first_labels}")
    if not paths:
        raise RagevalError("--runs: expected at least one run file")
    sources = [read_run_agent(p, metric, k, depth) for p in paths]
    check_distinct(sources)
    agents = build_run_agents(sources, cache, log, generators)
    train: dict[str, list[Query]] = {}
    test: dict[str, list[Query]] = {}
    for agent, source in zip(agents, sources):
        train[agent.name], test[agent.name] = split_questions(source.queries, agent.spec.task_id, split)
        if not train[agent.name] or not test[agent.name]:
            raise RagevalError(f"{source.path}: {len(source.queries)} questions give {len(train[agent.name])} "
                               f"training and {len(test[agent.name])} test questions at test share "
                               f"{split.test_share}; IUM needs both")
        log(f"{agent.name} ({source.path.name}): {len(train[agent.name])} training / {len(test[agent.name])} test "
            f"questions, {len(source.labels):,} stored labels, first stage {source.first_stage}")
    candidates = AgentCandidates({a.name: s.candidates for a, s in zip(agents, sources)})
    passages: dict[str, Passage] = {}
    owner: dict[str, Path] = {}
    for source in sources:
        for pid, passage in source.passages.items():
            if pid in passages and (passages[pid].title, passages[pid].text) != (passage.title, passage.text):
                raise RagevalError(f"{source.path}: passage {pid!r} is not the passage of that id in {owner[pid]} "
                                   "(another title or text); IUM serves one passage per id, so the runs must agree")
            passages.setdefault(pid, passage)
            owner.setdefault(pid, source.path)
    return sources, agents, train, test, candidates, passages, _stored_first_feedback(agents, sources, train,
                                                                                      first_labels)


def run_ium_over_runs(paths: Sequence[str | Path], config: IumConfig, split: RunSplit = RunSplit(), *,
                      cache, metric: str | None = None, k: int | None = None, depth: int | None = None,
                      first_labels: int | None = None, name: str = "ium-runs",
                      log: Log = print, command: str = "", checkpoints: Path | None = None,
                      generators: Mapping[str, object] | None = None) -> IumResult:
    """IUM with one agent per run file (module docstring): offline IUM (personalised and not), the one-round
    baselines and online IUM over each run's own first-stage lists, evaluated on each agent's test questions; the
    same tables as :func:`rageval.ium.experiment.run_ium`, settings ``source = "runs"`` naming the runs.
    ``metric`` / ``k`` / ``depth``: the utility, passages read and first-stage depth of every agent (default: each
    run's own; :func:`read_run_agent`); ``config.first_stage_depth`` is not used (the runs' rankings are the first
    stage). ``first_labels``: offline iteration 1 learns from the stored labels of each training question's first
    ``first_labels`` candidates only (default: all; the ablation of "every cached label")."""
    started = time.perf_counter()
    sources, agents, train, test, candidates, passages, first_feedback = _prepare(
        paths, split, cache, metric, k, depth, log, generators, first_labels)
    served, feedback_frames, trained_on_rows = train_and_serve(
        agents, train, test, candidates, passages, config, first_stage=FIRST_STAGE, first_feedback=first_feedback,
        log=log, checkpoints=checkpoints, started=started)
    outcomes = answer_outcomes(agents, test, served, passages, log)
    log(f"outcomes: {len(outcomes)} answers ({time.perf_counter() - started:.0f} s)")
    first_rows = {a.name: sum(row.agent == a.name for row in first_feedback) for a in agents}
    calls = {a.name: {"stored_labels": first_rows[a.name] + a.stored_feedback, "stored_answers": a.stored_answers,
                      "cache_hits": a.generator.hits, "new_calls": a.generator.misses} for a in agents}
    settings = {
        "kind": "ium", "source": "runs", "command": command,
        "runs": [{"agent": a.name, "path": str(s.path.resolve()), "file": s.path.name, "name": s.run_name,
                  "dataset": s.dataset, "model_id": s.model_id, "metric": s.metric, "k": s.k,
                  "first_stage": s.first_stage, "questions": len(s.queries), "train": len(train[a.name]),
                  "test": len(test[a.name]), "labels": len(s.labels), "dropped_questions": s.dropped_queries}
                 for a, s in zip(agents, sources)],
        "plan": {"name": name, "agents": [dataclasses.asdict(a.spec) for a in agents],
                 "num_train": _range(len(train[a.name]) for a in agents),
                 "num_test": _range(len(test[a.name]) for a in agents),
                 "split": dataclasses.asdict(split), "depth": depth, "config": dataclasses.asdict(config)},
        "generators": {a.name: a.generator.model_id for a in agents},
        "first_stage": "each run's own ranking (" + "; ".join(sorted({s.first_stage for s in sources})) + ")",
        "dense": None, "online_default_batch_size": config.online_batch_sizes[0],
        "warm_start": config.init, "llm_calls": calls, "first_labels": first_labels,
        "feedback": ("offline iteration 1: every eRAG label the runs hold on the training questions" if first_labels
                     is None else f"offline iteration 1: the stored eRAG labels of each training question's first "
                     f"{first_labels} candidates") + "; later feedback and every answer: the run's stored ones, then "
                    "the LLM-call cache, then the run's model",
        "seconds": round(time.perf_counter() - started, 1),
    }
    return assemble_result(settings, agents, train, test, served, outcomes, feedback_frames, trained_on_rows,
                           agent_columns={a.name: {"run": s.path.name, "first_stage": s.first_stage}
                                          for a, s in zip(agents, sources)})


def _stored_first_feedback(agents: Sequence[Agent], sources: Sequence[RunAgentSource],
                           train: Mapping[str, Sequence[Query]], first_labels: int | None) -> list[FeedbackRow]:
    """Offline iteration 1's feedback: the stored label of every training question's candidates (its first
    ``first_labels`` only, when given)."""
    return [FeedbackRow(agent.name, q.query_id, pid, source.labels[(q.query_id, pid)])
            for agent, source in zip(agents, sources) for q in train[agent.name]
            for pid in source.candidates[q.query_id][:first_labels] if (q.query_id, pid) in source.labels]


@dataclass
class LabelAblation:
    """Offline IUM scored by the runs' stored eRAG labels (:func:`label_ablation`): ``outcomes`` has the columns of
    an IUM run's outcomes (method, agent, query_id, score), ``agents`` name, dataset and task_id."""

    settings: dict
    outcomes: Any  # pandas.DataFrame
    agents: Any  # pandas.DataFrame


def label_ablation(paths: Sequence[str | Path], config: IumConfig, split: RunSplit = RunSplit(), *, cache,
                   metric: str | None = None, k: int | None = None, depth: int | None = None,
                   first_labels: int | None = None, log: Log = print, command: str = "",
                   checkpoints: Path | None = None, generators: Mapping[str, object] | None = None) -> LabelAblation:
    """Offline IUM (personalised, T = ``config.iterations``) trained exactly as :func:`run_ium_over_runs` trains
    it, but scored without answering: each test question's served top k is scored by the eRAG labels of its
    passages, score = (1/k) Σ_{d in top k} G_q[d] (the per-passage utility IUM learns from; eRAG's precision@k).
    Runs whose every candidate is labelled (the shipped demo runs) need no model call at all, so an arm of an
    ablation (another warm start, fewer stored labels) costs only its training; the same checkpoints as the full
    run are used, so the recipe's arm retrains nothing after ``rageval ium --runs``. Methods: ``first-stage`` and
    ``offline-IUM@t1`` .. ``@tT``."""
    import pandas as pd

    from rageval.ium.learning import SearchEngine, collect_feedback, offline_ium

    started = time.perf_counter()
    sources, agents, train, test, candidates, passages, first_feedback = _prepare(
        paths, split, cache, metric, k, depth, log, generators, first_labels)
    iterations = offline_ium(agents, train, candidates, passages, config, personalised=True, log=log,
                             checkpoints=checkpoints, first_feedback=first_feedback)
    engines = {FIRST_STAGE: SearchEngine(candidates, passages),
               **{f"offline-IUM@t{it.number}": SearchEngine(candidates, passages, it.model, True) for it in iterations}}
    rows = []
    for method, engine in engines.items():
        for agent in agents:
            lists = engine.serve(agent.spec, test[agent.name], agent.spec.k)
            rows += [(method, agent.name, row.query_id, row.utility / agent.spec.k)
                     for row in collect_feedback(agent, test[agent.name], lists, passages)]
    outcomes = (pd.DataFrame(rows, columns=["method", "agent", "query_id", "score"])
                .groupby(["method", "agent", "query_id"], as_index=False).score.sum())
    log(f"label ablation: {len(outcomes)} scored lists ({time.perf_counter() - started:.0f} s)")
    settings = {"kind": "ium-label-ablation", "command": command, "config": dataclasses.asdict(config),
                "split": dataclasses.asdict(split), "first_labels": first_labels,
                "first_feedback_rows": len(first_feedback),
                "first_feedback_positive": sum(r.utility > 0 for r in first_feedback),
                "runs": [str(s.path.resolve()) for s in sources],
                "score": "mean eRAG label of the served top k (eRAG precision@k)",
                "new_calls": sum(a.generator.misses for a in agents),
                "seconds": round(time.perf_counter() - started, 1)}
    agents_frame = pd.DataFrame([{"name": a.name, "dataset": a.spec.dataset, "task_id": a.spec.task_id}
                                 for a in agents])
    return LabelAblation(settings, outcomes, agents_frame)


def write_label_ablation(result: LabelAblation, path: str | Path) -> Path:
    """``result`` as one JSON file (settings, agents, outcomes), written to a temporary file and renamed."""
    import json

    from rageval.store.files import write_text_atomically

    return write_text_atomically(path, json.dumps({"settings": result.settings,
                                                   "agents": result.agents.to_dict("records"),
                                                   "outcomes": result.outcomes.values.tolist()}, indent=1))


def label_ablation_table(ablation: LabelAblation):
    """The mean score of each agent (rows) under each method (columns) of a label ablation, rounded to 3 places."""
    return ablation.outcomes.groupby(["method", "agent"]).score.mean().unstack("method").round(3)


def build_ium_run_over_runs(paths: Sequence[str | Path], config: IumConfig, split: RunSplit, out_path: Path, *,
                            cache_path: Path | None = None, **options) -> IumResult:
    """``rageval ium --runs``: :func:`run_ium_over_runs` (``options`` are its keyword arguments) through the
    LLM-call cache at ``cache_path`` (default: the user cache), stored as an IUM run file at ``out_path``."""
    from rageval.generation.cache import LLMCache
    from rageval.ium.experiment import write_ium_run

    with LLMCache(cache_path) if cache_path else LLMCache() as cache:
        result = run_ium_over_runs(paths, config, split, cache=cache, **options)
    write_ium_run(result, out_path)
    return result


def build_label_ablation(paths: Sequence[str | Path], config: IumConfig, split: RunSplit, out_path: Path, *,
                         cache_path: Path | None = None, **options) -> LabelAblation:
    """``rageval ium --runs ... --label-ablation OUT``: :func:`label_ablation` (``options`` are its keyword
    arguments) through the LLM-call cache at ``cache_path`` (default: the user cache), written to ``out_path`` by
    :func:`write_label_ablation`."""
    from rageval.generation.cache import LLMCache

    with LLMCache(cache_path) if cache_path else LLMCache() as cache:
        ablation = label_ablation(paths, config, split, cache=cache, **options)
    write_label_ablation(ablation, out_path)
    return ablation


def read_label_ablation(path: str | Path) -> LabelAblation:
    """A file :func:`write_label_ablation` wrote; one :class:`RagevalError` naming it when it is not one."""
    import json

    import pandas as pd

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        settings = data["settings"]
        if settings.get("kind") != "ium-label-ablation":
            raise ValueError(f"kind {settings.get('kind')!r}")
        outcomes = pd.DataFrame(data["outcomes"], columns=["method", "agent", "query_id", "score"])
        agents = pd.DataFrame(data["agents"], columns=["name", "dataset", "task_id"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise RagevalError(f"{path}: not an IUM label-ablation file ({error})") from None
    return LabelAblation(settings, outcomes, agents)


def _range(values) -> str:
    values = sorted(values)
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}-{values[-1]}"
