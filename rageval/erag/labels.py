"""eRAG labels: per-document utility judged by the RAG LLM itself (Salemi & Zamani, SIGIR 2024, §3.1).

For a query q with ranked list R_k, the RAG LLM M and the downstream metric E, each document is given to M
*alone* and the output is scored against the ground truth y:

    G_q[d] = E(M(q, {d}), y)        for every d in R_k            (eRAG, Eq. 1)

E is one of the downstream metrics of :data:`ALL_METRICS` (exact match, token F1, answer accuracy, ROUGE-L,
BERTScore; each a maximum over the gold answers). Labels depend only on (query, document, model, prompt,
decoding, metric), so the LLM calls go through the content-addressed LLM-call cache: re-ranking or re-running a
list whose documents were already judged costs no new LLM call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rageval.generation.base import DecodingSettings, Generator
from rageval.generation.em_stop import generate_stopping_early
from rageval.labelmethods import erag_method
from rageval.prompts import QA_FEW_SHOT, PromptTemplate, build_qa_prompt
from rageval.store import DocOutput, Label
from rageval.text_metrics import answer_accuracy, exact_match, rouge_l, token_f1
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


@dataclass(frozen=True)
class EragSettings:
    """What decides an eRAG run's LLM calls and labels (stored with the run)."""

    k: int = 10
    metric: str = "em"
    decoding: DecodingSettings = field(default_factory=DecodingSettings)
    batch_size: int = 8
    cutoffs: tuple[int, ...] = (1, 5, 10)
    prompt: PromptTemplate = QA_FEW_SHOT
    #: Exact-match early stopping (:mod:`rageval.generation.em_stop`): a row stops once its exact match is sure to
    #: be 0; the same exact-match labels, marked answers. Only with ``metric == "em"`` and no other label metric.
    em_early_stop: bool = False

    def prompt_builder(self, generator: Generator) -> Callable[[str, Sequence[Passage]], str]:
        """:func:`prompt_builder` with this run's QA prompt template."""
        return prompt_builder(generator, self.prompt)

    def __post_init__(self):
        if self.metric not in ALL_METRICS:
            raise ValueError(f"unknown downstream metric {self.metric!r}; choose one of {', '.join(ALL_METRICS)}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.em_early_stop and self.metric != "em":
            raise ValueError(f"exact-match early stopping needs metric 'em', got {self.metric!r}")


def generate_in_batches(generator: Generator, prompts: Sequence[str], decoding: DecodingSettings,
                        batch_size: int, on_progress: ProgressCallback | None = None,
                        em_targets: Sequence[Sequence[str]] | None = None) -> list[str]:
    """Outputs of ``generator`` for ``prompts`` in order, in batches, reporting progress after each batch.
    ``em_targets[i]``: prompt i's gold answers, for exact-match early stopping where the generator supports it."""
    outputs: list[str] = []
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start:start + batch_size]
        if em_targets is None:
            outputs.extend(generator.generate(batch, decoding))
        else:
            outputs.extend(generate_stopping_early(generator, batch, decoding, em_targets[start:start + batch_size]))
        if on_progress is not None:
            on_progress(len(outputs), len(prompts))
    return outputs


def top_k(ranking: Ranking, k: int) -> tuple[str, ...]:
    """The ids of the ranking's first ``k`` passages, best first (R_k)."""
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
    pairs = [(q, pid) for q in queries for pid in top_k(rankings[q.query_id], settings.k)]
    build = settings.prompt_builder(generator)
    prompts = [build(q.text, [passages[pid]]) for q, pid in pairs]
    targets = [q.answers for q, _ in pairs] if settings.em_early_stop else None
    outputs = generate_in_batches(generator, prompts, settings.decoding, settings.batch_size, on_progress, targets)
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
