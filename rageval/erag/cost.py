"""eRAG versus end-to-end evaluation cost: wall time, CPU time and peak memory above the loaded model (eRAG,
Table 2).

Each configuration runs in a fresh process (``multiprocessing`` spawn) that loads the model, runs the same short
warm-up prompt (the first single-passage prompt, whatever the configuration, so no configuration's working memory
is already in the baseline), records its resident set size (RSS) as the baseline, resets the kernel's peak-RSS
mark (``/proc/self/clear_refs``) and generates, uncached. CPU time is the process's (all its threads), which other
processes on a shared machine change far less than wall time. "Peak memory above the loaded model" is peak RSS -
baseline, the peak being the kernel's ``VmHWM`` (or, where it cannot be reset, RSS sampled every ``interval_s``):
on CPU, RSS holds the activations and the key/value cache. On CUDA the same code reads
``torch.cuda.max_memory_allocated`` instead.

The configurations follow the paper (Salemi & Zamani, SIGIR 2024, §3.2):

- ``e2e``: the whole top-k in one prompt per query, batch size 1;
- ``erag-query``: eRAG's k single-passage prompts of a query as one batch (the paper's query-level setting);
- ``erag-document``: eRAG one passage at a time, batch size 1 (the document-level setting);
- ``erag-query-em``: ``erag-query`` with exact-match early stopping (:mod:`rageval.generation.em_stop`): a row ends
  once its exact match is sure to be 0. The same ``erag:em`` labels; only for runs labelled by exact match alone.

Same model, same queries, same passages, same decoding; a fresh process per configuration so that one's
allocator state cannot flatter the next.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import Empty

CONFIGURATIONS = ("e2e", "erag-query", "erag-document", "erag-query-em")


@dataclass(frozen=True)
class CostMeasurement:
    configuration: str
    prompts: int
    batch_size: int
    wall_s: float
    baseline_mb: float
    peak_above_model_mb: float
    device: str
    cpu_s: float | None = None  # measurements written before CPU time was recorded have none
    em_labels: list[float] | None = None  # each prompt's exact match (eRAG configurations given the answers)


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        resident_pages = int(handle.read().split()[1])
    import os

    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS; False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _kernel_peak_rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class _PeakSampler:
    """Samples RSS in a background thread; ``peak`` is the largest value seen."""

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self.peak = _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mb())
            self._stop.wait(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def _measure_in_child(configuration: str, batches: list[list[str]], warm_up: str, batch_size: int,
                      dtype: str | None, threads: int | None, interval_s: float, model: str | None,
                      options: dict, queue, targets: list[list[list[str]]] | None = None,
                      early_stop: bool = False) -> None:
    try:
        import torch

        if threads:
            torch.set_num_threads(threads)
        from rageval.generation.base import DecodingSettings
        from rageval.generation.em_stop import generate_stopping_early
        from rageval.generation.factory import DEFAULT_MODEL, ModelSettings, load_generator

        generator = load_generator(ModelSettings(model=model or DEFAULT_MODEL, batch_size=batch_size, dtype=dtype))
        for name, value in options.items():  # e.g. the decoding memory budget
            setattr(generator, name, value)
        decoding = DecodingSettings()
        generator.generate([warm_up], decoding)  # lazy initialisation is not the workload
        device = str(getattr(generator, "device", "cpu"))
        cuda = device.startswith("cuda")
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            baseline = torch.cuda.memory_allocated() / 2**20
        else:
            baseline = _rss_mb()
        kernel_peak = not cuda and _reset_peak_rss()
        started, cpu_started = time.perf_counter(), time.process_time()
        with _PeakSampler(interval_s) as sampler:
            outputs = []
            for i, batch in enumerate(batches):
                if early_stop and targets is not None:  # exact-match early stopping against the gold answers
                    outputs.append(generate_stopping_early(generator, batch, decoding, targets[i]))
                else:
                    outputs.append(generator.generate(batch, decoding))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if cuda:
            peak = torch.cuda.max_memory_allocated() / 2**20
        else:
            peak = max(sampler.peak, _kernel_peak_rss_mb()) if kernel_peak else sampler.peak
        labels = None
        if targets is not None:
            from rageval.text_metrics import exact_match

            labels = [exact_match(output, golds) for batch_outputs, batch_targets in zip(outputs, targets)
                      for output, golds in zip(batch_outputs, batch_targets)]
        queue.put(asdict(CostMeasurement(configuration, sum(map(len, batches)), batch_size, round(wall, 2),
                                         round(baseline, 1), round(peak - baseline, 1), device,
                                         round(cpu, 2), labels)))
    except BaseException as error:  # report, never hang the parent
        queue.put({"error": f"{type(error).__name__}: {error}"})


def measure_configuration(configuration: str, erag_prompts: Sequence[Sequence[str]], e2e_prompts: Sequence[str],
                          *, dtype: str | None = None, threads: int | None = None, interval_s: float = 0.002,
                          model: str | None = None, options: dict | None = None,
                          answers: Sequence[Sequence[str]] | None = None) -> CostMeasurement:
    """Run ``configuration`` (one of :data:`CONFIGURATIONS`) in a fresh process and measure it, with the
    packaged Gemma (``model=None``) or any other local model :func:`~rageval.generation.factory.load_generator`
    loads (``"smollm2-135m-instruct"``, a Hugging Face model folder).

    ``erag_prompts[i]`` are query i's single-passage prompts, ``e2e_prompts[i]`` its top-k prompt. ``options``:
    generator attributes set after loading (e.g. ``{"decode_memory_mb": 32}``). ``answers[i]``: query i's gold
    answers (``erag-query-em`` needs them).
    """
    targets = None
    if configuration == "e2e":
        batches, batch_size = [[p] for p in e2e_prompts], 1
    elif configuration in ("erag-query", "erag-query-em"):
        batch_size = max(len(p) for p in erag_prompts)
        batches = [list(p) for p in erag_prompts]
        if configuration == "erag-query-em" and answers is None:
            raise ValueError("cost measurement 'erag-query-em': needs the queries' gold answers")
        if answers is not None:
            targets = [[list(answers[i])] * len(p) for i, p in enumerate(erag_prompts)]
    elif configuration == "erag-document":
        batches, batch_size = [[p] for prompts in erag_prompts for p in prompts], 1
    else:
        raise ValueError(f"unknown configuration {configuration!r}; choose one of {CONFIGURATIONS}")
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_measure_in_child,
                              args=(configuration, batches, erag_prompts[0][0], batch_size, dtype, threads,
                                    interval_s, None if model is None else str(model), dict(options or {}),
                                    queue, targets, configuration == "erag-query-em"))
    process.start()
    result = None
    while result is None:
        try:
            result = queue.get(timeout=5)
        except Empty:
            if not process.is_alive():  # killed (e.g. out of memory) before it could report
                raise RuntimeError(f"cost measurement {configuration!r}: its process died with exit code "
                                   f"{process.exitcode} before reporting") from None
    process.join()
    if "error" in result:
        raise RuntimeError(f"cost measurement {configuration!r} failed in its child process: {result['error']}")
    return CostMeasurement(**result)


def cost_prompts(run_path, num_queries: int, k: int) -> tuple[list[list[str]], list[str], dict]:
    """The eRAG and E2E prompts of the first ``num_queries`` queries of a run file, at ``k`` (its own lists);
    ``described["answers"]``: each query's gold answers."""
    from rageval.prompts import build_qa_prompt
    from rageval.store import RunReader

    with RunReader(run_path) as reader:
        rankings = reader.rankings()
        table = reader.query_table()
        ids = table["query_id"].tolist()[:num_queries]
        texts = dict(zip(table["query_id"], table["text"]))
        answers = {q: json.loads(a) if isinstance(a, str) else list(a)
                   for q, a in zip(table["query_id"], table["answers"])}
        passages = {}
        for query_id in ids:
            frame = reader.ranking_table(query_id)
            for row in frame.itertuples(index=False):
                passages[row.passage_id] = (row.title, row.text)
        settings = reader.settings()
    from rageval.types import Passage

    erag_prompts, e2e_prompts = [], []
    for query_id in ids:
        top = [Passage(pid, *passages[pid]) for pid in rankings[query_id].passage_ids[:k]]
        erag_prompts.append([build_qa_prompt(texts[query_id], [p]) for p in top])
        e2e_prompts.append(build_qa_prompt(texts[query_id], top))
    described = {"run": str(run_path), "dataset": settings.get("dataset"), "retriever": settings.get("retriever"),
                 "num_queries": len(ids), "k": k, "answers": [list(answers[q]) for q in ids]}
    return erag_prompts, e2e_prompts, described


