"""The precision a local model runs in on the CPU under ``dtype="auto"``: bfloat16 where it gives float32's eRAG
labels and runs faster, else float32.

bfloat16 halves the bytes each weight read moves and, on CPUs with AMX or avx512_bf16, multiplies matrix
throughput, but it rounds differently: some greedy answers change. What eRAG keeps of an answer is its label
G_q[d] = E(M(q, {d}), y) (Salemi & Zamani, SIGIR 2024), so the check compares labels: the first
:data:`SAMPLE_QUESTIONS` questions of the shipped NQ-open oracle file, each asked with its gold passage and with the
next question's (a distractor), answered greedily in both precisions and labelled by exact match. bfloat16 is kept
only when every label agrees and its CPU time is below float32's.

The verdict is computed on a model's first use and cached as JSON under ``cache_dir()/precision/``, keyed by the
model's id (or path) and the torch version; the generator keeps it as ``precision_check`` and a run stores it in its
settings (``precision``). ``RAGEVAL_DTYPE_CHECK=off`` makes ``auto`` the device default without a check (the tests
set it, so that no test's model id depends on a timing).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: NQ-open questions in the check; each is asked with 2 passages, so twice as many labels are compared.
SAMPLE_QUESTIONS = 15
CHECK_VERSION = 1
CHECK_SWITCH = "RAGEVAL_DTYPE_CHECK"


@dataclass(frozen=True)
class PrecisionCheck:
    """One model's verdict: ``dtype`` is what ``auto`` runs it in; the rest says why."""

    model: str
    torch_version: str
    dtype: str
    labels: int
    labels_agreeing: int
    answers_agreeing: int
    float32_cpu_s: float
    bfloat16_cpu_s: float
    sample: str
    version: int = CHECK_VERSION

    @property
    def speedup(self) -> float:
        """float32's CPU time over bfloat16's on the sample."""
        return self.float32_cpu_s / self.bfloat16_cpu_s if self.bfloat16_cpu_s > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"speedup": round(self.speedup, 2)}


def check_enabled() -> bool:
    return os.environ.get(CHECK_SWITCH, "").strip().lower() not in ("0", "off", "false", "no")


def check_path(model_key: str, root: Path | None = None) -> Path:
    """Where the verdict for ``model_key`` (a model id or path) under this torch version is cached."""
    import torch

    from rageval.paths import cache_dir

    digest = hashlib.sha256(f"{model_key}\n{torch.__version__}".encode()).hexdigest()[:16]
    return (root if root is not None else cache_dir()) / "precision" / f"{digest}.json"


def cached_check(model_key: str) -> PrecisionCheck | None:
    """The cached verdict for ``model_key``, or ``None`` (none yet, unreadable, or from another check version)."""
    try:
        values = json.loads(check_path(model_key).read_text(encoding="utf-8"))
        values.pop("speedup", None)
        check = PrecisionCheck(**values)
    except (OSError, ValueError, TypeError):
        return None
    return check if check.version == CHECK_VERSION and check.model == model_key else None


def save_check(check: PrecisionCheck) -> Path:
    path = check_path(check.model)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(check.as_dict(), indent=2) + "\n", encoding="utf-8")
    partial.replace(path)  # atomic: two processes checking at once both write a whole file
    return path


def check_sample() -> tuple[list[str], list[tuple[str, ...]], str]:
    """The check's prompts, each prompt's gold answers, and a description of the sample."""
    from rageval.data.loaders import read_nq_open_oracle
    from rageval.paths import DATA_DIR
    from rageval.prompts import build_qa_prompt
    from rageval.types import Passage

    path = DATA_DIR / "nq_open" / "nq_open_oracle_psgs_w100.jsonl.gz"
    records = read_nq_open_oracle(path)[:SAMPLE_QUESTIONS + 1]
    prompts, answers = [], []
    for record, other in itertools.pairwise(records):
        for passage in (record, other):
            prompts.append(build_qa_prompt(record.question, [Passage(str(passage.line), passage.title, passage.text)]))
            answers.append(record.answers)
    described = (f"{path.name}: the first {SAMPLE_QUESTIONS} questions, each with its gold passage and the next "
                 "question's; exact-match labels, greedy decoding")
    return prompts, answers, described


def cpu_seconds() -> float:
    """The process's CPU time (all threads): steadier than wall time beside other work."""
    return time.process_time()


def measure_precision(generator, model_key: str) -> tuple[PrecisionCheck, Any]:
    """Compare ``generator`` (a :class:`~rageval.generation.transformers_backend.TransformersGenerator` loaded in
    float32) with a bfloat16 copy of its model on :func:`check_sample`: the verdict, and that copy. The generator
    is left in float32."""
    import torch

    from rageval.generation.base import DecodingSettings
    from rageval.text_metrics import exact_match

    prompts, gold, described = check_sample()
    settings = DecodingSettings()
    float32_model = generator.model
    bfloat16_model = copy.deepcopy(float32_model).to(torch.bfloat16)
    answers, seconds = {}, {}
    try:
        for name, model in (("float32", float32_model), ("bfloat16", bfloat16_model)):
            generator.model = model
            generator.prefix_caches.clear()
            generator.generate(prompts[:1], settings)  # one-time kernel set-up is not the comparison
            generator.prefix_caches.clear()
            started = cpu_seconds()
            answers[name] = generator.generate(prompts, settings)
            seconds[name] = cpu_seconds() - started
    finally:
        generator.model = float32_model
        generator.prefix_caches.clear()
    labels = {name: [exact_match(a, g) for a, g in zip(values, gold)] for name, values in answers.items()}
    agreeing = sum(a == b for a, b in zip(labels["float32"], labels["bfloat16"]))
    faster = seconds["bfloat16"] < seconds["float32"]
    return PrecisionCheck(
        model=model_key, torch_version=torch.__version__,
        dtype="bfloat16" if agreeing == len(prompts) and faster else "float32", labels=len(prompts),
        labels_agreeing=agreeing,
        answers_agreeing=sum(a == b for a, b in zip(answers["float32"], answers["bfloat16"])),
        float32_cpu_s=round(seconds["float32"], 3), bfloat16_cpu_s=round(seconds["bfloat16"], 3),
        sample=described), bfloat16_model


def precision_of(generator) -> dict[str, Any] | None:
    """The precision verdict of ``generator`` or of the generator it wraps (a cache, a meter), for a run's
    settings; ``None`` when its precision was given, not checked."""
    seen = 0
    while generator is not None and seen < 8:
        check = getattr(generator, "precision_check", None)
        if check is not None:
            return check.as_dict()
        generator = getattr(generator, "generator", None)
        seen += 1
    return None
