"""``rageval serve-model``: rageval's small OpenAI-compatible server (:mod:`rageval.generation.server`) over a model.

    rageval serve-model --model gemma-3-270m --port 8000   # then --base-url http://127.0.0.1:8000/v1
    rageval serve-model --model fake --port 8001           # answers at once (benchmarks/)
"""

from __future__ import annotations

import argparse
import sys


def cmd_serve_model(args: argparse.Namespace) -> int:
    from rageval.generation.server import serve_model_forever

    return serve_model_forever(args.model, host=args.host, port=args.port, batch_size=args.batch_size,
                               served_model_name=args.served_model_name, verbose=not args.quiet,
                               announce=lambda line: print(line, file=sys.stderr, flush=True))


def add_parsers(sub) -> None:
    from rageval.generation.factory import DEFAULT_MODEL

    parser = sub.add_parser(
        "serve-model", help="serve a model (or 'fake') over an OpenAI-compatible HTTP API on this machine, for trying "
                            "--backend openai without vLLM",
        description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"{DEFAULT_MODEL!r} (the packaged default), a local Hugging Face model directory, or "
                             "'fake' (an instant answer, no model: for measuring the HTTP path)")
    parser.add_argument("--served-model-name", help="the name clients send as 'model' (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--quiet", action="store_true", help="log no request (stderr)")
    parser.set_defaults(handler=cmd_serve_model)
