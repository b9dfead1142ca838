"""Fusion-in-Decoder (FiD) generation with a local encoder-decoder model (T5 family).

FiD (Izacard & Grave, "Leveraging Passage Retrieval with Generative Models for Open Domain Question
Answering", EACL 2021) encodes each retrieved passage together with the question on its own,
``"question: <q> title: <t> context: <p>"``, concatenates the encoder outputs of all passages along the sequence
axis (and their attention masks), and lets the decoder attend to the whole concatenation. Encoding cost grows
linearly with the number of passages (not quadratically, as with one long prompt), and the decoder fuses the
evidence.

torch and transformers are imported only when a model is loaded; nothing is ever downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rageval.generation.base import DecodingSettings, apply_stop
from rageval.generation.transformers_backend import _make_stop_criterion, generation_config, resolve_device
from rageval.types import Passage


def fid_passage_text(question: str, passage: Passage | None) -> str:
    """The encoder input of one (question, passage) pair in FiD's format; ``question: <q>`` alone without passage."""
    q = " ".join(question.split())
    if passage is None:
        return f"question: {q}"
    return f"question: {q} title: {' '.join(passage.title.split())} context: {' '.join(passage.text.split())}"


def _fid_rows(question: str, passages: Sequence[Passage]) -> list[str]:
    """The encoder rows of one FiD input: one per passage, or the question alone (closed book)."""
    return [fid_passage_text(question, p) for p in passages] or [fid_passage_text(question, None)]


FID_PROMPT_TAG = "rageval-fid-v1:"


def build_fid_prompt(question: str, passages: Sequence[Passage]) -> str:
    """A (question, passages) FiD input as one prompt string, so FiD calls go through the ``Generator``
    protocol and the LLM-call cache like any prompt: ``FID_PROMPT_TAG`` + canonical JSON."""
    body = {"question": question, "passages": [{"id": p.passage_id, "title": p.title, "text": p.text}
                                               for p in passages]}
    return FID_PROMPT_TAG + json.dumps(body, ensure_ascii=False, sort_keys=True)


def parse_fid_prompt(prompt: str) -> tuple[str, list[Passage]] | None:
    """The (question, passages) of a :func:`build_fid_prompt` string; ``None`` for any other prompt."""
    if not prompt.startswith(FID_PROMPT_TAG):
        return None
    body = json.loads(prompt[len(FID_PROMPT_TAG):])
    return body["question"], [Passage(p["id"], p["title"], p["text"]) for p in body["passages"]]


