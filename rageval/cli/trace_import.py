"""``rageval import``: the traces a RAG team already logs (OpenInference / Phoenix spans, Langfuse, LangSmith, RAGAS,
TREC RAG) into a run file, their answers kept as the run's end-to-end answers (:mod:`rageval.traces.importer`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.traces.readers import FORMATS

HELP = ("your traces (OpenInference/Phoenix spans, Langfuse, LangSmith, RAGAS, TREC RAG) -> a run file; their "
        "answers kept, both retrieval stages kept, what is missing counted")


def cmd_import(args: argparse.Namespace) -> int:
    from rageval.traces.importer import import_files

    report = import_files(args.format, args.files, args.out, corpus=args.corpus, qrels=args.qrels,
                          answers_field=args.answers_field, command=" ".join(["rageval", *sys.argv[1:]]),
                          replace_existing=args.replace)
    for line in report.lines():
        print(line)
    return 0


def add_parsers(sub) -> None:
    parser = sub.add_parser("import", help=HELP)
    parser.add_argument("format", choices=FORMATS, help="the traces' format")
    parser.add_argument("files", type=Path, nargs="+", help="trace files (read in order)")
    parser.add_argument("--out", type=Path, required=True, help="the run file to write (.sqlite; written whole or "
                                                                "not at all; a bare name goes to your runs folder)")
    parser.add_argument("--replace", action="store_true", help="replace an existing run file of that name (said "
                                                               "in the output); without it an existing file is "
                                                               "refused")
    parser.add_argument("--corpus", type=Path, help="passages (rageval JSONL or BEIR corpus) where documents the "
                                                    "traces hold without text are looked up")
    parser.add_argument("--qrels", type=Path, help="gold labels (TREC qrels or BEIR TSV) of the traces' questions, "
                                                   "by trace id")
    parser.add_argument("--answers-field", help="where the answer is read from, for formats where teams put it in "
                                                "different places")
    parser.set_defaults(handler=cmd_import)
