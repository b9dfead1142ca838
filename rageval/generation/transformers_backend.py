"""A :class:`~rageval.generation.base.Generator` over any Hugging Face causal LM stored locally.

Nothing is ever downloaded: models load with ``local_files_only=True`` (stricter than ``HF_HUB_OFFLINE``), from
a local directory or from a model id already in the Hugging Face cache. torch and transformers are imported
only when a model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rageval.generation.base import DecodingSettings, apply_stop


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


class TransformersGenerator:
    """Batched generation with a local causal LM (left padding, length-sorted batches).

    Greedy when ``settings.temperature == 0``; otherwise sampling with ``temperature`` and ``top_p`` from a
    torch RNG seeded with ``settings.seed`` at the start of each ``generate`` call (the global RNG is left
    untouched). Generation stops per row at ``eos`` or at a stop string, and the answer is cut there.
    """

    def __init__(
        self,
        model_path_or_id: str | Path,
        gguf_file: str | None = None,
        device: str = "auto",
        batch_size: int = 8,
        *,
        model_id: str | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"TransformersGenerator.batch_size: expected >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.device, dtype_name = resolve_device(device)
        self._model_id = model_id or (f"{model_path_or_id}::{gguf_file}" if gguf_file else str(model_path_or_id))
        source = str(model_path_or_id)
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, **extra)
        self.tokenizer.padding_side = "left"  # decoder-only: new tokens must follow the prompt directly
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(
            source, local_files_only=True, dtype=getattr(torch, dtype_name), **extra
        ).to(self.device)
        self.model.eval()

    @property
    def model_id(self) -> str:
        return self._model_id

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]:
        import torch

        if not prompts:
            return []
        lengths = [len(ids) for ids in self.tokenizer(list(prompts))["input_ids"]]
        answers: list[str | None] = [None] * len(prompts)
        devices = [torch.device(self.device)] if self.device.startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(settings.seed)
            for batch in length_sorted_batches(lengths, self.batch_size):
                texts = self._generate_batch([prompts[i] for i in batch], settings)
                for i, text in zip(batch, texts):
                    answers[i] = apply_stop(text, settings.stop)
        return answers  # type: ignore[return-value]

    def _generate_batch(self, prompts: list[str], settings: DecodingSettings) -> list[str]:
        from transformers import GenerationConfig, StoppingCriteriaList

        enc = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)
        prompt_length = enc["input_ids"].shape[1]
        sampling = {} if settings.greedy else {
            "temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0,
        }
        config = GenerationConfig(
            max_new_tokens=settings.max_new_tokens,
            do_sample=not settings.greedy,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.model.generation_config.eos_token_id or self.tokenizer.eos_token_id,
            bos_token_id=self.tokenizer.bos_token_id,
            **sampling,
        )
        stopping = StoppingCriteriaList(
            [_make_stop_criterion(self.tokenizer, prompt_length, settings.stop)] if settings.stop else []
        )
        out = self.model.generate(**enc, generation_config=config, stopping_criteria=stopping)
        return self.tokenizer.batch_decode(out[:, prompt_length:], skip_special_tokens=True)
