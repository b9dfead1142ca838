"""Any entailment checker behind one interface, named by one spec string (issue 17; docs/checkers.md).

:func:`parse_checker_spec` is the one parser of a spec, :func:`load_checker` the one loader. A spec is::

    [KIND:]TARGET[#KEY=VALUE[,KEY=VALUE...]]

* ``ours`` (alias ``trained``; the default): the shipped MiniLM cross-encoder (:class:`~rageval.attribution.nli.
  CrossEncoderNli`).
* ``hf:ID_OR_PATH`` (or a bare id/path): any Hugging Face NLI sequence classifier, 3-way or 2-way, its supported
  class read from ``id2label`` (``#supported=N`` names it when the labels are only ``LABEL_0``/``LABEL_1``), or a
  TRUE-style seq2seq model (Honovich et al. 2022) (:class:`~rageval.attribution.nli.HuggingFaceNli`).
* ``minicheck:ID_OR_PATH``: a MiniCheck "supported" classifier (Tang, Laban & Durrett 2024): a 2-way sequence
  classifier (RoBERTa/DeBERTa MiniCheck, class 1 = supported) or a Flan-T5 MiniCheck (seq2seq, first output token
  "1" vs "0"); the document is cut into overlapping chunks and p = max over chunks (:class:`MiniCheckNli`).
* ``alignscore:PATH``: an AlignScore checkpoint (Zha et al. 2023): a Lightning ``.ckpt`` whose ``state_dict`` holds
  a RoBERTa-style encoder under ``base_model.`` and the 3-way head ``tri_layer``; p = mean over the claim's
  sentences of the max over premise chunks of P(aligned) (AlignScore's ``nli_sp``) (:class:`AlignScoreNli`).
* ``llm`` or ``llm:MODEL``: an LLM judge asked few-shot Yes/No (:class:`~rageval.attribution.nli.LlmNli`), the
  generator built by :func:`rageval.generation.factory.load_generator` from ``model_settings`` (a local model or
  an OpenAI-compatible server), its calls cached.

Options (after the last ``#``): ``threshold=T`` (every kind: the decision threshold, default the checker's own,
0.5 unless calibrated), ``supported=N`` (hf), ``chunk=N`` (minicheck: words for Flan-T5, word pieces for a
classifier; alignscore: words), ``base=DIR`` (alignscore: the encoder's config and tokenizer), ``trust=1``
(alignscore: unpickle a checkpoint that holds more than tensors and plain containers; only for a file you trust).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.attribution.nli import (
    ENTAILMENT_THRESHOLD,
    EntailmentModel,
    PremiseHypothesis,
    batched_scores,
    checker_id,
    load_tokenizer_and_config,
    premise_windows,
    resolve_device,
)
from rageval.errors import RagevalError

KINDS = ("ours", "hf", "minicheck", "alignscore", "llm")
ALIASES = {"trained": "ours"}
DEFAULT_CHECKER = "ours"
#: The options each kind accepts (``threshold`` is every kind's).
OPTIONS = {"ours": (), "hf": ("supported",), "minicheck": ("chunk",), "alignscore": ("chunk", "base", "trust"),
           "llm": ()}
_OPTIONS = re.compile(r"[a-z_]+=[^,#]*(?:,[a-z_]+=[^,#]*)*")
#: MiniCheck's default chunk sizes: 500 words (Flan-T5), 400 word pieces (RoBERTa / DeBERTa classifiers).
MINICHECK_T5_CHUNK_WORDS = 500
MINICHECK_CLASSIFIER_CHUNK_TOKENS = 400
MINICHECK_T5_MAX_LENGTH = 2048
#: AlignScore's premise chunks: about 350 words each, whole sentences.
ALIGNSCORE_CHUNK_WORDS = 350
CHECKER_HELP = ("the entailment checker: 'ours' (the default, shipped MiniLM), 'hf:ID_OR_PATH[#supported=N]', "
                "'minicheck:ID_OR_PATH', 'alignscore:CKPT[#base=DIR]', 'llm[:MODEL]'; '#threshold=T' sets its "
                "threshold (docs/checkers.md)")
Splitter = Callable[[str], list[str]]


@dataclass(frozen=True)
class CheckerSpec:
    """A parsed checker spec: ``kind`` (one of :data:`KINDS`), ``target`` (model id / path / LLM name; empty for
    ``ours`` and the default LLM) and ``options`` (key, value) in the order given."""

    kind: str
    target: str
    options: tuple[tuple[str, str], ...] = ()

    def option(self, key: str) -> str | None:
        return dict(self.options).get(key)

    @property
    def threshold(self) -> float | None:
        value = self.option("threshold")
        return None if value is None else _number(self, "threshold", value, float, 0.0, 1.0)

    def integer(self, key: str, low: int = 0) -> int | None:
        value = self.option(key)
        return None if value is None else int(_number(self, key, value, int, low, None))

    def __str__(self) -> str:
        head = self.kind + (f":{self.target}" if self.target else "")
        return head + ("#" + ",".join(f"{k}={v}" for k, v in self.options) if self.options else "")


def _number(spec: CheckerSpec, key: str, value: str, kind, low, high):
    try:
        number = kind(value)
    except ValueError:
        number = None
    if number is None or (isinstance(number, float) and not math.isfinite(number)) or number < low or \
            (high is not None and number > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        what = "an integer" if kind is int else "a number"
        raise RagevalError(f"checker {str(spec)!r}: {key}={value!r}: expected {what} {bound}")
    return number


def parse_checker_spec(spec: str) -> CheckerSpec:
    """The one parser of a checker spec (module docstring); a :class:`RagevalError` names what is wrong."""
    text = str(spec).strip()
    if not text:
        raise RagevalError(f"checker spec: expected one of {', '.join(KINDS)} or a model, got nothing")
    options: list[tuple[str, str]] = []
    head, hash_sign, tail = text.rpartition("#")
    if hash_sign and _OPTIONS.fullmatch(tail):
        text = head
        options = [(k.strip(), v.strip()) for k, v in (item.split("=", 1) for item in tail.split(","))]
    kind, colon, target = text.partition(":")
    kind = ALIASES.get(kind.strip().lower(), kind.strip().lower())
    if not colon and kind in ("ours", "llm"):
        target = ""
    elif not colon or kind not in KINDS:
        kind, target = "hf", text  # a bare Hugging Face id or path (it may contain ':' itself)
    target = target.strip()
    if kind == "ours" and target:
        raise RagevalError(f"checker {spec!r}: 'ours' takes no model (it is the shipped one)")
    if kind in ("hf", "minicheck", "alignscore") and not target:
        raise RagevalError(f"checker {spec!r}: {kind}: expected a model id or path after '{kind}:'")
    allowed = ("threshold", *OPTIONS[kind])
    for key, _ in options:
        if key not in allowed:
            raise RagevalError(f"checker {spec!r}: option {key!r} is not one a {kind} checker takes "
                               f"({', '.join(allowed)})")
    parsed = CheckerSpec(kind, target, tuple(options))
    parsed.threshold  # noqa: B018 (validates the value now, not at the first decision)
    for key in ("supported", "chunk"):
        parsed.integer(key, 0 if key == "supported" else 8)
    return parsed


def with_threshold(model, threshold: float | None):
    """``model`` deciding at ``threshold`` (None: unchanged); its ``model_id`` names the new threshold."""
    if threshold is None:
        return model
    model.threshold = float(threshold)
    model.model_id = checker_id(getattr(model, "name", model.model_id.rpartition("@")[0]), model.threshold)
    return model


def load_checker(spec: str = DEFAULT_CHECKER, *, generator=None, model_settings=None, device: str | None = None,
                 batch_size: int = 16, threshold: float | None = None, sentence_splitter: Splitter | None = None,
                 log: Callable[[str], None] | None = None) -> EntailmentModel:
    """The checker ``spec`` names (module docstring), deciding at ``threshold`` when given (else the spec's
    ``#threshold``, else its own).

    ``generator`` / ``model_settings``: the LLM judge's generator, or the
    :class:`~rageval.generation.factory.ModelSettings` to build one (``llm:MODEL`` sets its model); ``device`` /
    ``batch_size``: of a Hugging Face model; ``sentence_splitter``: AlignScore's (default: the project's Punkt).
    """
    parsed = parse_checker_spec(spec)
    chosen = threshold if threshold is not None else parsed.threshold
    if parsed.kind == "ours":
        return with_threshold(_load_ours(log), chosen)
    if parsed.kind == "llm":
        from rageval.attribution.nli import LlmNli

        # A generator given (tests; rageval attribution's own LLM) judges unless the spec names another model.
        judge = generator if generator is not None and not parsed.target else \
            _llm_generator(parsed.target, model_settings)
        return with_threshold(LlmNli(judge), chosen)
    base = ENTAILMENT_THRESHOLD if chosen is None else chosen
    if parsed.kind == "hf":
        from rageval.attribution.nli import HuggingFaceNli

        return HuggingFaceNli(parsed.target, device=device, batch_size=batch_size, threshold=base,
                              supported=parsed.integer("supported"))
    if parsed.kind == "minicheck":
        return MiniCheckNli(parsed.target, device=device, batch_size=batch_size, chunk=parsed.integer("chunk", 8),
                            threshold=base)
    return AlignScoreNli(parsed.target, device=device, batch_size=batch_size, base=parsed.option("base"),
                         chunk_words=parsed.integer("chunk", 8) or ALIGNSCORE_CHUNK_WORDS,
                         trust=parsed.option("trust") in ("1", "true", "yes"), threshold=base,
                         sentence_splitter=sentence_splitter)


def _load_ours(log):
    """The shipped checker (``data/models/nli/``), else the one trained here, else trained now (resumable)."""
    from rageval.attribution.nli_training import RECIPE_NAME, load_or_train_nli, nli_model_dir, shipped_model_dir
    from rageval.retrieval.rerank import CONFIG_NAME

    if (log is not None and not (shipped_model_dir() / RECIPE_NAME).is_file()
            and not (nli_model_dir() / CONFIG_NAME).is_file()):
        log("the default NLI model is neither shipped nor trained yet: training it once (about 30-45 minutes on "
            "2 CPU cores, resumable; `rageval train-nli` does it ahead)")
    return load_or_train_nli()


def _llm_generator(model: str, model_settings):
    """The judge's generator through the project's one factory, its calls cached (as ``rageval evaluate``)."""
    import dataclasses

    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.factory import ModelSettings, load_generator

    settings = model_settings if model_settings is not None else ModelSettings()
    if model:
        settings = dataclasses.replace(settings, model=model)
    return CachedGenerator(load_generator(settings), LLMCache())


def chunked_max(pairs: Sequence[PremiseHypothesis], chunks_of: Callable[[str, str], list[str]],
                score: Callable[[list[PremiseHypothesis]], list[float]]) -> tuple[list[float], list[int]]:
    """For each pair, max over its premise chunks (``chunks_of(premise, hypothesis)``) of ``score``, in one batched
    call; and the number of chunks each pair needed."""
    flat: list[PremiseHypothesis] = []
    owners: list[int] = []
    counts: list[int] = []
    for row, (premise, hypothesis) in enumerate(pairs):
        chunks = chunks_of(premise, hypothesis) or [premise]
        counts.append(len(chunks))
        flat.extend((chunk, hypothesis) for chunk in chunks)
        owners.extend([row] * len(chunks))
    scores = score(flat) if flat else []
    best = [-math.inf] * len(pairs)
    for owner, value in zip(owners, scores):
        best[owner] = max(best[owner], value)
    return best, counts


def word_windows(text: str, size: int) -> list[str]:
    """``text`` cut into windows of ``size`` whitespace-separated words overlapping by half (one if it fits)."""
    words = text.split()
    if len(words) <= size:
        return [text]
    stride = max(1, size // 2)
    windows = []
    for start in range(0, len(words), stride):
        windows.append(" ".join(words[start:start + size]))
        if start + size >= len(words):
            break
    return windows


class MiniCheckNli:
    """A MiniCheck-style checker (Tang, Laban & Durrett, "MiniCheck: Efficient Fact-Checking of LLMs on Grounding
    Documents", EMNLP 2024): the document and the claim as one text, ``chunk <sep> claim`` (``<sep>`` the
    tokenizer's end-of-sequence token, else its separator).

    * a 2-way sequence classifier (MiniCheck-RoBERTa/DeBERTa): p = softmax(logits)[1] (class 1 = supported); the
      document in windows of ``chunk`` word pieces (default 400) overlapping by half;
    * a seq2seq model (MiniCheck-Flan-T5): input ``"predict: " + chunk <sep> claim``, one decoder step from the start
      token, p = softmax(l["1"], l["0"])["1"] over the logits of the first token of "1" and of "0"; the document in
      windows of ``chunk`` words (default 500) overlapping by half.

    A claim's p is the maximum over the document's chunks (MiniCheck's aggregation). MiniCheck's own chunks do not
    overlap; ours do by half, as every windowed checker here, so a fact on a chunk boundary is seen whole.
    """

    def __init__(self, name_or_path: str, device: str | None = None, batch_size: int = 16, chunk: int | None = None,
                 threshold: float = ENTAILMENT_THRESHOLD, max_length: int | None = None,
                 local_files_only: bool = True):
        config, self.tokenizer = load_tokenizer_and_config(name_or_path, "MiniCheck", local_files_only)
        self.name = f"minicheck:{name_or_path}" + (f"#chunk={chunk}" if chunk else "")
        self.threshold = float(threshold)
        self.model_id = checker_id(self.name, self.threshold)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self.separator = self.tokenizer.eos_token or self.tokenizer.sep_token or " "
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None) or 512
        if self.seq2seq:
            from transformers import AutoModelForSeq2SeqLM

            self.model = AutoModelForSeq2SeqLM.from_pretrained(name_or_path, local_files_only=local_files_only)
            self.chunk = chunk or MINICHECK_T5_CHUNK_WORDS
            self.max_length = max_length or MINICHECK_T5_MAX_LENGTH  # T5's relative positions: no fixed limit
            one, zero = (self._first_token(text) for text in ("1", "0"))
            if one == zero:
                raise RagevalError(f"{self.name}: '1' and '0' start with the same token; not a MiniCheck tokenizer")
            self.answer_ids = [zero, one]
        else:
            from transformers import AutoModelForSequenceClassification

            try:
                self.model = AutoModelForSequenceClassification.from_pretrained(name_or_path,
                                                                                local_files_only=local_files_only)
            except (OSError, ValueError) as error:
                raise RagevalError(f"MiniCheck model {name_or_path!r}: neither a seq2seq model nor a sequence "
                                   f"classifier ({error})") from None
            if self.model.config.num_labels != 2:
                raise RagevalError(f"MiniCheck model {name_or_path!r}: a MiniCheck classifier has 2 classes (1 = "
                                   f"supported), this one has {self.model.config.num_labels}; for an NLI model use "
                                   f"'hf:{name_or_path}'")
            self.chunk = chunk or MINICHECK_CLASSIFIER_CHUNK_TOKENS
            self.max_length = max_length or min(tokenizer_limit, MINICHECK_T5_MAX_LENGTH)
        self.model.to(self.device).eval()
        self.last_window_counts: list[int] = []

    def _first_token(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if not ids:
            raise RagevalError(f"{self.name}: the tokenizer has no token for {text!r}")
        return ids[0]

    def chunks(self, premise: str, claim: str) -> list[str]:
        """The document's chunks for ``claim`` (class docstring)."""
        if self.seq2seq:
            return word_windows(premise, self.chunk)
        claim_tokens = len(self.tokenizer(claim, add_special_tokens=False)["input_ids"])
        return premise_windows(self.tokenizer, premise, max(8, min(self.chunk, self.max_length - claim_tokens - 3)))

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        probabilities, self.last_window_counts = chunked_max(pairs, self.chunks, self.score_chunks)
        return probabilities

    def score_chunks(self, pairs: list[PremiseHypothesis]) -> list[float]:
        """p(supported) of each (chunk, claim) as it stands (no further chunking)."""
        return batched_scores(pairs, self.batch_size, self._score_batch)

    def _score_batch(self, batch: list[PremiseHypothesis]) -> list[float]:
        import torch

        texts = [f"{chunk}{self.separator}{claim}" for chunk, claim in batch]
        if self.seq2seq:
            inputs = self.tokenizer([f"predict: {text}" for text in texts], padding=True, truncation=True,
                                    max_length=self.max_length, return_tensors="pt").to(self.device)
            start_ids = torch.full((len(batch), 1), self.model.config.decoder_start_token_id or 0,
                                   dtype=torch.long, device=self.device)
            logits = self.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                decoder_input_ids=start_ids).logits[:, 0, self.answer_ids]
        else:
            inputs = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                    return_tensors="pt").to(self.device)
            logits = self.model(**inputs).logits
        return logits.float().softmax(dim=-1)[:, 1].cpu().tolist()


