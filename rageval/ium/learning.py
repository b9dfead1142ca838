"""The search engine of IUM and how it learns from its agents (Salemi & Zamani, ICTIR 2025, §4; SPEC §4; issue 6).

Search engine: BM25 top ``first_stage_depth`` candidates per query, re-scored by a MiniLM cross-encoder

    p(R = 1 | x, d) = σ(ENC(tid; mid; x; d) · W)

where the task id and model id are tokens added to the tokenizer (``[task:nq]``, ``[model:gemma]``); a
non-personalised engine reads the query alone. The top k by score are served (ties by passage id).

**Offline IUM** (Algorithm 1, pointwise Eq. 4): for t = 1..T, every agent sends its training queries, the engine of
iteration t - 1 serves its top ``train_k``, the agent returns per-passage feedback, and the model is trained on that
iteration's feedback of all agents with binary cross-entropy (labels f ∈ [0, 1]), continuing from θ^{t-1}. For 10%
of the training samples both ids are replaced by ``[task:unk]`` / ``[model:unk]``. θ^0 has an untrained head (or, with
``IumConfig.init``, is a saved cross-encoder such as the NQ reranker with the id tokens added: a warm start), so the
first iteration is served by the first stage (BM25 order). Agents built from run files
(:mod:`rageval.ium.run_file_agents`) bring their feedback for iteration 1: every eRAG label the run already holds on the
training queries' candidates (``first_feedback``), and each agent its own first-stage lists
(:class:`AgentCandidates`).

**Online IUM**: per agent, its test queries are served in order in batches of b by the current parameters; after
each batch the agent's feedback on what it was served is added to its history and the model is retrained from the
offline checkpoint on the whole history (ids kept, no ``unk``). A query is therefore never served by parameters
that saw its own feedback: :attr:`OnlineResult.trained_on` records, per query, the queries whose feedback the serving
parameters had seen.

**Baselines** (from §5.2, after Salemi & Zamani, SIGIR 2024): a reranker per agent, per dataset, and uRAG (one
reranker for all agents, with their ids) each trained once on one round of feedback on BM25 lists.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rageval.ium.agents import Agent, AgentSpec
from rageval.types import Passage, Query

UNK_TASK, UNK_MODEL = "[task:unk]", "[model:unk]"
Log = Callable[[str], None]


def id_tokens(spec: AgentSpec) -> tuple[str, str]:
    return f"[task:{spec.task_id}]", f"[model:{spec.model_id}]"


def special_tokens(specs: Sequence[AgentSpec]) -> tuple[str, ...]:
    """Every id token of ``specs`` and the two ``unk`` tokens, in a stable order."""
    tokens = [t for spec in specs for t in id_tokens(spec)] + [UNK_TASK, UNK_MODEL]
    return tuple(dict.fromkeys(tokens))


def engine_text(query_text: str, spec: AgentSpec | None, unk: bool = False) -> str:
    """The engine's text_a: ``tid mid x`` for a personalised engine, ``x`` alone when ``spec`` is None."""
    if spec is None:
        return query_text
    task, model = (UNK_TASK, UNK_MODEL) if unk else id_tokens(spec)
    return f"{task} {model} {query_text}"


@dataclass(frozen=True)
class IumConfig:
    """Sizes and hyper-parameters; the paper's values are in brackets (first stage 100, k = 32 offline, T = 3,
    lr 1e-5 for 2 epochs, batch 512, b = 256): ours are smaller to fit a 2-core CPU (docs/results.md)."""

    first_stage_depth: int = 30
    train_k: int = 5
    iterations: int = 2
    unk_rate: float = 0.1
    epochs: int = 2
    lr: float = 1e-4
    batch_size: int = 16
    trainable_layers: int | None = 2
    max_length: int = 256
    online_batch_sizes: tuple[int, ...] = (10, 20)
    seed: int = 0
    #: the encoder an untrained engine starts from (a local Hugging Face folder; None: all-MiniLM-L6-v2)
    encoder: str | None = None
    #: warm start: a saved cross-encoder folder (``CrossEncoder.save``, e.g. the NQ reranker ``rageval
    #: train-reranker`` caches) the engine starts from instead of an untrained head; its max_length and pooling win
    init: str | None = None
    #: train the embedding rows of the task/model id tokens too (with ``trainable_layers``, the embeddings are
    #: otherwise frozen, so the ids keep their random N(0, 0.02²) start vectors)
    train_id_tokens: bool = False

    def digest_fields(self) -> dict:
        """The fields that decide training (the optional ones only when set, so older checkpoints keep their keys)."""
        values = asdict(self)
        return {k: v for k, v in values.items()
                if not ((k in ("encoder", "init") and v is None) or (k == "train_id_tokens" and not v))}


