"""Bad input that is not a file in the runs folder: upload files, URL parameters and command-line arguments.

Every case is data; ``tests/ui/test_bad_inputs.py`` runs them against a runs folder holding the good run
(``good-run``), the good attribution run (``good-attribution``) and the good IUM run (``good-ium``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.user_run_fixtures import write_user_files

HUGE_NUMBER = "9" * 40
LONG_TEXT = "x" * 5_000


# --- upload files ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UploadCase:
    """``rageval upload --check`` with one of the TREC form's files (``slot``: run, queries, passages, qrels) made
    bad by ``make(path)``; the error must name that file."""

    name: str
    slot: str
    about: str
    make: Callable[[Path], None]


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _gzip_of_good(path: Path) -> None:
    path.write_bytes(gzip.compress(path.read_bytes()))


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


UPLOAD_CASES = [
    UploadCase("run-empty", "run", "an empty TREC run", _bytes(b"")),
    UploadCase("run-five-columns", "run", "TREC run lines with five columns", _bytes(b"t1 Q0 p01 1 9.5\n")),
    UploadCase("run-score-not-number", "run", "a TREC score that is not a number",
               _bytes(b"t1 Q0 p01 1 high my-retriever\n")),
    UploadCase("run-latin1", "run", "a TREC run in Latin-1, not UTF-8",
               _bytes("t1 Q0 caf\xe9 1 9.5 r\n".encode("latin-1"))),
    UploadCase("run-gzip", "run", "a gzip-compressed TREC run", _gzip_of_good),
    UploadCase("queries-not-json", "queries", "queries JSONL lines that are not JSON", _bytes(b"{not json\n")),
    UploadCase("queries-list", "queries", "a JSON list per line instead of an object",
               _bytes(json.dumps(["t1", "who?"]).encode() + b"\n")),
    UploadCase("queries-deep", "queries", "a line of JSON nested 100,000 deep", _bytes(b"[" * 100_000 + b"\n")),
    UploadCase("passages-folder", "passages", "a folder where the passages file should be", _folder),
    UploadCase("qrels-negative-grade", "qrels", "qrels with a grade that is not a number",
               _bytes(b"t1 0 p01 relevant\n")),
]


def upload_files(folder: Path) -> dict[str, Path]:
    """The good TREC-form files of ``tests/user_run_fixtures`` plus a good qrels file."""
    files = write_user_files(folder)
    files["qrels"] = folder / "qrels.txt"
    files["qrels"].write_text("t1 0 p01 1\nt2 0 p03 1\n")
    return files


# --- URL parameters -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UrlCase:
    """A page opened with ``params``: a visible warning must name each of ``named`` (the unknown values)."""

    name: str
    page: str
    params: dict[str, str]
    named: tuple[str, ...]


HOME, INSPECTOR, RETEVAL = "app.py", "app_pages/1_Query_inspector.py", "app_pages/2_LLM_retEval.py"
CITATIONS, AGENTS, CORRELATIONS = "app_pages/3_Citations.py", "app_pages/4_Agents_IUM.py", "app_pages/5_Correlations.py"
COMPARE, FAILURES, RESCORE = "app_pages/6_Compare_runs.py", "app_pages/7_Failure_cases.py", "app_pages/8_Re_score.py"
ANNOTATE, UPLOAD = "app_pages/9_Annotate.py", "app_pages/10_Upload.py"
PAGES = (HOME, INSPECTOR, RETEVAL, CITATIONS, AGENTS, CORRELATIONS, COMPARE, FAILURES, RESCORE, ANNOTATE, UPLOAD)

URL_CASES = [
    UrlCase("unknown-run", HOME, {"run": "no-such-run"}, ("no-such-run",)),
    UrlCase("path-as-run", HOME, {"run": "../../etc/passwd"}, ("../../etc/passwd",)),
    UrlCase("empty-run", HOME, {"run": ""}, ("''",)),
    UrlCase("unknown-query", INSPECTOR, {"run": "good-run", "query": "nq:999"}, ("nq:999",)),
    UrlCase("long-query", INSPECTOR, {"query": LONG_TEXT}, ("xxxxxxxx",)),
    UrlCase("unknown-judge", RETEVAL, {"judge": "oracle"}, ("oracle",)),
    UrlCase("k-not-a-number", CORRELATIONS, {"k": "abc"}, ("abc",)),
    UrlCase("k-negative", CORRELATIONS, {"k": "-5"}, ("-5",)),
    UrlCase("k-huge", CORRELATIONS, {"k": HUGE_NUMBER}, (HUGE_NUMBER,)),
    UrlCase("unknown-method-measure", CORRELATIONS, {"method": "erag:nope", "measure": "P@zero"},
            ("erag:nope", "P@zero")),
    UrlCase("unknown-runs-to-compare", COMPARE, {"run_a": "nope-a", "run_b": "nope-b"}, ("nope-a", "nope-b")),
    UrlCase("unknown-compare-score", COMPARE, {"method": "nope", "measure": "-1"}, ("nope",)),
    UrlCase("failure-filters", FAILURES, {"judge": "nobody", "category": "Z", "k": "abc"}, ("nobody", "Z", "abc")),
    UrlCase("failure-k-huge", FAILURES, {"k": HUGE_NUMBER}, (HUGE_NUMBER,)),
    UrlCase("unknown-attribution-answer", CITATIONS, {"run": "nope", "scenario": "Q", "query": "q?", "answer": "-1"},
            ("nope", "Q", "q?", "-1")),
    UrlCase("unknown-agent", AGENTS, {"run": "nope", "agent": "nobody"}, ("nope", "nobody")),
    UrlCase("unknown-mode", ANNOTATE, {"mode": "pictures", "run": "nope"}, ("pictures", "nope")),
    UrlCase("unknown-rescore-run", RESCORE, {"run": "nope"}, ("nope",)),
    UrlCase("unknown-upload-format", UPLOAD, {"format": "xml"}, ("xml",)),
]


# --- command-line arguments -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CliCase:
    """``rageval`` with ``argv`` (``{folder}`` is the test's folder, ``{run}`` the good run there): it must fail
    with one line naming ``names`` (after formatting) and exit non-zero, with no traceback."""

    name: str
    argv: tuple[str, ...]
    names: tuple[str, ...] = field(default=())


CLI_CASES = [
    CliCase("info-missing", ("info", "{folder}/missing.sqlite"), ("missing.sqlite",)),
    CliCase("info-folder", ("info", "{folder}"), ("{folder}",)),
    CliCase("info-json-text-file", ("info", "--json", "{folder}/notes.txt"), ("notes.txt",)),
    CliCase("info-config-not-evaluate", ("info", "--config", "{run}"), ("{run}",)),
    CliCase("export-out-is-folder", ("export", "{run}", "--out", "{folder}"), ("{folder}",)),
    CliCase("export-unknown-method", ("export", "{run}", "--method", "erag:nope", "--out", "{folder}/x.csv"),
            ("erag:nope",)),
    CliCase("export-qrels-without-method", ("export", "{run}", "--format", "qrels", "--out", "{folder}/x.qrels"),
            ("--method",)),
    CliCase("rescore-list-jobs-db-folder", ("rescore", "list", "--jobs-db", "{folder}"), ("{folder}",)),
    CliCase("rescore-start-broken-run", ("rescore", "start", "{folder}/notes.txt", "--backend", "openai", "--model",
                                         "m", "--jobs-db", "{folder}/jobs.sqlite"), ("notes.txt",)),
    CliCase("rescore-resume-no-database", ("rescore", "resume", "7", "--jobs-db", "{folder}/jobs.sqlite"),
            ("jobs.sqlite",)),
    CliCase("export-unknown-what", ("export", "{run}", "--what", "everything", "--out", "{folder}/x.csv"),
            ("everything",)),
    CliCase("evaluate-config-not-toml", ("evaluate", "--config", "{run}"), ("{run}",)),
    CliCase("upload-missing-file", ("upload", "--check", "--run", "{folder}/missing.trec", "--queries",
                                    "{folder}/missing.jsonl", "--passages", "{folder}/missing.jsonl"),
            ("missing.trec",)),
    CliCase("upload-bad-name", ("upload", "--name", "../escape", "--jsonl", "{folder}/notes.txt"), ("escape",)),
    CliCase("evaluate-missing-queries", ("evaluate", "--queries", "{folder}/missing.jsonl", "--corpus",
                                         "{folder}/missing.jsonl", "--run", "{folder}/missing.trec", "--dry-run",
                                         "--out", "{folder}/out.sqlite"), ("missing",)),
]
