"""Entailment (NLI) checkers for citation checking: NLI(premise, hypothesis) in {0, 1} (SPEC §3, issues 5 and 17).

AutoAIS and ALCE's citation recall/precision need a binary decision "does passage p entail statement s?"
(Honovich et al., TRUE, 2022; Gao et al., ALCE, 2023). A *checker* gives each pair a probability p(supported)
and decides *supported* when p >= its ``threshold``. Which checker is one spec string, parsed in one place
(:func:`rageval.attribution.checkers.load_checker`, spec grammar and formulas in docs/checkers.md):

* ``ours`` / ``trained`` (default): the MiniLM cross-encoder :func:`load_or_train_nli` fine-tunes once on the
  train/dev rows of ``data/nli`` (2-way: entailment vs everything else; every ``split=test`` row is held out) and
  caches under ``cache_dir()/models/nli-minilm-<digest>``. p(entail) = σ(s(statement, passage)).
* ``hf:ID_OR_PATH`` (or a bare id/path): a sequence classifier whose ``id2label`` names a supported class
  (p = softmax over the classes, that class' share), or a seq2seq model used as TRUE is (input
  ``"premise: P hypothesis: H"``, p = P("1") / (P("1") + P("0")) for the first decoded token), e.g. the
  T5-11B TRUE model the paper used.
* ``minicheck:...`` and ``alignscore:...``: :mod:`rageval.attribution.checkers`.
* ``llm[:MODEL]``: a generator asked few-shot whether the passage supports the claim (p is 1 for Yes, 0 for No).

Long premises (a passage, or ALCE's concatenation of cited passages) are handled by **windowing**, never by
silent truncation: when statement + premise exceed the model's ``max_length`` word pieces, the premise is cut into
windows of the remaining budget that overlap by half, every window is scored, and the pair's probability is the
maximum over windows (a statement is entailed if some window entails it; as SummaC-ZS scores chunks). A statement
that needs facts from two windows far apart is therefore missed; :attr:`NliResult.windows` records how many
windows a pair needed.

Every checker has a ``threshold`` (0.5 unless calibrated, :func:`rageval.attribution.nli_eval.best_threshold`) and a
``model_id`` that names it and its threshold (``hf:PATH@0.5``): the id stored with every score it produces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from rageval.errors import RagevalError

ENTAILMENT_THRESHOLD = 0.5  # p(entail) >= 0.5 -> NLI = 1
ProgressCallback = Callable[[int, int], None]
PremiseHypothesis = tuple[str, str]


@runtime_checkable
class EntailmentModel(Protocol):
    """Scores (premise, hypothesis) pairs: the probability that the premise entails (supports) the hypothesis, and
    decides *supported* when it is at least ``threshold``. ``model_id`` names the checker and its threshold."""

    model_id: str
    threshold: float

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        ...


def checker_threshold(model) -> float:
    """The checker's own threshold (:data:`ENTAILMENT_THRESHOLD` for a model that has none)."""
    return float(getattr(model, "threshold", ENTAILMENT_THRESHOLD))


def checker_id(name: str, threshold: float) -> str:
    """The stored id of a checker: its name and its threshold, ``name@threshold``."""
    return f"{name}@{threshold:g}"


def entailment_decisions(model: EntailmentModel, pairs: Sequence[PremiseHypothesis],
                         threshold: float | None = None) -> list[int]:
    """NLI(premise, hypothesis) ∈ {0, 1} for every pair: 1 when p(entail) >= ``threshold`` (default: the model's
    own threshold)."""
    cut = checker_threshold(model) if threshold is None else threshold
    return [int(p >= cut) for p in model.entailment_probabilities(pairs)]


# ------------------------------------------------------------------------------------- windowed scoring


def premise_windows(tokenizer, premise: str, budget: int) -> list[str]:
    """``premise`` cut into windows of at most ``budget`` word pieces overlapping by half (one if it fits).

    Windows are cut at word-piece boundaries by the tokenizer's character offsets, so their text is a substring
    of the premise.
    """
    if budget < 8:
        raise ValueError(f"premise budget {budget}: too small for a window (need at least 8 word pieces)")
    # verbose=False: a premise longer than the model is expected here (that is what windows are for).
    offsets = tokenizer(premise, add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)["offset_mapping"]
    if len(offsets) <= budget:
        return [premise]
    stride = budget // 2
    windows = []
    for start in range(0, len(offsets), stride):
        end = min(start + budget, len(offsets))
        windows.append(premise[offsets[start][0]:offsets[end - 1][1]])
        if end == len(offsets):
            break
    return windows