def cost_report(run_path: Path, out: Path, *, num_queries: int = 10, k: int = 10, dtype: str | None = "bfloat16",
                threads: int | None = None, command: str = "",
                log: Callable[[str], None] = lambda message: None) -> Path:
    """``rageval cost-report``: every configuration of :data:`CONFIGURATIONS` measured
    (:func:`measure_configuration`; ``log`` gets each measurement) on the first ``num_queries`` queries of the run
    file ``run_path`` at ``k``, written to ``out`` as JSON with the model, device and threads; returns ``out``."""
    import torch

    from rageval.generation.gemma import gemma_model_id
    from rageval.paths import REPO_ROOT

    erag_prompts, e2e_prompts, described = cost_prompts(run_path, num_queries, k)
    if run_path.resolve().is_relative_to(REPO_ROOT):
        described["run"] = str(run_path.resolve().relative_to(REPO_ROOT))
    measurements = []
    for configuration in CONFIGURATIONS:
        result = measure_configuration(configuration, erag_prompts, e2e_prompts, dtype=dtype or None,
                                       threads=threads, answers=described["answers"])
        log(str(result))
        measurements.append(result.__dict__)
    report = described | {"model": f"{gemma_model_id()} [{dtype}]" if dtype else gemma_model_id(),
                          "device": measurements[0]["device"], "threads": threads or torch.get_num_threads(),
                          "measurements": measurements, "command": command}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return out
