"""A :class:`~rageval.generation.base.Generator` over any Hugging Face causal LM stored locally.

Nothing is ever downloaded: models load with ``local_files_only=True`` (stricter than ``HF_HUB_OFFLINE``), from
a local directory or from a model id already in the Hugging Face cache. torch and transformers are imported
only when a model is loaded.

Prompts that share a long token prefix (every eRAG prompt starts with the same few-shot examples) reuse that
prefix's key/value cache, computed once per generator and prefix (see :mod:`rageval.generation.prefix`); greedy
rows then decode against that one copy of it (:mod:`rageval.generation.shared_prefix`), in groups under a memory
budget. Greedy answers are the same as without reuse.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

from rageval.generation.base import DecodingSettings, apply_stop
from rageval.generation.dtype_check import PrecisionCheck, cached_check, check_enabled, measure_precision, save_check
from rageval.generation.em_stop import ExactMatchStop, stopped_answer, tokenizer_allows
from rageval.generation.prefix import PrefixCacheStore, choose_prefix, starts_with
from rageval.generation.shared_prefix import PrefixKV, SharedPrefixDecoder, supports
from rageval.text_metrics import exact_match

#: Default of ``TransformersGenerator.decode_memory_mb``: what one group of greedy rows after a shared prefix may
#: hold (key/value buffers, prefill activations, logits). Gemma-3-270M in bfloat16 fits a query's 20 eRAG rows.
DEFAULT_DECODE_MEMORY_MB = 192

_DTYPES = ("float32", "bfloat16", "float16")


def resolve_device(device: str = "auto") -> tuple[str, str]:
    """``(device, dtype name)``: ``"auto"`` picks CUDA in bfloat16 when available, else CPU in float32.

    An explicit device (``"cpu"``, ``"cuda"``, ``"cuda:1"``) uses bfloat16 on CUDA and float32 elsewhere.
    """
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return device, ("bfloat16" if device.startswith("cuda") else "float32")


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of at most ``batch_size``, longest first, so padding stays small.

    The sort is stable (equal lengths keep prompt order), which keeps batching deterministic.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def sample_seed(seed: int, index: int) -> int:
    """The seed of sample ``index`` drawn under base ``seed``: the first 8 bytes of sha256(``"seed:index"``), as a
    non-negative int below 2**63. Hashing (rather than ``seed + index``) keeps the samples of base seeds 0 and 1
    from overlapping."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _make_stop_criterion(tokenizer, prompt_length: int, stop: Sequence[str]):
    """A transformers StoppingCriteria ending each row once its generated text contains a stop string.

    Leading whitespace is ignored, as in :func:`apply_stop`, so an answer may open with a newline.
    """
    import torch
    from transformers import StoppingCriteria

    class _StopOnStrings(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            texts = tokenizer.batch_decode(input_ids[:, prompt_length:], skip_special_tokens=True)
            done = [any(s in text.lstrip() for s in stop) for text in texts]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return _StopOnStrings()


def generation_config(settings: DecodingSettings, model, tokenizer, **extra):
    """A transformers ``GenerationConfig`` for ``settings``: greedy at temperature 0, else sampling with
    ``temperature`` and ``top_p`` (no top-k cut); padding and end-of-sequence ids from the model/tokenizer."""
    from transformers import GenerationConfig

    sampling = {} if settings.greedy else {"temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0}
    return GenerationConfig(
        max_new_tokens=settings.max_new_tokens,
        do_sample=not settings.greedy,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=model.generation_config.eos_token_id or tokenizer.eos_token_id,
        **extra,
        **sampling,
    )


class TransformersGenerator:
    """Batched generation with a local causal LM (left padding, length-sorted batches).

    Greedy when ``settings.temperature == 0``; otherwise sampling with ``temperature`` and ``top_p`` from a
    torch RNG seeded with ``settings.seed`` at the start of each ``generate`` call (the global RNG is left
    untouched). Generation stops per row at ``eos`` or at a stop string, and the answer is cut there.

    Prefix reuse (``prefix_reuse=True``): the prompts of a call that start with a shared token prefix of at
    least ``min_prefix_tokens`` tokens (``prefix`` when given, else their longest common prefix cut at a line
    end, or a prefix already cached) get that prefix's key/value cache, computed once and kept for later calls;
    each prompt then runs only its suffix. Greedy suffixes run through :class:`SharedPrefixDecoder`: every row
    attends to the one prefix copy, suffixes packed into one prefill pass, rows decoded together and leaving the
    batch as they finish, in groups of at most ``batch_size`` rows whose buffers fit ``decode_memory_mb``. Sampled
    suffixes run as padded ``generate`` batches. A prompt whose tokenisation does not start with the prefix's
    tokens takes the plain path, so the model's input tokens never change. ``prefix_caches`` holds the computed
    prefixes (``computed`` counts them).

    ``dtype`` overrides the default (float32 on CPU, bfloat16 on CUDA); it is then part of ``model_id``, so
    cached answers of different precisions never mix. ``dtype="auto"``: the default on CUDA; on the CPU, bfloat16
    when a check on eRAG labels (:mod:`rageval.generation.dtype_check`, made once per model and cached) says it
    gives float32's labels faster, with ``[bfloat16]`` in ``model_id``, else float32; ``precision_check`` holds
    the verdict.
    """

    def __init__(
        self,
        model_path_or_id: str | Path,
        gguf_file: str | None = None,
        device: str = "auto",
        batch_size: int = 8,
        *,
        model_id: str | None = None,
        dtype: str | None = None,
        prefix_reuse: bool = True,
        prefix: str | None = None,
        min_prefix_tokens: int = 32,
        decode_memory_mb: float = DEFAULT_DECODE_MEMORY_MB,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"TransformersGenerator.batch_size: expected >= 1, got {batch_size}")
        if dtype is not None and dtype != "auto" and dtype not in _DTYPES:
            raise ValueError(f"TransformersGenerator.dtype: expected auto, one of {_DTYPES} or None, got {dtype!r}")
        if min_prefix_tokens < 1:
            raise ValueError(f"TransformersGenerator.min_prefix_tokens: expected >= 1, got {min_prefix_tokens}")
        if decode_memory_mb <= 0:
            raise ValueError(f"TransformersGenerator.decode_memory_mb: expected > 0, got {decode_memory_mb}")
        self.decode_memory_mb = decode_memory_mb
        self.batch_size = batch_size
        self.device, dtype_name = resolve_device(device)
        base_id = model_id or (f"{model_path_or_id}::{gguf_file}" if gguf_file else str(model_path_or_id))
        self.precision_check: PrecisionCheck | None = None  # the auto precision's verdict, when one was made
        check_precision = False
        if dtype == "auto":  # CUDA: its default (bfloat16); CPU: the check's verdict, float32 until it is made
            dtype = None
            if not self.device.startswith("cuda") and check_enabled():
                self.precision_check = cached_check(base_id)
                check_precision = self.precision_check is None
                if self.precision_check is not None and self.precision_check.dtype != dtype_name:
                    dtype = self.precision_check.dtype
        dtype_name = dtype or dtype_name
        self.dtype = dtype_name
        self._model_id = f"{base_id} [{dtype}]" if dtype else base_id
        source = str(model_path_or_id)
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, **extra)
        self.tokenizer.padding_side = "left"  # decoder-only: new tokens must follow the prompt directly
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(
            source, local_files_only=True, dtype=getattr(torch, dtype_name), **extra
        ).to(self.device)  # type: ignore[arg-type]  # transformers' wrapped to() is typed as taking the model
        self.model.eval()
        self.prefix_reuse = prefix_reuse
        self.min_prefix_tokens = min_prefix_tokens
        self.prefix = prefix
        self.prefix_caches = PrefixCacheStore()
        text_config = self.model.config.get_text_config()
        self._sliding_window = getattr(text_config, "sliding_window", None) or float("inf")
        self._shared_prefix_attention = supports(self.model)
        self.decode_groups = 0  # row groups the greedy shared-prefix path decoded (tests and benchmarks read it)
        self.em_rows_stopped = 0  # rows ended by exact-match early stopping (tests and benchmarks read it)
        if check_precision:
            self._check_precision(base_id)

    def _check_precision(self, base_id: str) -> None:
        """Make and cache the auto precision's verdict (:mod:`rageval.generation.dtype_check`); switch to bfloat16
        when it says so."""
        check, bfloat16_model = measure_precision(self, base_id)
        save_check(check)
        self.precision_check = check
        if check.dtype == "bfloat16":
            self.model, self.dtype, self._model_id = bfloat16_model, "bfloat16", f"{base_id} [bfloat16]"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def supports_em_early_stop(self) -> bool:
        """Whether ``generate`` stops rows early given ``em_targets`` (:mod:`rageval.generation.em_stop`): not with
        a tokenizer that cleans up spaces when decoding (it then decodes in full: the same labels)."""
        return tokenizer_allows(self.tokenizer)

    @property
    def prefix(self) -> str | None:
        """The explicit shared prefix, or ``None`` to detect it from each call's prompts."""
        return self._prefix

    @prefix.setter
    def prefix(self, text: str | None) -> None:
        self._prefix = text or None
        self._prefix_ids = tuple(self.tokenizer(text)["input_ids"]) if text else None

    def generate(self, prompts: Sequence[str], settings: DecodingSettings, *,
                 em_targets: Sequence[Sequence[str]] | None = None) -> list[str]:
        """One answer per prompt (see the class docstring).

        ``em_targets`` (exact-match early stopping, :mod:`rageval.generation.em_stop`): prompt i's gold answers.
        A greedy row after a shared prefix then stops as soon as its exact match against them is sure to be 0,
        and its answer is its text so far marked with :data:`~rageval.generation.em_stop.STOPPED_MARK`; the exact
        match of every answer is the full decode's, other metrics' scores are not. Rows on the plain path or
        sampled, and every row with a tokenizer that cleans up spaces, decode in full.
        """
        import torch

        if not prompts:
            return []
        if em_targets is not None and len(em_targets) != len(prompts):
            raise ValueError(f"generate.em_targets: {len(em_targets)} answer lists for {len(prompts)} prompts")
        if not self.supports_em_early_stop:
            em_targets = None
        token_lists = self.tokenizer(list(prompts))["input_ids"]
        prefix = self._choose_prefix(token_lists)
        with_prefix = [i for i, ids in enumerate(token_lists) if prefix and starts_with(ids, prefix)]
        reused = set(with_prefix)
        plain = [i for i in range(len(prompts)) if i not in reused]
        answers: list[str | None] = [None] * len(prompts)
        devices = [torch.device(self.device)] if self.device.startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(settings.seed)
            cache = self.prefix_caches.get(prefix, self._compute_prefix_cache) if with_prefix and prefix else None
            if cache is None:  # no shared prefix, or a model whose prefix cache is not a dynamic one
                with_prefix, plain = [], list(range(len(prompts)))
            for batch in length_sorted_batches([len(token_lists[i]) for i in plain], self.batch_size):
                rows = [plain[j] for j in batch]
                texts = self._generate_batch([token_lists[i] for i in rows], settings)
                for i, text in zip(rows, texts):
                    answers[i] = apply_stop(text, settings.stop)
            if with_prefix and prefix and settings.greedy and self._shared_prefix_attention:
                rows = sorted(with_prefix, key=lambda i: -len(token_lists[i]))  # longest first: little slack
                suffixes = [token_lists[i][len(prefix):] for i in rows]
                rules = None if em_targets is None else [ExactMatchStop(em_targets[i], settings.stop) for i in rows]
                for i, answer in zip(rows, self._greedy_shared_prefix(prefix, cache, suffixes, settings, rules)):
                    answers[i] = answer
            elif with_prefix and prefix:  # (with_prefix is empty without a prefix)
                for batch in length_sorted_batches([len(token_lists[i]) for i in with_prefix], self.batch_size):
                    rows = [with_prefix[j] for j in batch]
                    suffixes = [token_lists[i][len(prefix):] for i in rows]
                    texts = self._generate_prefix_batch(prefix, cache, suffixes, settings)
                    for i, text in zip(rows, texts):
                        answers[i] = apply_stop(text, settings.stop)
        return answers  # type: ignore[return-value]

    def generate_samples(self, prompts: Sequence[str], settings: DecodingSettings, n: int) -> list[list[str]]:
        """``n`` sampled answers per prompt (``result[i][j]``: sample ``j`` of prompt ``i``).

        Sample ``j`` is ``generate(prompts, settings with seed=sample_seed(settings.seed, j))``, so every sample
        is reproducible on its own and can be cached like any other call. Needs ``settings.temperature > 0``
        (greedy decoding would give ``n`` copies of one answer).
        """
        if n < 1:
            raise ValueError(f"generate_samples.n: expected >= 1, got {n}")
        if settings.greedy:
            raise ValueError("generate_samples.settings.temperature: expected > 0 (sampling), got 0 (greedy)")
        per_seed = [
            self.generate(prompts, dataclasses.replace(settings, seed=sample_seed(settings.seed, j))) for j in range(n)
        ]
        return [[answers[i] for answers in per_seed] for i in range(len(prompts))]

    # ------------------------------------------------------------------ internals

    def _choose_prefix(self, token_lists: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
        if not self.prefix_reuse:
            return None
        if self._prefix_ids is not None:
            return self._prefix_ids if len(self._prefix_ids) >= self.min_prefix_tokens else None
        return choose_prefix(token_lists, self.prefix_caches.prefixes(), self.min_prefix_tokens, self._ends_line)

    def _ends_line(self, token_id: int) -> bool:
        # transformers types decode() as str | list[str] (a batch); one sequence decodes to a str.
        return self.tokenizer.decode([token_id]).endswith("\n")  # type: ignore[union-attr]

    def _compute_prefix_cache(self, prefix: tuple[int, ...]):
        import torch

        ids = torch.tensor([prefix], device=self.device)
        cache = self.model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
        return cache if self._is_dynamic(cache) else None

    def _generate_batch(self, token_lists: Sequence[Sequence[int]], settings: DecodingSettings) -> list[str]:
        """The plain path: whole prompts, left-padded to the longest."""
        import torch

        width = max(len(ids) for ids in token_lists)
        pad = self.tokenizer.pad_token_id
        input_ids = [[pad] * (width - len(ids)) + list(ids) for ids in token_lists]
        mask = [[0] * (width - len(ids)) + [1] * len(ids) for ids in token_lists]
        return self._run_generate(
            torch.tensor(input_ids, device=self.device), torch.tensor(mask, device=self.device), settings
        )

    def _generate_prefix_batch(self, prefix: tuple[int, ...], prefix_cache, suffixes: Sequence[Sequence[int]],
                               settings: DecodingSettings) -> list[str]:
        """Suffixes after a cached prefix.

        Sampling (and greedy on a model without shared-prefix attention): one ``generate`` call on rows ``prefix +
        left padding + suffix``, the padding masked out; positions come from the attention mask (generate counts
        only unmasked tokens), so every real token keeps the position it has in the plain path, and the random
        draws are those of the plain path's batch. A sliding-window layer, though, measures its window in cache
        slots, padding included: when a padded row could reach past the window, the longest rows (no padding) run
        on their own and the shorter ones as a narrower batch.
        """
        import torch

        width = max(len(s) for s in suffixes)
        if len(prefix) + width + settings.max_new_tokens > self._sliding_window and any(
            len(s) != width for s in suffixes
        ):
            longest = [i for i, s in enumerate(suffixes) if len(s) == width]
            shorter = [i for i, s in enumerate(suffixes) if len(s) != width]
            texts: list[str | None] = [None] * len(suffixes)
            for group in (longest, shorter):
                for i, text in zip(group, self._generate_prefix_batch(
                        prefix, prefix_cache, [suffixes[i] for i in group], settings)):
                    texts[i] = text
            return texts  # type: ignore[return-value]
        pad = self.tokenizer.pad_token_id
        input_ids = [list(prefix) + [pad] * (width - len(s)) + list(s) for s in suffixes]
        mask = [[1] * len(prefix) + [0] * (width - len(s)) + [1] * len(s) for s in suffixes]
        cache = copy.deepcopy(prefix_cache)  # generate extends the cache in place; the stored one must stay as is
        if len(suffixes) > 1:
            cache.batch_repeat_interleave(len(suffixes))
        return self._run_generate(
            torch.tensor(input_ids, device=self.device), torch.tensor(mask, device=self.device), settings,
            past_key_values=cache,
        )

    @staticmethod
    def _is_dynamic(cache) -> bool:
        """Whether every layer of ``cache`` is a plain or sliding-window dynamic layer (keys and values as tensors)."""
        from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

        return type(cache) is DynamicCache and all(
            type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in cache.layers
        )

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id or self.tokenizer.eos_token_id
        return set(eos) if isinstance(eos, (list, tuple)) else {eos}

    def _greedy_shared_prefix(self, prefix: tuple[int, ...], prefix_cache, suffixes: Sequence[Sequence[int]],
                              settings: DecodingSettings, rules: Sequence[ExactMatchStop] | None = None
                              ) -> list[str]:
        """Greedy answers (stop strings applied) of ``suffixes`` (longest first) after the cached ``prefix``: every
        row attends to the one prefix copy (:class:`SharedPrefixDecoder`); groups of at most ``batch_size`` rows
        within ``decode_memory_mb``. ``rules[i]``: row i's exact-match early stopping, if any."""
        decoder = SharedPrefixDecoder(self.model, PrefixKV.from_cache(prefix_cache, len(prefix)),
                                      memory_bytes=int(self.decode_memory_mb * 2**20), max_rows=self.batch_size)
        eos = self._eos_ids()
        stop = settings.stop
        stopped: list[str | None] = [None] * len(suffixes)
        previous: list[str | None] = [""] * len(suffixes)  # each row's last stable text (early stopping only)

        def finished(row: int, tokens: list[int]) -> bool:
            """Done at an eos token, once the text (leading whitespace ignored) holds a stop string, or when the
            row's rule says its exact match is already sure to be 0."""
            if tokens[-1] in eos:
                return True
            text: str = self.tokenizer.decode(tokens, skip_special_tokens=True)  # type: ignore[assignment]  # a str
            if any(s in text.lstrip() for s in stop):
                return True
            last = previous[row]
            if rules is None or last is None:
                return False
            sure = text.rstrip("\ufffd")
            if not sure.startswith(last):  # (never seen) decoding did not extend: never stop this row
                previous[row] = None
                return False
            previous[row] = sure
            if rules[row].cannot_match(sure):
                stopped[row] = sure
                return True
            return False

        generated = decoder.generate(suffixes, settings.max_new_tokens, finished)
        self.decode_groups += decoder.groups_run
        texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
        answers = []
        for row, text in enumerate(texts):
            if stopped[row] is None:
                answers.append(apply_stop(text, stop))
                continue
            answer = stopped_answer(stopped[row])  # type: ignore[arg-type]
            if rules is not None and exact_match(answer, rules[row].gold_answers):
                raise RuntimeError(f"exact-match early stopping: the stopped answer {answer!r} matches a gold answer")
            answers.append(answer)
            self.em_rows_stopped += 1
        return answers

    def _run_generate(self, input_ids, attention_mask, settings: DecodingSettings, past_key_values=None) -> list[str]:
        from transformers import StoppingCriteriaList

        prompt_length = input_ids.shape[1]
        config = generation_config(settings, self.model, self.tokenizer, bos_token_id=self.tokenizer.bos_token_id)
        stopping = StoppingCriteriaList(
            [_make_stop_criterion(self.tokenizer, prompt_length, settings.stop)] if settings.stop else []
        )
        extra = {"past_key_values": past_key_values} if past_key_values is not None else {}
        out = self.model.generate(
            input_ids=input_ids, attention_mask=attention_mask, generation_config=config,
            stopping_criteria=stopping, **extra,
        )
        return self.tokenizer.batch_decode(out[:, prompt_length:], skip_special_tokens=True)