class AgentCandidates(dict):
    """First-stage candidates per agent: ``{agent name: {query id: candidate ids, best first}}``, for agents that each
    bring their own lists (run files); a plain ``{query id: candidate ids}`` mapping is shared by every agent."""


def candidates_of(candidates: Mapping, spec: AgentSpec, query_id: str) -> Sequence[str]:
    """The first-stage candidates of ``query_id`` as served to the agent of ``spec``."""
    if isinstance(candidates, AgentCandidates):
        return candidates[spec.name][query_id]
    return candidates[query_id]


class SearchEngine:
    """First-stage candidates (``candidates[query_id]``, best first) re-scored by ``model`` (a CrossEncoder), or
    served in first-stage order when ``model`` is None."""

    def __init__(self, candidates: Mapping[str, Sequence[str]], passages: Mapping[str, Passage], model=None,
                 personalised: bool = True):
        self.candidates = candidates
        self.passages = passages
        self.model = model
        self.personalised = personalised

    def serve(self, spec: AgentSpec, queries: Sequence[Query], k: int) -> dict[str, tuple[str, ...]]:
        """The top ``k`` passage ids for each query, as served to the agent of ``spec``."""
        if self.model is None:
            return {q.query_id: tuple(candidates_of(self.candidates, spec, q.query_id)[:k]) for q in queries}
        pairs, owners = [], []
        for q in queries:
            text = engine_text(q.text, spec if self.personalised else None)
            for pid in candidates_of(self.candidates, spec, q.query_id):
                pairs.append((text, self.passages[pid].as_document()))
                owners.append((q.query_id, pid))
        scores = self.model.score_pairs(pairs)
        ranked: dict[str, list[tuple[float, str]]] = {q.query_id: [] for q in queries}
        for (qid, pid), score in zip(owners, scores):
            ranked[qid].append((score, pid))
        return {qid: tuple(pid for _, pid in sorted(items, key=lambda item: (-item[0], item[1]))[:k])
                for qid, items in ranked.items()}


@dataclass(frozen=True)
class FeedbackRow:
    agent: str
    query_id: str
    passage_id: str
    utility: float


def collect_feedback(agent: Agent, queries: Sequence[Query], lists: Mapping[str, Sequence[str]],
                     passages: Mapping[str, Passage]) -> list[FeedbackRow]:
    """The agent's per-passage feedback on the lists it was served."""
    requests = [(q, [passages[pid] for pid in lists[q.query_id]]) for q in queries]
    return [FeedbackRow(agent.name, q.query_id, pid, utility)
            for q, labels in zip(queries, agent.feedback(requests)) for pid, utility in labels]


def training_examples(rows: Sequence[FeedbackRow], specs: Mapping[str, AgentSpec], queries: Mapping,
                      passages: Mapping[str, Passage], personalised: bool, unk_rate: float,
                      rng: random.Random) -> list[tuple[str, str, float]]:
    """(engine text, passage document, feedback) triples; with probability ``unk_rate`` both ids become ``unk``.
    ``queries``: by ``(agent name, query id)`` (:func:`queries_by_agent`: agents from run files may use one id for
    different questions) or by query id."""
    examples = []
    for row in rows:
        spec = specs[row.agent] if personalised else None
        unk = personalised and rng.random() < unk_rate
        query = queries.get((row.agent, row.query_id)) or queries[row.query_id]
        examples.append((engine_text(query.text, spec, unk), passages[row.passage_id].as_document(),
                         float(row.utility)))
    return examples


def queries_by_agent(queries: Mapping[str, Sequence[Query]]) -> dict[tuple[str, str], Query]:
    """``{(agent name, query id): query}`` of ``{agent name: queries}``."""
    return {(name, q.query_id): q for name, qs in queries.items() for q in qs}


