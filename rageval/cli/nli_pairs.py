"""``rageval nli-score`` and ``rageval nli-eval``: your own (evidence, claim) pairs scored by any checker, and a
checker evaluated on your labelled pairs (formats in docs/checkers.md); and the checker flags every attribution
command shares (``--checker SPEC``, alias ``--nli``)."""

from __future__ import annotations

import argparse
from pathlib import Path

CHECKER_HELP = ("the entailment checker: 'ours' (the default, the shipped MiniLM; alias 'trained'), "
                "'hf:ID_OR_PATH[#supported=N]', 'minicheck:ID_OR_PATH', 'alignscore:CKPT[#base=DIR]', "
                "'llm[:MODEL]' (see the --llm-* flags); '#threshold=T' sets its threshold (docs/checkers.md)")


def add_checker_arguments(parser, *, default: str = "ours") -> None:
    """``--checker SPEC`` (alias ``--nli``), ``--threshold``, ``--checker-device`` and the LLM judge's flags."""
    from rageval.cli.common import add_server_arguments
    from rageval.generation.factory import APIS, BACKENDS

    parser.add_argument("--checker", "--nli", dest="checker", default=default, metavar="SPEC", help=CHECKER_HELP)
    parser.add_argument("--threshold", type=float, metavar="T",
                        help="decide supported at p >= T (default: the checker's own threshold)")
    parser.add_argument("--checker-device", metavar="DEVICE", help="device of a Hugging Face checker (default: CUDA "
                                                                    "when present)")
    judge = parser.add_argument_group("the LLM judge (--checker llm[:MODEL], built as rageval evaluate builds its "
                                      "generator)")
    judge.add_argument("--llm-backend", choices=BACKENDS, default="local",
                       help="run the judge in process (local) or call an OpenAI-compatible server (openai)")
    add_server_arguments(judge)
    judge.add_argument("--api", choices=APIS, default="completions", help="the server's API (--llm-backend openai)")
    judge.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")


def checker_loader(args: argparse.Namespace):
    """A function loading the checker the flags name (called once the input is read and checked); its optional
    argument is the generator an LLM judge (``--checker llm``) reuses instead of building its own."""
    from rageval.attribution.checkers import load_checker
    from rageval.generation.factory import ModelSettings

    def load(generator=None):
        settings = ModelSettings(backend=args.llm_backend, base_url=args.base_url, api=args.api,
                                 api_key_env=args.api_key_env, balance=args.balance,
                                 max_requests_per_minute=args.max_requests_per_minute,
                                 max_tokens_per_minute=args.max_tokens_per_minute)
        return load_checker(args.checker, generator=generator, model_settings=settings, device=args.checker_device,
                            threshold=args.threshold, log=_log)

    return load


def _bar(description: str):
    """A tqdm bar on stderr whose clock starts at the first report, after the checker has loaded (so its ETA is the
    scoring's); rows already done then (``--resume``) count as its start, not as speed."""
    import sys

    from tqdm import tqdm

    bar = tqdm(desc=description, unit="pair", file=sys.stderr, dynamic_ncols=True)
    started = False

    def update(done: int, total: int) -> None:
        nonlocal started
        if not started:
            started = True
            bar.reset(total=total)
            bar.initial = bar.n = done
            bar.refresh()
            return
        bar.update(done - bar.n)

    return bar, update


def _log(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)


def cmd_nli_score(args: argparse.Namespace) -> int:
    from rageval.attribution.pairs import score_pairs_file

    bar, update = _bar("pairs scored")
    with bar:
        summary = score_pairs_file(args.pairs, args.out, checker_loader(args), batch_size=args.batch_size,
                                   resume=args.resume, progress=update)
    kept = f", {summary.resumed} kept from the partial output" if summary.resumed else ""
    print(f"wrote {summary.path}: {summary.rows} rows{kept}; {summary.supported} supported at p_supported >= "
          f"{summary.threshold:g}; checker {summary.checker}")
    return 0


def cmd_nli_eval(args: argparse.Namespace) -> int:
    from rageval.attribution.checker_report import evaluation_table, write_checker_report
    from rageval.attribution.pairs import evaluate_pairs_file, pairs_report

    bar, update = _bar("pairs scored")
    with bar:
        result = evaluate_pairs_file(args.labelled, checker_loader(args), label_field=args.label_field,
                                     claim_field=args.claim_field, source_field=args.source_field or None,
                                     threshold=args.threshold, calibrate=args.calibrate,
                                     batch_size=args.batch_size, resamples=args.resamples, progress=update)
    report = pairs_report(result, args.checker)
    calibrated = f", the threshold calibrated on {result.calibrated_on}" if result.calibrated_on else ""
    print(f"checker {result.checker} (supported at p >= {result.threshold:g}{calibrated}) on {result.path}; "
          f"intervals: 95% percentile bootstrap, {args.resamples} resamples")
    print("\n".join(evaluation_table(report.evaluations)))
    if args.json:
        print(f"wrote {write_checker_report(args.json, report)}")
    return 0


def add_parsers(sub) -> None:
    score = sub.add_parser("nli-score", help="score your own (premise, hypothesis) pairs (JSONL) with any checker: "
                                             "each row back with p_supported, supported and checker")
    score.add_argument("pairs", type=Path, help="JSONL: one object a line with premise and hypothesis (other fields "
                                                "kept)")
    score.add_argument("--out", type=Path, required=True, help="JSONL written (atomically, when every row is scored)")
    score.add_argument("--batch-size", type=int, default=32, help="pairs per checker call (default 32)")
    score.add_argument("--resume", action="store_true",
                       help="keep the rows an interrupted run left in OUT.partial and score the rest")
    add_checker_arguments(score)
    score.set_defaults(handler=cmd_nli_score)

    evaluate = sub.add_parser("nli-eval", help="evaluate a checker on your labelled pairs (JSONL): accuracy, "
                                               "balanced accuracy, F1, ROC-AUC per source, pair and claim level")
    evaluate.add_argument("labelled", type=Path, help="JSONL: premise, hypothesis and a label per line")
    evaluate.add_argument("--label-field", default="label",
                          help="entailment/supported/true/1 vs neutral/contradiction/not_entailment/refuted/false/0")
    evaluate.add_argument("--claim-field", metavar="FIELD",
                          help="claim id: also evaluate per claim (supported if any row is, p = max over its rows)")
    evaluate.add_argument("--source-field", default="source", help="per-source rows ('' for none; default source)")
    evaluate.add_argument("--batch-size", type=int, default=32, help="pairs per checker call (default 32)")
    evaluate.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the intervals")
    evaluate.add_argument("--calibrate", type=Path, metavar="DEV",
                          help="a labelled dev file (same fields): the threshold maximising balanced accuracy on it "
                               "(at claim level with --claim-field) is used instead of the checker's")
    evaluate.add_argument("--json", type=Path, metavar="OUT",
                          help="also write the numbers as a rageval NLI report (shown on the Citations page when in "
                               "<runs folder>/nli/)")
    add_checker_arguments(evaluate)
    evaluate.set_defaults(handler=cmd_nli_eval)