def alignscore_chunks(sentences: Sequence[str], words: int, chunk_words: int = ALIGNSCORE_CHUNK_WORDS) -> list[str]:
    """AlignScore's premise chunks: n = ⌊words / chunk_words⌋ + 1 chunks wanted, so ``max(⌊len(sentences) / n⌋, 1)``
    consecutive sentences each (whole sentences, no overlap)."""
    if not sentences:
        return [""]
    wanted = words // chunk_words + 1
    per = max(len(sentences) // wanted, 1)
    return [" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per)]


def _default_splitter() -> Splitter:
    from rageval.attribution.statements import sentence_tokenizer

    tokenizer = sentence_tokenizer()
    return tokenizer.tokenize


class AlignScoreNli:
    """An AlignScore checker (Zha, Yang, Li & Hu, "AlignScore: Evaluating Factual Consistency with a Unified
    Alignment Function", ACL 2023), scored as AlignScore's default ``nli_sp``:

    the premise split into sentences and grouped into chunks of about ``chunk_words`` words
    (:func:`alignscore_chunks`), the claim split into sentences s_j; every (chunk_i, s_j) pair goes through the
    encoder as a sentence pair, and the 3-way head on the pooled output gives P(aligned) = softmax(tri_layer(h))[0];
    p = mean_j max_i P(aligned | chunk_i, s_j).

    The checkpoint is AlignScore's PyTorch Lightning ``.ckpt``: ``state_dict`` with the encoder under
    ``base_model.`` (a RoBERTa-style model with its pooler) and the heads ``tri_layer`` (3-way, used here),
    ``bin_layer`` and ``reg_layer``; the encoder's config and tokenizer come from ``base`` (a folder), else the
    checkpoint's folder when it holds a ``config.json``, else the checkpoint's ``hyper_parameters["model"]`` from the
    local Hugging Face cache.
    """

    def __init__(self, checkpoint: str, device: str | None = None, batch_size: int = 16, base: str | None = None,
                 chunk_words: int = ALIGNSCORE_CHUNK_WORDS, trust: bool = False,
                 threshold: float = ENTAILMENT_THRESHOLD, sentence_splitter: Splitter | None = None):
        import torch
        from transformers import AutoModel

        path = self._checkpoint_file(checkpoint)
        self.name = f"alignscore:{checkpoint}" + (f"#chunk={chunk_words}" if chunk_words != ALIGNSCORE_CHUNK_WORDS
                                                   else "")
        self.threshold = float(threshold)
        self.model_id = checker_id(self.name, self.threshold)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.chunk_words = chunk_words
        self._splitter = sentence_splitter
        state, hyper = self._read(path, trust)
        encoder_state = {key[len("base_model."):]: value for key, value in state.items()
                         if key.startswith("base_model.")}
        head = {key: state[f"tri_layer.{key}"] for key in ("weight", "bias") if f"tri_layer.{key}" in state}
        if not encoder_state or len(head) != 2:
            shown = ", ".join(sorted({key.split(".")[0] for key in state})[:8]) or "nothing"
            raise RagevalError(f"{path}: not an AlignScore checkpoint: its state_dict needs the encoder under "
                               f"'base_model.' and the 3-way head 'tri_layer' (it has: {shown})")
        classes = int(head["weight"].shape[0])
        if classes != 3:
            raise RagevalError(f"{path}: tri_layer has {classes} classes, AlignScore's has 3")
        base_name = base or (str(path.parent) if (path.parent / "config.json").is_file() else
                             str(hyper.get("model") or ""))
        if not base_name:
            raise RagevalError(f"{path}: cannot tell the encoder's config and tokenizer; give them as "
                               f"'alignscore:{checkpoint}#base=DIR' (a folder with config.json and the tokenizer)")
        config, self.tokenizer = load_tokenizer_and_config(base_name, "AlignScore base")
        self.encoder = AutoModel.from_config(config)
        try:
            missing, unexpected = self.encoder.load_state_dict(encoder_state, strict=False)
        except RuntimeError as error:
            raise RagevalError(f"{path}: its encoder does not fit the config of {base_name!r} ({error})") from None
        missing = [key for key in missing if not key.endswith("position_ids")]
        if missing or unexpected:
            raise RagevalError(f"{path}: its encoder does not match the config of {base_name!r} (missing "
                               f"{missing[:4]}, unexpected {list(unexpected)[:4]})")
        if getattr(self.encoder, "pooler", None) is None:
            raise RagevalError(f"{path}: the encoder of {base_name!r} has no pooler; AlignScore's heads read it")
        self.head = torch.nn.Linear(head["weight"].shape[1], 3)
        self.head.load_state_dict(head)
        self.max_length = min(getattr(self.tokenizer, "model_max_length", 512) or 512, 512)
        self.encoder.to(self.device).eval()
        self.head.to(self.device).eval()
        self.last_window_counts: list[int] = []

    @staticmethod
    def _checkpoint_file(checkpoint: str) -> Path:
        path = Path(checkpoint).expanduser()
        if path.is_dir():
            found = sorted(path.glob("*.ckpt"))
            if len(found) != 1:
                raise RagevalError(f"{path}: expected one AlignScore .ckpt file in that folder, found {len(found)}")
            return found[0]
        if not path.is_file():
            raise RagevalError(f"{path}: no such AlignScore checkpoint (a .ckpt file, or a folder holding one)")
        return path

    @staticmethod
    def _read(path: Path, trust: bool) -> tuple[dict, dict]:
        import pickle

        import torch

        try:
            stored = torch.load(path, map_location="cpu", weights_only=not trust)
        except pickle.UnpicklingError as error:
            raise RagevalError(f"{path}: holds objects other than tensors, so it is not read by default ({error}); "
                               "if you trust the file, add '#trust=1' to the spec") from None
        except Exception as error:  # torch.load raises many kinds on a file that is not a checkpoint
            raise RagevalError(f"{path}: not a PyTorch checkpoint ({type(error).__name__}: {error})") from None
        if not isinstance(stored, dict):
            raise RagevalError(f"{path}: not an AlignScore checkpoint (expected a dict with a state_dict)")
        state = stored.get("state_dict", stored)
        hyper = stored.get("hyper_parameters") or {}
        if not isinstance(state, dict):
            raise RagevalError(f"{path}: its state_dict is not a dict of tensors")
        return state, dict(hyper) if isinstance(hyper, dict) else {}

    def sentences(self, text: str) -> list[str]:
        if self._splitter is None:
            self._splitter = _default_splitter()
        return [s for s in (part.strip() for part in self._splitter(text)) if s] or [text]

    def entailment_probabilities(self, pairs: Sequence[PremiseHypothesis]) -> list[float]:
        flat: list[PremiseHypothesis] = []
        shapes: list[tuple[int, int]] = []
        for premise, claim in pairs:
            chunks = alignscore_chunks(self.sentences(premise), len(premise.split()), self.chunk_words)
            claims = self.sentences(claim)
            shapes.append((len(chunks), len(claims)))
            flat.extend((chunk, sentence) for chunk in chunks for sentence in claims)
        scores = self.score_chunks(flat) if flat else []
        probabilities: list[float] = []
        start = 0
        for n_chunks, n_claims in shapes:
            grid = [scores[start + i * n_claims:start + (i + 1) * n_claims] for i in range(n_chunks)]
            probabilities.append(sum(max(row[j] for row in grid) for j in range(n_claims)) / n_claims)
            start += n_chunks * n_claims
        self.last_window_counts = [n_chunks for n_chunks, _ in shapes]
        return probabilities

    def score_chunks(self, pairs: list[PremiseHypothesis]) -> list[float]:
        """P(aligned) of each (premise chunk, claim sentence) as it stands."""
        return batched_scores(pairs, self.batch_size, self._score_batch)

    def _score_batch(self, batch: list[PremiseHypothesis]) -> list[float]:
        inputs = self.tokenizer([p for p, _ in batch], [h for _, h in batch], padding=True, truncation=True,
                                max_length=self.max_length, return_tensors="pt").to(self.device)
        pooled = self.encoder(**inputs).pooler_output
        return self.head(pooled).float().softmax(dim=-1)[:, 0].cpu().tolist()


def checker_description(model) -> str:
    """One sentence on what ``model`` is, as plain text: the first sentence of its class' docstring (its class name
    without one), Sphinx roles and literals unwrapped (``:class:`a.b.C``` -> ``C``)."""
    doc = " ".join((type(model).__doc__ or "").strip().split("\n\n")[0].split())
    if not doc:
        return type(model).__name__
    end = doc.find(". ")
    sentence = (doc if end < 0 else doc[:end + 1]).rstrip(":")
    sentence = re.sub(r":[a-z]+:`~?(?:[^`<]*<)?([^`>]+)>?`", lambda m: m.group(1).rpartition(".")[2], sentence)
    return sentence.replace("``", "")
