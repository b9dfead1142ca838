"""``rageval build-corpus`` and ``build-index``: the shipped corpus (:mod:`rageval.corpus`) and its BM25 index."""

from __future__ import annotations

import argparse
from pathlib import Path

from rageval.cli.common import bm25_index, load_corpus
from rageval.paths import DATA_DIR


def cmd_build_corpus(args: argparse.Namespace) -> int:
    from rageval.corpus import passages_per_source

    corpus = load_corpus(args.data_dir)
    for source, count in passages_per_source(corpus).items():
        print(f"{source:>12}  {count:6,d}")
    if args.out:
        from rageval.corpus import write_corpus

        write_corpus(corpus, args.out)
        print(f"wrote {args.out}")
    return 0


def cmd_build_index(args: argparse.Namespace) -> int:
    bm25_index(load_corpus(args.data_dir))
    return 0


def add_parsers(sub) -> None:
    corpus = sub.add_parser("build-corpus", help="build the deduplicated corpus and print its sizes")
    corpus.add_argument("--data-dir", type=Path, default=DATA_DIR)
    corpus.add_argument("--out", type=Path, help="also write the corpus as gzip JSON lines")
    corpus.set_defaults(handler=cmd_build_corpus)

    index = sub.add_parser("build-index", help="build the BM25 index over the corpus (cached)")
    index.add_argument("--data-dir", type=Path, default=DATA_DIR)
    index.set_defaults(handler=cmd_build_index)

