"""The shipped demo runs (``data/runs/``): one ``rageval evaluate`` config file each, under
``data/configs/demo_runs/`` (a file's path there is its run's path under the runs folder), built through the one
pipeline (:func:`rageval.pipeline.run.evaluate`) by ``rageval demo-runs``.

Each config names a shipped dataset slice (``dataset`` nq_open or hotpotqa, ``offset``, ``num_queries``) and its
candidates (``retriever``: bm25, dense, or HotpotQA's own ``candidates``), and asks for the re-ranking check
(``rerank_check``). They are built with Gemma-3-270M in bfloat16 through the LLM-call cache, sharing one model and
one corpus, so a rebuild costs no LLM call.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rageval.errors import DataError, RagevalError
from rageval.paths import DATA_DIR
from rageval.pipeline.config import EvaluateConfig, build_config, read_config_file

#: The folder of the shipped demo runs' configs.
DEMO_CONFIGS_DIR = DATA_DIR / "configs" / "demo_runs"
#: The file of a configs folder that orders its runs (for the build and for docs/results.md).
ORDER_FILE = "order.txt"
#: The RAG LLM precision of the demo runs: bfloat16 (twice as fast on CPU as float32; about 1 in 10 greedy answers
#: differ from float32, so the precision is part of the model id and of every cache key).
DEMO_DTYPE = "bfloat16"

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class DemoRun:
    """One shipped run: its ``name``, its ``file_name`` relative to the runs folder and its ``config``."""

    name: str
    file_name: str
    config: EvaluateConfig


def load_demo_runs(paths: Sequence[Path] | Path | None = None) -> tuple[DemoRun, ...]:
    """The demo runs of config files or folders of them (default: :data:`DEMO_CONFIGS_DIR`); a folder's runs in
    the order of its ``order.txt`` (:func:`folder_configs`), each file's run at the same relative path under the
    runs folder (``demo/x.toml`` -> ``demo/x.sqlite``). A bad config is a :class:`~rageval.errors.DataError` naming
    the file."""
    paths = [DEMO_CONFIGS_DIR] if paths is None else [paths] if isinstance(paths, Path | str) else list(paths)
    runs = []
    for path in map(Path, paths):
        files = [(f, f.relative_to(path)) for f in folder_configs(path)] if path.is_dir() else [
            (path, Path(path.name))]
        for file, relative in files:
            try:
                config = build_config(read_config_file(file), {})
            except RagevalError as error:
                if isinstance(error, DataError):
                    raise
                raise DataError(file, str(error)) from error
            if not config.shipped:
                raise DataError(file, "a demo run evaluates a shipped dataset (dataset, retriever; no files)")
            runs.append(DemoRun(file.stem, relative.with_suffix(".sqlite").as_posix(), config))
    return tuple(runs)


def folder_configs(folder: Path) -> list[Path]:
    """The ``*.toml`` configs under ``folder``: those its ``order.txt`` lists (one path a line, relative to the
    folder; ``#`` starts a comment) in that order, then the others in path order. A listed file that does not exist
    is a :class:`~rageval.errors.DataError` naming ``order.txt``."""
    found = sorted(folder.rglob("*.toml"))
    order_file = folder / ORDER_FILE
    listed: list[Path] = []
    if order_file.is_file():
        for number, line in enumerate(order_file.read_text(encoding="utf-8").splitlines(), start=1):
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            if folder / name not in found:
                raise DataError(order_file, f"no config {name!r} in {folder}", line=number)
            listed.append(folder / name)
    return listed + [f for f in found if f not in listed]


def build_demo_runs(out_dir: Path, runs: Sequence[DemoRun], *, scale: float = 1.0, dtype: str | None = DEMO_DTYPE,
                    log: Log = _stderr, command: str = "") -> list[Path]:
    """Build ``runs`` (question counts times ``scale``; the model at ``dtype``) into ``out_dir``, each written as
    soon as it is complete. One model per distinct model setting and one corpus serve every run."""
    from rageval.generation.factory import load_generator
    from rageval.pipeline.run import evaluate
    from rageval.pipeline.sources import ShippedData

    shipped, models, paths = ShippedData(), {}, []
    for demo in runs:
        config = demo.config
        if config.num_queries is not None:
            config = replace(config, num_queries=max(1, round(config.num_queries * scale)))
        config = replace(config, model_settings=replace(config.model_settings, dtype=dtype))
        if config.model_settings not in models:
            models[config.model_settings] = load_generator(config.model_settings)
        started = time.perf_counter()
        prefix = f"[{demo.name}] "

        def tagged(message: str, prefix: str = prefix) -> None:
            log(prefix + message)

        paths.append(evaluate(config, generator=models[config.model_settings], shipped=shipped,
                              out=Path(out_dir) / demo.file_name, log=tagged, command=command,
                              encoder=shipped.retrievers.encoder if "reteval" in config.options().methods else None))
        log(f"wrote {paths[-1]} ({paths[-1].stat().st_size / 1e6:.1f} MB, {time.perf_counter() - started:.0f} s)")
    return paths


def select_demo_runs(runs: Sequence[DemoRun], only: str | None) -> tuple[DemoRun, ...]:
    """The runs named in ``only`` (comma-separated; None or empty: all), in the order of ``runs``; an unknown name
    is a :class:`~rageval.errors.RagevalError` listing the known ones."""
    if not only:
        return tuple(runs)
    wanted = only.split(",")
    unknown = sorted(set(wanted) - {r.name for r in runs})
    if unknown:
        raise RagevalError(f"--only: unknown run(s) {', '.join(unknown)}; known: {', '.join(r.name for r in runs)}")
    return tuple(r for r in runs if r.name in wanted)


def add_demo_correlations(out_dir: Path, runs: Sequence[DemoRun], *, command: str = "") -> list[tuple[Path, int]]:
    """``rageval demo-runs --correlations-only``: each built run of ``runs`` under ``out_dir`` gets the
    correlations it lacks (:func:`rageval.pipeline.evaluate.store_correlations`); (path, correlations added) per
    run. A run not built yet is an error saying how to build it."""
    from rageval.pipeline.evaluate import store_correlations

    added = []
    for demo in runs:
        path = Path(out_dir) / demo.file_name
        if not path.is_file():
            raise RagevalError(f"{path}: no such run; build it first (rageval demo-runs --only {demo.name})")
        added.append((path, store_correlations(path, command=command)))
    return added
