"""``rageval upload``: validate the files (:func:`rageval.upload.convert.convert_upload_paths`), print every problem,
then save the run (:func:`rageval.upload.save.save_upload`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.paths import not_writable_folder, user_runs_dir
from rageval.upload.convert import convert_upload_paths
from rageval.upload.problems import DEFAULT_LIMITS, UploadError
from rageval.upload.save import check_run_name, save_upload


def cmd_upload(args: argparse.Namespace) -> int:
    """``rageval upload``: validate, print every problem as ``severity: file, line N: message``, then write."""
    limits = DEFAULT_LIMITS
    if not args.check and not args.name:
        raise UploadError("give --name (or --check to validate only)")
    if args.name and check_run_name(args.name):
        raise UploadError(check_run_name(args.name))
    runs_dir = args.runs_dir or user_runs_dir()
    if not args.check and not_writable_folder(runs_dir):  # said before any file is read
        raise UploadError(f"runs folder {runs_dir}: {not_writable_folder(runs_dir)}; save the run into a folder")

    trec = {"run": args.run, "qrels": args.qrels, "queries": args.queries, "passages": args.passages}
    if args.jsonl and any(trec.values()):
        raise UploadError("give either --jsonl or the TREC files (--run --queries --passages [--qrels]), not both")
    form, paths = ("jsonl", {"jsonl": args.jsonl}) if args.jsonl else ("trec", trec)
    result = convert_upload_paths(form, paths, dataset=args.dataset, retriever=args.retriever, model=args.model,
                                  limits=limits)
    for problem in result.problems:
        print(problem, file=sys.stderr)
    run = result.run
    if run is None or not result.ok:
        print(f"rageval upload: {len(result.errors)} error(s); nothing was written", file=sys.stderr)
        return 1
    if args.check:
        print(f"valid: {len(run.queries)} queries, {len(result.warnings)} warning(s)")
        return 0
    path = save_upload(run, runs_dir, args.name, overwrite=args.overwrite,
                       command="rageval " + " ".join(sys.argv[1:]))
    print(f"wrote {path} ({len(run.queries)} queries, {len(result.warnings)} warning(s))")
    return 0


def add_parsers(sub) -> None:
    upload = sub.add_parser("upload", help="validate your own run (TREC run + qrels + queries/passages JSONL, or "
                                           "one JSONL with answers; docs/upload_format.md) into a run file")
    upload.add_argument("--name", help="run name: the file <runs-dir>/<name>.sqlite and the dashboard's ?run=")
    upload.add_argument("--jsonl", type=Path, help="one JSONL with queries, ranked passages and answers")
    upload.add_argument("--run", type=Path, help="TREC run file: qid Q0 docid rank score tag")
    upload.add_argument("--qrels", type=Path, help="TREC qrels file: qid 0 docid relevance (optional)")
    upload.add_argument("--queries", type=Path, help='queries JSONL: {"query_id", "text", "answers", '
                        '"gold_passage_ids"}; without --qrels the gold passages are the labels (method gold)')
    upload.add_argument("--passages", type=Path, help='passages JSONL: {"passage_id", "title", "text"}')
    upload.add_argument("--dataset", default="uploaded", help="dataset name shown with every number")
    upload.add_argument("--retriever", help="retriever name (default: the TREC run tag)")
    upload.add_argument("--model", help="the RAG LLM that produced the answers, if any")
    upload.add_argument("--runs-dir", type=Path, default=None,
                        help="folder of the run files (default: your runs folder, $RAGEVAL_RUNS_DIR, else "
                             "~/.local/share/rageval/runs; the shipped data/runs is read-only)")
    upload.add_argument("--overwrite", action="store_true", help="replace an existing run of that name")
    upload.add_argument("--check", action="store_true", help="only validate; write nothing")
    upload.set_defaults(handler=cmd_upload)
