"""``rageval rescore start|run|resume|cancel|list``: the jobs (:mod:`rageval.jobs`) from the command line.
``rescore run JOB`` is also what a background worker runs (:func:`rageval.jobs.control.worker_command`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rageval.cli.common import add_server_arguments
from rageval.erag.labels import ALL_METRICS
from rageval.errors import JobError
from rageval.generation.factory import DEFAULT_MODEL
from rageval.jobs.control import (
    cancel_job,
    check_run_file,
    create_job,
    first_query_ids,
    job_line,
    lacking_pieces,
    launch_worker,
    list_jobs,
    open_job_store,
    resume_job,
)
from rageval.jobs.labelling import needs_format_probe, probe_job
from rageval.jobs.spec import BACKENDS, COMPLETE, DTYPES, ERAG, PIECES, JobSpec, JobStore, job_status
from rageval.jobs.worker import run_job_in_this_process
from rageval.labelmethods import judges
from rageval.store.jobs import CANCELLED, DONE


def _run_here(job_id: int, store: JobStore, *, exit_when_stopped: bool = False) -> int:
    job = run_job_in_this_process(job_id, store)
    print(f"job {job_id}: {job.status} ({job.done}/{job.total} items, method {job.method}, run {job.run_path})",
          flush=True)
    if job.status == CANCELLED and exit_when_stopped:
        # A background worker exits now: request threads still waiting on a model server would otherwise hold
        # the interpreter's exit until their requests time out. Everything that matters is committed.
        sys.stderr.flush()
        os._exit(1)
    return 0 if job.status == DONE else 1


def _parse_pieces(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    if names == ["all"]:
        return PIECES
    unknown = [x for x in names if x not in PIECES]
    if unknown or not names:
        raise JobError(f"--pieces {text!r}: expected 'all' or a comma list of {', '.join(PIECES)}")
    return tuple(names)


def _server_settings(args: argparse.Namespace) -> dict:
    """The server flags (``add_server_arguments``) as :class:`JobSpec` fields."""
    return {"base_url": args.base_url, "balance": args.balance, "max_requests_per_minute": args.max_requests_per_minute,
            "max_tokens_per_minute": args.max_tokens_per_minute}


def cmd_start(args: argparse.Namespace) -> int:
    if args.pieces and not args.complete:
        raise JobError("--pieces goes with --complete")
    check_run_file(args.run)  # a missing or broken run file is refused before the jobs database is touched
    if args.complete:
        spec = JobSpec.from_flat(str(args.run), model=args.model, backend=args.backend, label_kind=COMPLETE,
                                 pieces=_parse_pieces(args.pieces), api=args.api, api_key_env=args.api_key_env,
                                 device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                                 llm_cache=str(args.cache) if args.cache else None, **_server_settings(args))
        with open_job_store(args.jobs_db) as store:
            job = create_job(spec, store)
            print(f"job {job.job_id}: {job.method}, computing "
                  f"{', '.join(f'{p} ({w})' for p, w in lacking_pieces(spec).items())} of {job.run_path}")
            if args.detach:
                pid = launch_worker(job.job_id, store)
                print(f"started in the background (pid {pid}); follow it with `rageval rescore list`")
                return 0
            return _run_here(job.job_id, store)
    query_ids = tuple(q for q in args.queries.split(",") if q) if args.queries else None
    if args.num_queries is not None:
        query_ids = first_query_ids(args.run, args.num_queries)
    spec = JobSpec.from_flat(str(args.run), model=args.model, backend=args.backend, label_kind=args.labels,
                             metric=args.metric, k=args.k, query_ids=query_ids, api=args.api,
                             api_key_env=args.api_key_env, device=args.device, dtype=args.dtype,
                             batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                             llm_cache=str(args.cache) if args.cache else None, **_server_settings(args))
    if args.probe > 0 and needs_format_probe(spec):  # UMBRELA, a judge file: try the model on a few passages
        print(probe_job(spec, args.probe).sentence, flush=True)
    with open_job_store(args.jobs_db) as store:
        job = create_job(spec, store)
        print(f"job {job.job_id}: {job.method}, {job.total} items on {job.run_path}")
        if args.detach:
            pid = launch_worker(job.job_id, store)
            print(f"started in the background (pid {pid}); follow it with `rageval rescore list`")
            return 0
        return _run_here(job.job_id, store)


def cmd_run(args: argparse.Namespace) -> int:
    with open_job_store(args.jobs_db, create=False) as store:
        return _run_here(args.job_id, store, exit_when_stopped=True)


def cmd_resume(args: argparse.Namespace) -> int:
    with open_job_store(args.jobs_db, create=False) as store:
        job = resume_job(args.job_id, store, launch=args.detach)
        if args.detach:
            print(f"job {job.job_id}: resumed in the background (pid {job.pid})")
            return 0
        return _run_here(args.job_id, store)


def cmd_cancel(args: argparse.Namespace) -> int:
    with open_job_store(args.jobs_db, create=False) as store:
        job = cancel_job(args.job_id, store, terminate=args.now)
        print(f"job {job.job_id}: cancel requested ({job_status(job)})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for job in list_jobs(args.jobs_db):
        print(job_line(job))
    return 0


def add_parsers(sub) -> None:
    """``rageval rescore start|run|resume|cancel|list``."""
    rescore = sub.add_parser("rescore", help="label a run's passages again with another model, in the background; "
                                             "labels saved as produced, resumable")
    actions = rescore.add_subparsers(dest="rescore_action", required=True)

    def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--jobs-db", type=Path, help="jobs database (default: jobs.sqlite in the user cache)")
        return parser

    start = with_db(actions.add_parser("start", help="create a job and run it here (or --detach)"))
    start.add_argument("run", type=Path, help="the run file to add labels to")
    start.add_argument("--complete", action="store_true",
                       help="compute what the run lacks (eRAG labels, E2E answers, baselines, LLM-retEval) instead "
                            "of one label method; the file is rewritten once, at the end")
    start.add_argument("--pieces", help=f"with --complete: a comma list of {', '.join(PIECES)} (default: all the "
                                        "run lacks)")
    start.add_argument("--labels", default=ERAG, metavar="KIND|FILE.toml",
                       help=f"{ERAG}: answer from each passage alone, scored against the gold answers; "
                            + "; ".join(f"{k.name}: {k.description}" for k in judges())
                            + "; or your own judge as a TOML file (see `rageval methods`)")
    start.add_argument("--metric", choices=ALL_METRICS, default="em", help="downstream metric of eRAG labels")
    start.add_argument("--model", default=DEFAULT_MODEL,
                       help=f"'{DEFAULT_MODEL}', a local Hugging Face model folder or cached id, or a served model")
    start.add_argument("--backend", choices=BACKENDS, default="transformers")
    add_server_arguments(start)
    start.add_argument("--api", choices=("completions", "chat"), default="completions")
    start.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    start.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
    start.add_argument("--dtype", choices=DTYPES, help="precision (default: float32 on CPU, bfloat16 on CUDA)")
    start.add_argument("--k", type=int, help="top passages per query (default: the run's k)")
    chosen = start.add_mutually_exclusive_group()
    chosen.add_argument("--queries", help="comma-separated query ids (default: all)")
    chosen.add_argument("--num-queries", type=int, help="the run's first N queries")
    start.add_argument("--batch-size", type=int, default=8, help="prompts per batch, and per commit")
    start.add_argument("--max-new-tokens", type=int, help="answer length (default: the run's)")
    start.add_argument("--probe", type=int, default=5, metavar="N",
                       help="an LLM judge other than the default (UMBRELA, a judge file): first ask the model about "
                            "N passages and say how many replies were in the judge's format (0: skip; default 5); "
                            "the replies are kept in the LLM-call cache, so the job does not ask them again")
    start.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    start.add_argument("--detach", action="store_true", help="run in a background process and return at once")
    start.set_defaults(handler=cmd_start)

    run = with_db(actions.add_parser("run", help="run job N in this process (what a background worker runs)"))
    run.add_argument("job_id", type=int)
    run.set_defaults(handler=cmd_run)

    resume = with_db(actions.add_parser("resume", help="start a stopped job again, skipping what it labelled"))
    resume.add_argument("job_id", type=int)
    resume.add_argument("--detach", action="store_true")
    resume.set_defaults(handler=cmd_resume)

    cancel = with_db(actions.add_parser("cancel", help="stop job N after its current batch"))
    cancel.add_argument("job_id", type=int)
    cancel.add_argument("--now", action="store_true", help="also send the worker SIGTERM")
    cancel.set_defaults(handler=cmd_cancel)

    listing = with_db(actions.add_parser("list", help="every job with its status and progress"))
    listing.set_defaults(handler=cmd_list)
