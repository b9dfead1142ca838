"""eRAG: per-document utility labels from the RAG LLM itself (Salemi & Zamani, SIGIR 2024).

For a query q with ranked list R_k, the RAG LLM M and the downstream metric E (exact match here), each
document is given to M *alone* and the output is scored against the ground truth y:

    G_q[d] = E(M(q, {d}), y)        for every d in R_k            (eRAG, Eq. 1)

These labels are relevance judgments: any IR measure (P, R, AP, RR, nDCG, Hit) aggregates them into one score
per ranked list. The end-to-end (E2E) score E(M(q, R_k), y) uses the whole list in one prompt (in-prompt
augmentation); eRAG's claim is that its measures correlate with E2E better than the classic labels do.

Labels depend only on (query, document, model, prompt, decoding, metric), so the LLM calls go through the
content-addressed LLM-call cache: re-ranking or re-running a list whose documents were already judged costs
no new LLM call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from rageval.generation.base import DecodingSettings, Generator
from rageval.measures import compute_measures
from rageval.prompts import QA_FEW_SHOT, RELEVANCE_FEW_SHOT, PromptTemplate, build_qa_prompt, build_relevance_prompt, parse_yes_no
from rageval.store import DocOutput, E2EOutput, Label, LabelEvidence, MeasureValue, labels_as_qrels
from rageval.text_metrics import answer_accuracy, contains_answer, exact_match, rouge_l, token_f1
from rageval.types import Passage, Query, Ranking

#: Downstream metrics E(output, gold answers) -> [0, 1], by the name stored in run settings and label methods.
#: All are maxima over the gold answers; ``bertscore`` (MiniLM, :mod:`rageval.bertscore`) loads a model, so it
#: is scored in bulk by :func:`score_outputs`.
DOWNSTREAM_METRICS: Mapping[str, Callable[[str, Sequence[str]], float]] = {
    "em": exact_match,
    "f1": token_f1,
    "accuracy": answer_accuracy,
    "rougeL": rouge_l,
}
MODEL_METRICS = ("bertscore",)
ALL_METRICS = tuple(DOWNSTREAM_METRICS) + MODEL_METRICS
#: Metrics whose labels are 0/1 (so every measure accepts them); the others give graded labels in [0, 1].
BINARY_METRICS = ("em", "accuracy")

#: The label methods a run stores, scored with the same measures: eRAG and the classic baselines.
GOLD = "gold"
GOLD_PAGE = "gold_page"
CONTAINS_ANSWER = "contains_answer"
LLM_RELEVANCE = "llm_relevance"

_BERT_SCORER = None


def score_outputs(metric: str, outputs: Sequence[str], answers: Sequence[Sequence[str]]) -> list[float]:
    """E(output_i, answers_i) for every i, with the downstream metric called ``metric`` (see :data:`ALL_METRICS`)."""
    global _BERT_SCORER
    if metric in DOWNSTREAM_METRICS:
        function = DOWNSTREAM_METRICS[metric]
        return [function(output, gold) for output, gold in zip(outputs, answers)]
    if metric == "bertscore":
        if _BERT_SCORER is None:
            from rageval.bertscore import BertScorer

            _BERT_SCORER = BertScorer()
        return _BERT_SCORER.score_many(outputs, answers)
    raise ValueError(f"unknown downstream metric {metric!r}; choose one of {', '.join(ALL_METRICS)}")

ProgressCallback = Callable[[int, int], None]  # (done, total)


def erag_method(metric: str) -> str:
    """The label-method name of eRAG labels made with ``metric``, e.g. ``"erag:em"``."""
    return f"erag:{metric}"


@dataclass(frozen=True)
class EragSettings:
    """What decides an eRAG run's LLM calls and labels (stored with the run)."""

    k: int = 10
    metric: str = "em"
    decoding: DecodingSettings = field(default_factory=DecodingSettings)
    batch_size: int = 8
    cutoffs: tuple[int, ...] = (1, 5, 10)
    prompt: PromptTemplate = QA_FEW_SHOT

    def prompt_builder(self, generator: Generator) -> Callable[[str, Sequence[Passage]], str]:
        """:func:`prompt_builder` with this run's QA prompt template."""
        return prompt_builder(generator, self.prompt)

    def __post_init__(self):
        if self.metric not in ALL_METRICS:
            raise ValueError(f"unknown downstream metric {self.metric!r}; choose one of {', '.join(ALL_METRICS)}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")


def generate_in_batches(generator: Generator, prompts: Sequence[str], decoding: DecodingSettings,
                        batch_size: int, on_progress: ProgressCallback | None = None) -> list[str]:
    """Outputs of ``generator`` for ``prompts`` in order, in batches, reporting progress after each batch."""
    outputs: list[str] = []
    for start in range(0, len(prompts), batch_size):
        outputs.extend(generator.generate(prompts[start:start + batch_size], decoding))
        if on_progress is not None:
            on_progress(len(outputs), len(prompts))
    return outputs


