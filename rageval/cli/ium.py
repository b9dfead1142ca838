"""``rageval ium``: offline and online IUM with four agents and the baselines, end to end, into a run file; or,
with ``--runs``, with one agent per eRAG run file the user has. The runs are built by
:func:`rageval.ium.experiment.build_shipped_ium_run` and :func:`rageval.ium.run_file_agents.build_ium_run_over_runs`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rageval.paths import DATA_DIR, RUNS_DIR


def _init_folder(value: str | None) -> str | None:
    """``--init``: a saved cross-encoder folder, or ``nq`` for the latest one ``rageval train-reranker`` cached."""
    if not value:
        return None
    if value == "nq":
        from rageval.retrieval.evaluate import latest_nq_reranker_dir

        return str(latest_nq_reranker_dir())
    return str(Path(value).expanduser().resolve())


def _log(started: float):
    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {message}", file=sys.stderr, flush=True)

    return log


def cmd_ium_runs(args: argparse.Namespace) -> int:
    from rageval.ium.experiment import default_checkpoints_dir, summary_table
    from rageval.ium.learning import IumConfig
    from rageval.ium.run_file_agents import (
        RunSplit,
        build_ium_run_over_runs,
        build_label_ablation,
        label_ablation_table,
    )
    from rageval.paths import user_runs_dir

    started = time.perf_counter()
    config = IumConfig(train_k=args.train_k, iterations=args.iterations, epochs=args.epochs,
                       online_batch_sizes=tuple(int(b) for b in args.batch_sizes.split(",")), seed=args.seed,
                       encoder=str(Path(args.encoder).expanduser().resolve()) if args.encoder else None,
                       init=_init_folder(args.init), train_id_tokens=args.train_id_tokens)
    split = RunSplit(test_share=args.test_share, max_train=args.max_train, max_test=args.max_test, seed=args.seed)
    options = {"metric": args.metric, "k": args.k, "depth": args.run_depth, "first_labels": args.first_labels,
               "log": _log(started), "command": "rageval " + " ".join(sys.argv[1:]),
               "checkpoints": None if args.no_checkpoints else default_checkpoints_dir()}
    if args.label_ablation:
        ablation = build_label_ablation(args.runs, config, split, args.label_ablation, cache_path=args.cache,
                                        **options)
        print(label_ablation_table(ablation).to_string())
        print(f"wrote {args.label_ablation} in {time.perf_counter() - started:.0f} s")
        return 0
    out = args.out or user_runs_dir() / "ium" / f"{args.name}.sqlite"
    result = build_ium_run_over_runs(args.runs, config, split, out, cache_path=args.cache, name=args.name, **options)
    print(summary_table(result.outcomes).round(3).to_string())
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - started:.0f} s")
    return 0


def cmd_ium(args: argparse.Namespace) -> int:
    if args.runs:
        return cmd_ium_runs(args)
    from rageval.ium.experiment import FULL_PLAN, IumPlan, build_shipped_ium_run, default_checkpoints_dir, summary_table
    from rageval.ium.learning import IumConfig

    if args.preset == "full":
        plan = FULL_PLAN
    else:
        config = IumConfig(first_stage_depth=args.depth, train_k=args.train_k, iterations=args.iterations,
                           epochs=args.epochs, online_batch_sizes=tuple(int(b) for b in args.batch_sizes.split(",")),
                           seed=args.seed, init=_init_folder(args.init), train_id_tokens=args.train_id_tokens)
        plan = IumPlan(num_train=args.num_train, num_test=args.num_test, config=config)
    started = time.perf_counter()
    out = args.out or RUNS_DIR / "ium" / plan.file_name
    result = build_shipped_ium_run(plan, out, data_dir=args.data_dir, dense=args.dense, dtype=args.dtype or None,
                                   cache_path=args.cache, log=_log(started),
                                   checkpoints=None if args.no_checkpoints else default_checkpoints_dir(),
                                   command="rageval " + " ".join(sys.argv[1:]))
    print(summary_table(result.outcomes).round(3).to_string())
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - started:.0f} s")
    return 0


def add_parsers(sub) -> None:
    ium = sub.add_parser("ium", help="Iterative Utility Maximization: 4 agents (NQ / HotpotQA x Gemma / SmolLM2), "
                                     "offline + online IUM and the baselines, into a run file; --runs: one agent "
                                     "per eRAG run file of yours")
    runs = ium.add_argument_group(
        "agents from your run files (--runs)",
        "Each run file is one agent (its dataset, model, downstream metric, questions, ranking and eRAG labels); "
        "offline iteration 1 learns from every label the runs hold; other labels and answers come from the run, "
        "then the LLM-call cache, then the run's own model (as rageval evaluate recorded it). --preset, "
        "--num-train, --num-test, --depth, --no-dense and --dtype are for the four shipped agents only.")
    runs.add_argument("--runs", nargs="+", type=Path, metavar="RUN", help="eRAG run files (.sqlite), one per agent")
    runs.add_argument("--metric", help="the downstream metric of every agent (em, f1, accuracy, rougeL; default: "
                                       "each run's own)")
    runs.add_argument("--k", type=int, help="passages each agent reads (default: each run's largest stored E2E k "
                                            "below its ranking depth)")
    runs.add_argument("--run-depth", type=int, help="first-stage candidates per question (default: each run's "
                                                    "whole ranking)")
    runs.add_argument("--first-labels", type=int,
                      help="offline iteration 1 learns from the stored labels of each training question's first N "
                           "candidates only (default: every stored label; an ablation)")
    runs.add_argument("--test-share", type=float, default=0.3,
                      help="share of each task's questions held out for testing (a seeded hash per question)")
    runs.add_argument("--max-train", type=int, help="at most this many training questions per agent")
    runs.add_argument("--max-test", type=int, help="at most this many test questions per agent")
    runs.add_argument("--encoder", help="the encoder an untrained engine starts from (a local Hugging Face "
                                        "folder; default all-MiniLM-L6-v2)")
    runs.add_argument("--label-ablation", type=Path, metavar="OUT.json",
                      help="train offline IUM only and score each test list by the runs' stored eRAG labels of its "
                           "passages (mean label of the top k; no answers generated) into OUT.json: one arm of an "
                           "ablation, at the cost of its training")
    runs.add_argument("--name", default="ium-runs", help="the run's name (default file: <your runs folder>/ium/"
                                                         "<name>.sqlite)")
    ium.add_argument("--init", help="warm start: a saved cross-encoder folder the engine starts from (with the "
                                    "task/model id tokens added), or 'nq' for the NQ reranker `rageval "
                                    "train-reranker` cached; default: an untrained head")
    ium.add_argument("--train-id-tokens", action="store_true",
                     help="train the embeddings of the task/model id tokens too (otherwise only the top layers and "
                          "the head train, and the ids keep their random start vectors)")
    ium.add_argument("--preset", choices=("default", "full"), default="default",
                     help="'full': the GPU configuration (rageval.ium.experiment.FULL_PLAN); "
                          "the size flags are ignored")
    ium.add_argument("--num-train", type=int, default=40, help="training queries per dataset (shared by its agents)")
    ium.add_argument("--num-test", type=int, default=30, help="test queries per dataset")
    ium.add_argument("--depth", type=int, default=30, help="BM25 candidates re-scored per query (paper: 100)")
    ium.add_argument("--train-k", type=int, default=5, help="passages served per training query (paper: 32)")
    ium.add_argument("--iterations", type=int, default=2, help="offline IUM iterations T (paper: 3)")
    ium.add_argument("--epochs", type=int, default=2)
    ium.add_argument("--batch-sizes", default="10,20", help="online IUM batch sizes b (the first is the default)")
    ium.add_argument("--no-dense", dest="dense", action="store_false", help="skip the dense baseline")
    ium.add_argument("--seed", type=int, default=0)
    ium.add_argument("--dtype", default="bfloat16", help="LLM precision ('' for the device default)")
    ium.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    ium.add_argument("--no-checkpoints", action="store_true",
                     help="do not keep the trained offline/baseline models in the user cache (a killed run then "
                          "retrains them)")
    ium.add_argument("--out", type=Path, help="run file (default: data/runs/ium/<plan name>.sqlite; with --runs, "
                                              "<your runs folder>/ium/<name>.sqlite)")
    ium.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ium.set_defaults(handler=cmd_ium)