class FiDGenerator:
    """A local seq2seq model used as a FiD reader (:meth:`generate_fid`) or a plain generator (:meth:`generate`).

    ``max_passage_tokens`` truncates each encoded (question, passage) text, as FiD does (it used 200-250 tokens).
    Decoding follows :class:`~rageval.generation.base.DecodingSettings` as in
    :class:`~rageval.generation.transformers_backend.TransformersGenerator`: greedy at temperature 0, else
    sampling from a torch RNG seeded per call (the global RNG is left untouched); stop strings cut the answer.
    """

    def __init__(
        self,
        model_path: str | Path,
        device: str = "auto",
        batch_size: int = 8,
        *,
        model_id: str | None = None,
        max_passage_tokens: int = 256,
    ):
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"FiDGenerator.batch_size: expected >= 1, got {batch_size}")
        if max_passage_tokens < 1:
            raise ValueError(f"FiDGenerator.max_passage_tokens: expected >= 1, got {max_passage_tokens}")
        self.batch_size = batch_size
        self.max_passage_tokens = max_passage_tokens
        self.device, dtype_name = resolve_device(device)
        self._model_id = model_id or str(model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
        self.tokenizer.padding_side = "right"  # encoder inputs: padding is masked wherever it is
        self.model = AutoModelForSeq2SeqLM.from_pretrained(
            str(model_path), local_files_only=True, dtype=getattr(torch, dtype_name)
        ).to(self.device)
        if not self.model.config.is_encoder_decoder:
            raise ValueError(f"FiDGenerator: {model_path} is not an encoder-decoder model "
                             f"(model_type {self.model.config.model_type!r})")
        self.model.eval()

    @property
    def model_id(self) -> str:
        return self._model_id

    def build_prompt(self, question: str, passages: Sequence[Passage]) -> str:
        """How eRAG and E2E ask this model: a FiD input (one encoder row per passage), see :func:`build_fid_prompt`."""
        return build_fid_prompt(question, passages)

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]:
        """The :class:`Generator` protocol: a :func:`build_fid_prompt` string is answered with FiD over its
        passages; any other prompt is encoded whole (the plain encoder-decoder path). Order is kept."""
        parsed = [parse_fid_prompt(p) for p in prompts]
        texts = [[prompt] if item is None else _fid_rows(*item) for prompt, item in zip(prompts, parsed)]
        answers: list[str] = [""] * len(prompts)
        for truncate in (True, False):  # FiD rows are truncated per passage; plain prompts are not
            chosen = [i for i, item in enumerate(parsed) if (item is not None) == truncate]
            if chosen:
                for i, answer in zip(chosen, self._run([texts[i] for i in chosen], settings, truncate=truncate)):
                    answers[i] = answer
        return answers

    def generate_fid(self, questions: Sequence[str], passage_lists: Sequence[Sequence[Passage]],
                     settings: DecodingSettings) -> list[str]:
        """One answer per question, the decoder reading all of that question's passages at once (FiD).

        An empty passage list means closed book (the encoder reads ``question: <q>`` alone).
        """
        if len(questions) != len(passage_lists):
            raise ValueError(f"generate_fid: {len(questions)} questions but {len(passage_lists)} passage lists")
        texts = [_fid_rows(q, passages) for q, passages in zip(questions, passage_lists)]
        return self._run(texts, settings, truncate=True)

    def _run(self, texts: Sequence[Sequence[str]], settings: DecodingSettings, truncate: bool) -> list[str]:
        import torch

        answers: list[str] = []
        devices = [torch.device(self.device)] if self.device.startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(settings.seed)
            for start in range(0, len(texts), self.batch_size):
                raw = self._generate_batch(texts[start:start + self.batch_size], settings, truncate)
                answers.extend(apply_stop(text, settings.stop) for text in raw)
        return answers

    def _encode_fused(self, texts: Sequence[Sequence[str]], truncate: bool):
        """Encode every text as its own row, then concatenate each question's rows: ``(hidden, mask)`` of shape
        ``(questions, max fused length, d_model)`` and ``(questions, max fused length)``."""
        import torch

        flat = [t for group in texts for t in group]
        enc = self.tokenizer(flat, return_tensors="pt", padding=True, truncation=truncate,
                             max_length=self.max_passage_tokens if truncate else None).to(self.device)
        hidden = self.model.get_encoder()(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]
                                          ).last_hidden_state
        width = hidden.shape[1]
        fused, masks = [], []
        row = 0
        for group in texts:
            n = len(group)
            fused.append(hidden[row:row + n].reshape(n * width, -1))
            masks.append(enc["attention_mask"][row:row + n].reshape(n * width))
            row += n
        longest = max(m.shape[0] for m in masks)
        hidden_out = hidden.new_zeros((len(texts), longest, hidden.shape[-1]))
        mask_out = torch.zeros((len(texts), longest), dtype=enc["attention_mask"].dtype, device=hidden.device)
        for i, (h, m) in enumerate(zip(fused, masks)):
            hidden_out[i, : h.shape[0]] = h
            mask_out[i, : m.shape[0]] = m
        return hidden_out, mask_out

    def _generate_batch(self, texts: Sequence[Sequence[str]], settings: DecodingSettings, truncate: bool) -> list[str]:
        from transformers import StoppingCriteriaList
        from transformers.modeling_outputs import BaseModelOutput

        hidden, mask = self._encode_fused(texts, truncate)
        config = generation_config(settings, self.model, self.tokenizer,
                                   decoder_start_token_id=self.model.config.decoder_start_token_id)
        # The decoder's output starts with its start token: the answer begins at position 1.
        stopping = StoppingCriteriaList(
            [_make_stop_criterion(self.tokenizer, 1, settings.stop)] if settings.stop else []
        )
        out = self.model.generate(
            encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=mask,
            generation_config=config, stopping_criteria=stopping,
        )
        return self.tokenizer.batch_decode(out[:, 1:], skip_special_tokens=True)