def _top_k(ranking: Ranking, k: int) -> tuple[str, ...]:
    return ranking.passage_ids[:k]


def prompt_builder(generator: Generator, template: PromptTemplate = QA_FEW_SHOT
                   ) -> Callable[[str, Sequence[Passage]], str]:
    """How to ask ``generator`` a question with passages: its own ``build_prompt`` when it has one (a FiD
    reader encodes each passage separately), else the few-shot in-prompt augmentation of ``rageval.prompts``
    with ``template``."""
    own = getattr(generator, "build_prompt", None)
    if own:
        return own
    if template is QA_FEW_SHOT:
        return build_qa_prompt
    return lambda question, passages: build_qa_prompt(question, passages, template)


def compute_erag_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                        passages: Mapping[str, Passage], generator: Generator, settings: EragSettings,
                        on_progress: ProgressCallback | None = None) -> tuple[list[DocOutput], list[Label]]:
    """eRAG labels G_q[d] = E(M(q, {d}), y) for the top-k of every query's ranking, with the outputs M(q, {d})."""
    pairs = [(q, pid) for q in queries for pid in _top_k(rankings[q.query_id], settings.k)]
    build = settings.prompt_builder(generator)
    prompts = [build(q.text, [passages[pid]]) for q, pid in pairs]
    outputs = generate_in_batches(generator, prompts, settings.decoding, settings.batch_size, on_progress)
    doc_outputs = [DocOutput(q.query_id, pid, out) for (q, pid), out in zip(pairs, outputs)]
    return doc_outputs, metric_labels(doc_outputs, {q.query_id: q for q in queries}, [settings.metric])


def metric_labels(doc_outputs: Sequence[DocOutput], queries: Mapping[str, Query], metrics: Sequence[str]
                  ) -> list[Label]:
    """eRAG labels of the same single-passage outputs under each downstream metric (no new LLM call):
    method ``erag:<metric>``, value E(M(q, {d}), y)."""
    labels: list[Label] = []
    answers = [queries[o.query_id].answers for o in doc_outputs]
    for metric in metrics:
        values = score_outputs(metric, [o.output for o in doc_outputs], answers)
        labels.extend(Label(erag_method(metric), o.query_id, o.passage_id, float(v))
                      for o, v in zip(doc_outputs, values))
    return labels


def compute_e2e(queries: Sequence[Query], rankings: Mapping[str, Ranking], passages: Mapping[str, Passage],
                generator: Generator, settings: EragSettings,
                on_progress: ProgressCallback | None = None, k: int | None = None) -> list[E2EOutput]:
    """End-to-end outputs M(q, R_k) (the whole top-k in one prompt, best first) and their score E(., y), at
    ``k`` (default ``settings.k``)."""
    k = settings.k if k is None else k
    build = settings.prompt_builder(generator)
    prompts = [build(q.text, [passages[pid] for pid in _top_k(rankings[q.query_id], k)]) for q in queries]
    outputs = generate_in_batches(generator, prompts, settings.decoding, settings.batch_size, on_progress)
    scores = score_outputs(settings.metric, outputs, [q.answers for q in queries])
    return [E2EOutput(q.query_id, k, out, float(score)) for q, out, score in zip(queries, outputs, scores)]


def compute_llm_relevance_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                                 passages: Mapping[str, Passage], generator: Generator, k: int,
                                 template: PromptTemplate = RELEVANCE_FEW_SHOT,
                                 decoding: DecodingSettings = DecodingSettings(max_new_tokens=3),
                                 batch_size: int = 64, on_progress: ProgressCallback | None = None
                                 ) -> tuple[list[Label], list[LabelEvidence]]:
    """Baseline (c) of eRAG: the LLM asked per passage "is this passage relevant?" (Thomas et al. 2023).

    Label 1 when the reply starts with Yes, 0 otherwise; the raw reply is kept as the label's evidence (a reply
    that is neither Yes nor No is marked as such and counted as not relevant).
    """
    pairs = [(q, pid) for q in queries for pid in _top_k(rankings[q.query_id], k)]
    prompts = [build_relevance_prompt(q.text, passages[pid], template) for q, pid in pairs]
    replies = generate_in_batches(generator, prompts, decoding, batch_size, on_progress)
    labels, evidence = [], []
    for (q, pid), reply in zip(pairs, replies):
        parsed = parse_yes_no(reply)
        labels.append(Label(LLM_RELEVANCE, q.query_id, pid, float(bool(parsed))))
        note = f"{generator.model_id} replied '{reply.strip()}'"
        evidence.append(LabelEvidence(LLM_RELEVANCE, q.query_id, pid,
                                      note if parsed is not None else note + " (neither Yes nor No: counted as No)"))
    return labels, evidence