def new_model(tokens: Sequence[str], config: IumConfig, model_id: str):
    """The engine before training, with ``tokens`` added as special tokens (seeded): a MiniLM cross-encoder (or
    ``config.encoder``) with a fresh head, or the saved cross-encoder ``config.init`` (a warm start)."""
    from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings, add_special_tokens, minilm_path

    start: dict = {"start": model_id, "tokens": list(tokens), "seed": config.seed, "max_length": config.max_length}
    if config.init:
        model = add_special_tokens(CrossEncoder.load(config.init), tokens, seed=config.seed)
        model.model_id = model_id
        start["init"] = saved_model_digest(Path(config.init))
    else:
        settings = CrossEncoderSettings(max_length=config.max_length, pooling="mean", special_tokens=tuple(tokens))
        model = CrossEncoder.from_encoder(config.encoder or minilm_path(), settings, model_id=model_id,
                                          seed=config.seed)
        if config.encoder:
            start["encoder"] = saved_model_digest(Path(config.encoder))
    model.lineage = _digest(start)
    return model


def saved_model_digest(folder: Path) -> str:
    """sha256 over a model folder's files (names and contents): what a checkpoint trained from it is keyed on."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def fit(model, examples: Sequence[tuple[str, str, float]], config: IumConfig, seed: int,
        checkpoints: Path | None = None):
    """Train ``model`` on ``examples`` (pointwise BCE) and return the trained model (``model`` itself, trained in
    place, unless a checkpoint was loaded).

    With ``checkpoints`` (a folder), the trained model is saved there under a key of everything that produced it
    (the start model's lineage, the examples, the hyper-parameters, the seed) and loaded instead of retrained when
    that key exists: a killed run resumes its training where it stopped.
    """
    from rageval.retrieval.rerank import CrossEncoder, train_cross_encoder

    lineage = _digest({"parent": getattr(model, "lineage", None), "examples": [list(e) for e in examples],
                       "config": config.digest_fields(), "seed": seed})
    saved = checkpoints / f"ium-{lineage[:16]}" if checkpoints is not None and hasattr(model, "lineage") else None
    if saved is not None and saved.is_dir():
        trained = CrossEncoder.load(saved, batch_size=model.batch_size, device=model.device)
    else:
        trained, _ = train_cross_encoder(model, examples, epochs=config.epochs, lr=config.lr,
                                         batch_size=config.batch_size, seed=seed,
                                         trainable_layers=config.trainable_layers,
                                         train_special_tokens=config.train_id_tokens)
        if saved is not None:
            trained.save(saved)
    trained.lineage = lineage
    return trained


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Iteration:
    """One offline IUM iteration: the feedback it collected and the model it produced (a CrossEncoder)."""

    number: int
    feedback: list[FeedbackRow]
    model: object


def offline_ium(agents: Sequence[Agent], train_queries: Mapping[str, Sequence[Query]],
                candidates: Mapping[str, Sequence[str]], passages: Mapping[str, Passage], config: IumConfig,
                personalised: bool = True, log: Log = lambda message: None,
                checkpoints: Path | None = None, first_feedback: Sequence[FeedbackRow] | None = None
                ) -> list[Iteration]:
    """Algorithm 1: T iterations of serve → feedback from every agent → retrain (module docstring); trained models
    are kept in ``checkpoints`` (see :func:`fit`). ``first_feedback``: iteration 1's feedback as given (the labels
    run files hold) instead of collected on the first stage's top ``train_k``."""
    specs = {a.name: a.spec for a in agents}
    queries = queries_by_agent(train_queries)
    tokens = special_tokens(list(specs.values())) if personalised else ()
    label = "personalised" if personalised else "non-personalised"
    model = new_model(tokens, config, f"ium-offline-{label}")
    serving = None
    iterations = []
    for number in range(1, config.iterations + 1):
        engine = SearchEngine(candidates, passages, serving, personalised)
        rows: list[FeedbackRow] = []
        if number == 1 and first_feedback is not None:
            rows = list(first_feedback)
        else:
            for agent in agents:
                lists = engine.serve(agent.spec, train_queries[agent.name], config.train_k)
                rows += collect_feedback(agent, train_queries[agent.name], lists, passages)
        examples = training_examples(rows, specs, queries, passages, personalised,
                                     config.unk_rate if personalised else 0.0, random.Random(config.seed + number))
        model = fit(model, examples, config, config.seed + number, checkpoints)
        serving = copy.deepcopy(model)
        serving.model_id = f"ium-offline-{label}-t{number}"
        iterations.append(Iteration(number, rows, serving))
        positive = sum(r.utility > 0 for r in rows)
        log(f"offline IUM ({label}) t={number}: {len(rows)} feedback rows, {positive} positive")
    return iterations