def windowed_max(pairs: Sequence[PremiseHypothesis], tokenizer, max_length: int, hypothesis_budget: int,
                 score_windows: Callable[[list[PremiseHypothesis]], list[float]]) -> tuple[list[float], list[int]]:
    """Max over premise windows of ``score_windows`` for each pair, and the number of windows each needed.

    The premise budget of a pair is ``max_length`` minus the hypothesis' word pieces (capped at
    ``hypothesis_budget``) minus 3 special tokens.
    """
    flat: list[PremiseHypothesis] = []
    owners: list[int] = []
    counts: list[int] = []
    for row, (premise, hypothesis) in enumerate(pairs):
        hypothesis_tokens = min(len(tokenizer(hypothesis, add_special_tokens=False)["input_ids"]), hypothesis_budget)
        windows = premise_windows(tokenizer, premise, max(8, max_length - hypothesis_tokens - 3))
        counts.append(len(windows))
        flat.extend((window, hypothesis) for window in windows)
        owners.extend([row] * len(windows))
    scores = score_windows(flat) if flat else []
    best = [-math.inf] * len(pairs)
    for owner, score in zip(owners, scores):
        best[owner] = max(best[owner], score)
    return best, counts


class CrossEncoderNli:
    """A :class:`rageval.retrieval.rerank.CrossEncoder` read as an NLI model: text_a = hypothesis, text_b = premise.

    p(entail) = σ(s(hypothesis, premise)), maximised over premise windows (module docstring). ``threshold``: the
    decision threshold (the one calibrated on dev and stored with the shipped model, else 0.5).
    """

    def __init__(self, cross_encoder, threshold: float = ENTAILMENT_THRESHOLD):
        self.cross_encoder = cross_encoder
        self.name = f"ours:{cross_encoder.model_id}"
        self.threshold = float(threshold)
        self.model_id = checker_id(self.name, self.threshold)
        self.last_window_counts: list[int] = []

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        settings = self.cross_encoder.settings
        logits, self.last_window_counts = windowed_max(
            pairs, self.cross_encoder.tokenizer, settings.max_length, settings.max_a_tokens,
            lambda flat: self.cross_encoder.score_pairs([(h, p) for p, h in flat]))
        return [1.0 / (1.0 + math.exp(-logit)) for logit in logits]


#: Class names (lower case, ``-``/space as ``_``) that mean "the premise supports the hypothesis"; any name starting
#: with ``entail`` counts too (``not_entailment`` does not start with it).
SUPPORTED_LABELS = frozenset({"entailment", "entails", "entailed", "supported", "supports", "support", "consistent",
                              "faithful", "factual", "aligned", "true", "yes"})
_GENERIC_LABEL = re.compile(r"label_?\d+")


def supported_index(id2label: dict, name: str, supported: int | None = None) -> int:
    """The class index of a classifier's *supported* class, read from its ``id2label``.

    ``supported`` (the spec's ``#supported=N``) names it for a model whose labels do not (``LABEL_0``/``LABEL_1``).
    A :class:`RagevalError` names the model and its labels when there is no single such class.
    """
    labels = {int(i): str(label) for i, label in id2label.items()}
    if supported is not None:
        if supported not in labels:
            raise RagevalError(f"checker {name!r}: #supported={supported} names no class of this model (its classes "
                               f"are {sorted(labels)})")
        return supported
    normal = {i: label.strip().lower().replace("-", "_").replace(" ", "_") for i, label in labels.items()}
    matches = [i for i, label in normal.items() if label in SUPPORTED_LABELS or label.startswith("entail")]
    if len(matches) == 1:
        return matches[0]
    if all(_GENERIC_LABEL.fullmatch(label) for label in normal.values()):
        raise RagevalError(f"checker {name!r}: its config's id2label {labels} does not say which class means "
                           f"supported; name it in the spec, e.g. 'hf:{name}#supported=1'")
    raise RagevalError(f"checker {name!r}: its id2label {labels} has no single entailment label (one named "
                       f"entailment/supported/consistent/...); name it in the spec, e.g. 'hf:{name}#supported=1'")


def load_tokenizer_and_config(name_or_path: str, kind: str, local_files_only: bool = True):
    """(config, tokenizer) of a Hugging Face model; a :class:`RagevalError` naming it when either cannot be read."""
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(name_or_path, local_files_only=local_files_only)
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=local_files_only)
    except (OSError, ValueError) as error:
        raise RagevalError(f"{kind} model {name_or_path!r}: cannot load it ({error})") from None
    return config, tokenizer


def resolve_device(device: str | None) -> str:
    import torch

    return device if device and device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")