def compute_reference_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                             passages: Mapping[str, Passage], k: int) -> list[Label]:
    """The classic baselines:

    - *gold*: the dataset's gold passages (NQ: the annotated passage; HotpotQA: the supporting paragraphs),
      retrieved or not;
    - *gold_page*: KILT-style page-level provenance: a passage is relevant when its title is the title of a
      gold passage (case-insensitive), so another passage or version of the gold page counts;
    - *contains_answer*: a normalised gold answer occurs in the retrieved passage's text.
    """
    labels = [Label(GOLD, q.query_id, pid, 1.0) for q in queries for pid in q.gold_passage_ids]
    for q in queries:
        gold_titles = {passages[pid].title.strip().lower() for pid in q.gold_passage_ids if pid in passages}
        gold_titles.discard("")
        page_labels = {pid: 1.0 for pid in q.gold_passage_ids}
        for pid in _top_k(rankings[q.query_id], k):
            found = contains_answer(passages[pid].as_document(), q.answers)
            labels.append(Label(CONTAINS_ANSWER, q.query_id, pid, float(found)))
            page_labels.setdefault(pid, float(passages[pid].title.strip().lower() in gold_titles))
        labels.extend(Label(GOLD_PAGE, q.query_id, pid, value) for pid, value in page_labels.items())
    return labels


#: Measures that accept graded labels (P@k = mean label, Hit@k = max label, nDCG with graded gains); the others
#: (R, AP, RR, R-precision) are only defined for 0/1 labels and are not computed for graded label methods.
GRADED_MEASURES = ("P", "nDCG", "Hit")


def measure_names(cutoffs: Sequence[int], graded: bool = False) -> list[str]:
    """The measures every run stores: P, R, AP, RR, nDCG and Hit at each cutoff, and R-precision; for graded
    labels only the measures of :data:`GRADED_MEASURES`."""
    kinds = GRADED_MEASURES if graded else ("P", "R", "AP", "RR", "nDCG", "Hit")
    names = [f"{m}@{k}" for k in cutoffs for m in kinds]
    return names if graded else names + ["Rprec"]


def is_graded_method(method: str) -> bool:
    """Whether ``method`` makes labels other than 0/1 (eRAG with F1, ROUGE-L or BERTScore)."""
    return method.startswith("erag:") and method.split(":", 1)[1] not in BINARY_METRICS


def is_list_bound_method(method: str) -> bool:
    """Whether ``method`` labels only the retrieved passages (eRAG, contains-answer, LLM relevance, and the
    retrieved part of page-level gold): at cutoff c its measures then see the labels of the top c only, as eRAG
    defines G_q on R_c (so R@c = Hit@c for binary eRAG labels, as in the paper's Table 1)."""
    return method.startswith("erag:") or method in (CONTAINS_ANSWER, LLM_RELEVANCE, GOLD_PAGE)


def compute_measure_values(labels: Sequence[Label], rankings: Mapping[str, Ranking],
                           cutoffs: Sequence[int], graded_methods: Collection[str] = ()) -> list[MeasureValue]:
    """Per-query values of every stored measure, for every label method, on the same rankings; every query of
    ``rankings`` gets a value (0 when it has no relevant passage). Dataset gold labels are global; list-bound
    labels (:func:`is_list_bound_method`) are cut to the top c at cutoff c (page-level gold keeps the gold
    passages themselves); R-precision uses all of a method's labels. Methods :func:`is_graded_method` names, and
    those in ``graded_methods`` (e.g. an uploaded method with fractional labels), get the graded measures only."""
    run = {query_id: list(r.passage_ids) for query_id, r in rankings.items()}
    query_ids = list(run)
    gold = labels_as_qrels(labels, GOLD)
    values: list[MeasureValue] = []
    for method in sorted({x.method for x in labels}):
        qrels = labels_as_qrels(labels, method)
        graded = is_graded_method(method) or method in graded_methods
        if not is_list_bound_method(method):
            frames = [compute_measures(measure_names(cutoffs, graded), run, qrels, queries=query_ids)]
        else:
            frames = []
            for cutoff in cutoffs:
                kept = {q: {p: v for p, v in rels.items()
                            if p in run.get(q, [])[:cutoff] or (method == GOLD_PAGE and p in gold.get(q, {}))}
                        for q, rels in qrels.items()}
                names = [name for name in measure_names([cutoff], graded) if name != "Rprec"]
                frames.append(compute_measures(names, run, kept, queries=query_ids))
            if not graded:
                frames.append(compute_measures(["Rprec"], run, qrels, queries=query_ids))
        for frame in frames:
            values.extend(MeasureValue(method, r.measure, r.query_id, float(r.value))
                          for r in frame.itertuples(index=False))
    return values