@dataclass
class OnlineResult:
    """What Online IUM served one agent: lists per test query, and the queries whose feedback the serving
    parameters had been trained on (per served query)."""

    batch_size: int
    served: dict[str, tuple[str, ...]] = field(default_factory=dict)
    trained_on: dict[str, tuple[str, ...]] = field(default_factory=dict)
    feedback: list[FeedbackRow] = field(default_factory=list)
    retrains: int = 0


def online_ium(agent: Agent, test_queries: Sequence[Query], start_model, candidates: Mapping[str, Sequence[str]],
               passages: Mapping[str, Passage], batch_size: int, config: IumConfig) -> OnlineResult:
    """Serve ``test_queries`` in order in batches of ``batch_size``; retrain after each batch (module docstring)."""
    if batch_size < 1:
        raise ValueError(f"online batch size must be at least 1, got {batch_size}")
    specs = {agent.name: agent.spec}
    queries = queries_by_agent({agent.name: test_queries})
    result = OnlineResult(batch_size)
    seen: tuple[str, ...] = ()
    model = start_model
    for start in range(0, len(test_queries), batch_size):
        batch = list(test_queries[start:start + batch_size])
        lists = SearchEngine(candidates, passages, model, personalised=True).serve(agent.spec, batch, agent.spec.k)
        for q in batch:
            result.served[q.query_id] = lists[q.query_id]
            result.trained_on[q.query_id] = seen
        result.feedback += collect_feedback(agent, batch, lists, passages)
        if start + batch_size < len(test_queries):
            examples = training_examples(result.feedback, specs, queries, passages, True, 0.0, random.Random(0))
            model = fit(copy.deepcopy(start_model), examples, config, config.seed + start)
            seen = tuple(dict.fromkeys(row.query_id for row in result.feedback))
            result.retrains += 1
    return result


def train_baselines(agents: Sequence[Agent], rows: Sequence[FeedbackRow], train_queries: Mapping[str, Sequence[Query]],
                    passages: Mapping[str, Passage], config: IumConfig,
                    log: Log = lambda message: None, checkpoints: Path | None = None
                    ) -> dict[str, dict[str, tuple[object, bool]]]:
    """Rerankers from one round of feedback: per agent, per dataset (non-personalised), uRAG (all agents, with ids).

    Returns ``{method: {agent name: (model, personalised)}}``.
    """
    specs = {a.name: a.spec for a in agents}
    queries = queries_by_agent(train_queries)

    def train(selected: Sequence[FeedbackRow], personalised: bool, model_id: str):
        tokens = special_tokens(list(specs.values())) if personalised else ()
        examples = training_examples(selected, specs, queries, passages, personalised, 0.0, random.Random(0))
        model = fit(new_model(tokens, config, model_id), examples, config, config.seed, checkpoints)
        log(f"{model_id}: {len(examples)} examples")
        return model

    methods: dict[str, dict[str, tuple[object, bool]]] = {"reranker-individual": {}, "reranker-dataset": {},
                                                           "uRAG": {}}
    for agent in agents:
        methods["reranker-individual"][agent.name] = (
            train([r for r in rows if r.agent == agent.name], False, f"reranker-individual-{agent.name}"), False)
    for dataset in dict.fromkeys(a.spec.dataset for a in agents):
        members = {a.name for a in agents if a.spec.dataset == dataset}
        model = train([r for r in rows if r.agent in members], False, f"reranker-dataset-{dataset}")
        for name in members:
            methods["reranker-dataset"][name] = (model, False)
    shared = train(rows, True, "uRAG")
    for agent in agents:
        methods["uRAG"][agent.name] = (shared, True)
    return methods