class HuggingFaceNli:
    """Any Hugging Face NLI model (id or local path): a sequence classifier (3-way or 2-way) with a supported class
    (read from ``id2label``, or ``supported`` = its index), or a TRUE-style seq2seq model answering "1"/"0" to
    ``"premise: P hypothesis: H"``. Loading never downloads unless ``local_files_only=False`` is passed."""

    def __init__(self, name_or_path: str, device: str | None = None, batch_size: int = 16, max_length: int = 512,
                 local_files_only: bool = True, threshold: float = ENTAILMENT_THRESHOLD, supported: int | None = None):
        config, self.tokenizer = load_tokenizer_and_config(name_or_path, "NLI", local_files_only)
        self.name = f"hf:{name_or_path}" + (f"#supported={supported}" if supported is not None else "")
        self.threshold = float(threshold)
        self.model_id = checker_id(self.name, self.threshold)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.max_length = min(max_length, getattr(self.tokenizer, "model_max_length", max_length) or max_length)
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        if self.seq2seq:
            from transformers import AutoModelForSeq2SeqLM

            self.model = AutoModelForSeq2SeqLM.from_pretrained(name_or_path, local_files_only=local_files_only)
            self.answer_ids = [self._single_token(text) for text in ("1", "0")]
        else:
            from transformers import AutoModelForSequenceClassification

            try:
                self.model = AutoModelForSequenceClassification.from_pretrained(name_or_path,
                                                                                local_files_only=local_files_only)
            except (OSError, ValueError) as error:
                raise RagevalError(f"NLI model {name_or_path!r}: not a sequence classifier ({error})") from None
            self.entailment_index = supported_index(self.model.config.id2label, name_or_path, supported)
        self.model.to(self.device).eval()
        self.last_window_counts: list[int] = []

    def _single_token(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if not ids:
            raise RagevalError(f"{self.name}: the tokenizer has no token for {text!r}")
        return ids[-1]

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        budget = self.max_length - 16 if self.seq2seq else self.max_length
        probabilities, self.last_window_counts = windowed_max(pairs, self.tokenizer, budget, 128, self._score)
        return probabilities

    def _score(self, pairs: list[PremiseHypothesis]) -> list[float]:
        return batched_scores(pairs, self.batch_size, self._score_batch)

    def _score_batch(self, batch: list[PremiseHypothesis]) -> list[float]:
        import torch

        if self.seq2seq:
            inputs = self.tokenizer([f"premise: {p} hypothesis: {h}" for p, h in batch], padding=True,
                                    truncation=True, max_length=self.max_length, return_tensors="pt")
            start_ids = torch.full((len(batch), 1), self.model.config.decoder_start_token_id or 0, dtype=torch.long)
            logits = self.model(**inputs.to(self.device), decoder_input_ids=start_ids.to(self.device)).logits
            return logits[:, 0, self.answer_ids].float().softmax(dim=-1)[:, 0].cpu().tolist()
        inputs = self.tokenizer([p for p, _ in batch], [h for _, h in batch], padding=True,
                                truncation="only_first", max_length=self.max_length, return_tensors="pt")
        probabilities = self.model(**inputs.to(self.device)).logits.float().softmax(dim=-1)
        return probabilities[:, self.entailment_index].cpu().tolist()


def batched_scores(pairs: list[PremiseHypothesis], batch_size: int,
                   score_batch: Callable[[list[PremiseHypothesis]], list[float]]) -> list[float]:
    """``score_batch`` over ``pairs`` in batches of ``batch_size``, without gradients (every model backend's loop)."""
    import torch

    scores: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(pairs), batch_size):
            scores.extend(score_batch(pairs[start:start + batch_size]))
    return scores


class LlmNli:
    """An LLM asked few-shot whether a passage supports a claim; p(entail) is 1 for a Yes reply, 0 otherwise.

    The raw replies of the last call are kept in :attr:`last_replies` (the verdict's evidence).
    """

    def __init__(self, generator, threshold: float = ENTAILMENT_THRESHOLD):
        from rageval.prompts import NLI_FEW_SHOT

        self.generator = generator
        self.template = NLI_FEW_SHOT
        self.name = f"llm:{generator.model_id}:{NLI_FEW_SHOT.name}@{NLI_FEW_SHOT.version}"
        self.threshold = float(threshold)
        self.model_id = checker_id(self.name, self.threshold)
        self.last_replies: list[str] = []

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        from rageval.generation.base import DecodingSettings
        from rageval.prompts import build_nli_prompt, parse_yes_no

        prompts = [build_nli_prompt(premise, hypothesis) for premise, hypothesis in pairs]
        self.last_replies = self.generator.generate(prompts, DecodingSettings(max_new_tokens=3)) if prompts else []
        return [1.0 if parse_yes_no(reply) else 0.0 for reply in self.last_replies]

