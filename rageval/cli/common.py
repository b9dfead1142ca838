"""What several command groups share: progress bars on stderr, the shipped corpus and its BM25 index, and the
model flags (one set, read into :class:`~rageval.generation.factory.ModelSettings`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rageval.generation.endpoints import BALANCES
from rageval.generation.factory import BACKENDS, DEFAULT_BASE_URL, DEFAULT_MODEL, DTYPES, SMOLLM2_MODEL

if TYPE_CHECKING:
    from tqdm import tqdm as Tqdm

#: The measure syntax in one line, for the help of every option taking measures (rageval.measures.parse_measure;
#: not imported from there, so that ``rageval --help`` loads no numpy or pandas).
MEASURE_SYNTAX = ("ir_measures' syntax NAME(param=value,...)@k, comma-separated, e.g. "
                  "\"P@5,P(rel=2)@5,AP(judged_only=True),nDCG(dcg='exp-log2')@10,RBP(p=0.9),IPrec@0.5\"; "
                  "the measures and their parameters are listed in docs/measures.md")


def progress_bar(description: str, total: int):
    """A tqdm bar (with rate and ETA) on stderr, and the (done, total) callback that advances it."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=description, unit="prompt", file=sys.stderr, dynamic_ncols=True)

    def update(done: int, _total: int) -> None:
        bar.update(done - bar.n)

    return bar, update


def stage_progress():
    """A ``(stage, done, total, cached)`` callback drawing one tqdm bar per pipeline stage (rate and ETA), on stderr;
    the calls answered from the LLM-call cache are named after the bar."""
    from tqdm import tqdm

    bars: dict[str, Tqdm] = {}

    def update(stage: str, done: int, total: int, cached: int = 0) -> None:
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[stage] = tqdm(total=total, desc=f"{stage:<14}", unit="call", file=sys.stderr,
                                     dynamic_ncols=True)
        bar.total = max(total, done)
        if cached:
            bar.set_postfix_str(f"{cached} from the cache", refresh=False)
        bar.update(done - bar.n)

    return update


def load_corpus(data_dir: Path):
    from rageval.corpus import build_corpus

    started = time.perf_counter()
    corpus = build_corpus(data_dir)
    print(f"corpus: {len(corpus.passages):,} passages, {len(corpus.nq_queries):,} NQ-open queries "
          f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return corpus


def bm25_index(corpus):
    from rageval.corpus import corpus_fingerprint
    from rageval.retrieval.bm25 import load_or_build_bm25_index

    started = time.perf_counter()
    index_dir = load_or_build_bm25_index(corpus.passages, corpus_fingerprint(corpus.passages))
    print(f"BM25 index: {index_dir} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return index_dir


class BaseUrls(argparse.Action):
    """``--base-url``, repeatable and comma-separated: every URL given, joined by commas (what ``base_url`` holds
    everywhere). The first one given replaces the default rather than adding to it."""

    def __call__(self, parser, namespace, values, option_string=None):
        current = getattr(namespace, self.dest, None)
        given = [] if current is None or current is self.default else [current]  # the default object: not given
        setattr(namespace, self.dest, ",".join([*given, *(u.strip() for u in str(values).split(",") if u.strip())]))


def add_server_arguments(parser, *, defaults: bool = True) -> None:
    """The flags of an OpenAI-compatible server or fleet: ``--base-url`` (repeatable), ``--balance`` and the rate
    limits. ``defaults=False`` leaves every default None."""
    parser.add_argument("--base-url", action=BaseUrls, default=DEFAULT_BASE_URL if defaults else None,
                        metavar="URL", help="the server (--backend openai); repeat it or separate URLs with commas "
                                            "for several replicas of the model, which then share the requests")
    parser.add_argument("--balance", choices=BALANCES, default="least-in-flight" if defaults else None,
                        help="how requests are spread over several --base-url servers (default least-in-flight)")
    parser.add_argument("--max-requests-per-minute", type=float, metavar="N",
                        help="at most N requests a minute to the servers together (retries count; default: no limit)")
    parser.add_argument("--max-tokens-per-minute", type=float, metavar="N",
                        help="at most N tokens a minute (prompt + answer: estimated as prompt characters / 4 + "
                             "--max-new-tokens, settled with the server's usage count; default: no limit)")


def add_model_arguments(parser, *, defaults: bool = True) -> None:
    """The model flags. ``defaults=False`` leaves every default None (so a config file's value can stand)."""
    def default(value):
        return value if defaults else None

    parser.add_argument("--model", default=default(DEFAULT_MODEL),
                        help=f"'{DEFAULT_MODEL}' (packaged, the default), '{SMOLLM2_MODEL}' (packaged), a local "
                             "Hugging Face model folder or cached id, or with --backend openai the served model name")
    parser.add_argument("--backend", choices=BACKENDS, default=default("local"),
                        help="run the model in process (local), or call an OpenAI-compatible server (vLLM, Ollama, "
                             "rageval serve-model)")
    add_server_arguments(parser, defaults=defaults)
    parser.add_argument("--api", choices=("completions", "chat"), default=default("completions"),
                        help="/v1/completions (raw prompt) or /v1/chat/completions (--backend openai)")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    parser.add_argument("--dtype", choices=DTYPES, default=default("auto"),
                        help="precision of a local model; auto (the default): bfloat16 on CUDA, and on the CPU "
                             "bfloat16 where a one-time check on 30 eRAG labels finds float32's labels and a faster "
                             "run (cached per model), else float32")
    parser.add_argument("--device", default=default("auto"), help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--batch-size", type=int, default=default(8),
                        help="prompts per model batch (local) or concurrent requests (openai)")
