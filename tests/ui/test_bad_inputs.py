"""Nothing a user can put in the runs folder, the URL or the command line breaks another run, leaks, or shows a
traceback: every broken input of ``tests/bad_inputs`` is opened through the command line and the dashboard.

* each bad file on its own, beside a good run: the commands that read its kind and the pages that show it give a
  clear error naming the file (or, for what rageval reads around, no error), never a traceback; the good run is still
  offered; no file appears in the folder;
* every page with every bad file in one runs folder: the good runs still show, the cross-run pages name each
  unreadable run in a warning;
* upload files, URL parameters and command-line arguments: one clear line or a visible warning naming the value.

``RAGEVAL_BAD_INPUTS_REPORT=FILE`` appends one JSON line per input (kind, name, expectation, result, tracebacks);
``python -m tests.bad_inputs.report`` runs this file with it and prints the table.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from rageval.cli import main
from rageval.store import RUN, RunReader, kind_of
from rageval.store.files import journal_path, recover_hot_journal
from tests.bad_inputs import (
    CLI_CASES,
    FILE_INPUTS,
    UPLOAD_CASES,
    URL_CASES,
    BadFile,
    CliCase,
    UploadCase,
    UrlCase,
    damage,
)
from tests.bad_inputs.arguments import (
    AGENTS,
    ANNOTATE,
    CITATIONS,
    COMPARE,
    FAILURES,
    HOME,
    INSPECTOR,
    PAGES,
    RESCORE,
    RETEVAL,
    upload_files,
)
from tests.bad_inputs.good import FAILING_QUERY, GOOD
from tests.user_run_fixtures import build_uploaded_run, write_user_files

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120
GOOD_RUN, GOOD_ATTRIBUTION, GOOD_IUM = "good-run", "good-attribution", "good-ium"
REPORT_ENV = "RAGEVAL_BAD_INPUTS_REPORT"
#: The pages that show one file of each kind, opened with ``?run=<its name>``.
KIND_PAGES = {"run": (HOME, INSPECTOR), "attribution": (CITATIONS,), "ium": (AGENTS,)}
SHOWN_RUN_PAGES = (RETEVAL, "app_pages/5_Correlations.py")  # a run that reads shows here too


# --- helpers ----------------------------------------------------------------------------------------------------

def record(kind: str, name: str, expect: str, result: str, tracebacks: int = 0) -> None:
    """One line of the report (only when ``$RAGEVAL_BAD_INPUTS_REPORT`` names a file)."""
    report = os.environ.get(REPORT_ENV)
    if report:
        with open(report, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"kind": kind, "name": name, "expect": expect, "result": result,
                                     "tracebacks": tracebacks}) + "\n")


def plain(markdown: str) -> str:
    """Text shown through ``escape_markdown``, unescaped."""
    return re.sub(r"\\(.)", r"\1", markdown)


def listing(folder: Path) -> set[str]:
    """Every name under ``folder`` (links not followed)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``rageval argv`` in this process: (exit status, stdout, stderr). An exception escaping ``main`` is the
    traceback a user would see: it fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exit_:  # argparse
            status = exit_.code if isinstance(exit_.code, int) else 2
    return status, out.getvalue(), err.getvalue()


def open_page(page: str, **params: str) -> AppTest:
    app = AppTest.from_file(str(REPO / HOME), default_timeout=TIMEOUT_S)
    app.query_params.update(params)
    if page != HOME:
        app.switch_page(page)
    app.run()
    return app


def errors(app: AppTest) -> list[str]:
    return [plain(e.value) for e in app.error]


def warnings(app: AppTest) -> list[str]:
    return [plain(w.value) for w in app.warning]


def no_traceback(app: AppTest) -> None:
    assert not app.exception, [e.value for e in app.exception]


def sidebar_options(app: AppTest) -> list[str]:
    return [option for box in app.sidebar.selectbox for option in box.options]


@pytest.fixture(autouse=True)
def clear_caches():
    """Each test reads its own files: no table cached by an earlier test's files of the same name."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """An empty runs folder, LLM/jobs cache folder and annotation file of this test."""
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    runs.mkdir()
    cache.mkdir()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(cache))
    monkeypatch.delenv("RAGEVAL_ANNOTATIONS", raising=False)
    return runs, cache


def write_good_files(runs: Path) -> None:
    GOOD["run"][1](runs / f"{GOOD_RUN}.sqlite")
    GOOD["attribution"][1](runs / f"{GOOD_ATTRIBUTION}.sqlite")
    GOOD["ium"][1](runs / f"{GOOD_IUM}.sqlite")


# --- each bad file on its own ---------------------------------------------------------------------------------

def cli_views(bad: BadFile, path: Path, folder: Path) -> list[tuple[str, ...]]:
    """The commands that read a file of ``bad.kind``."""
    if bad.kind == "run":
        out = folder.parent / "export.csv"
        return [("info", str(path)), ("info", "--json", str(path)), ("export", str(path), "--out", str(out))]
    if bad.kind == "attribution":
        return [("info", "--json", str(path))]
    if bad.kind == "jobs":
        return [("rescore", "list", "--jobs-db", str(path))]
    if bad.kind == "llm_cache":
        files = write_user_files(folder.parent / "user")
        return [("evaluate", "--queries", str(files["queries"]), "--corpus", str(files["passages"]), "--run",
                 str(files["run"]), "--out", str(folder.parent / "out.sqlite"), "--cache", str(path), "--dry-run")]
    return []


def page_views(bad: BadFile, path: Path) -> list[tuple[str, dict[str, str]]]:
    """The pages that show a file of ``bad.kind``, with their parameters."""
    if bad.kind in KIND_PAGES:
        readable = bad.kind == "run" and bad.expect in ("shown", "tolerated")
        pages = KIND_PAGES[bad.kind] + (SHOWN_RUN_PAGES if readable else ())
        return [(page, {"run": path.stem}) for page in pages]
    if bad.kind == "annotations":
        return [(ANNOTATE, {"annotator": "Ada", "run": GOOD_RUN})]
    if bad.kind == "jobs":
        return [(RESCORE, {"run": GOOD_RUN})]
    return []


def place(bad: BadFile, runs: Path, cache: Path, monkeypatch) -> Path:
    """Build the bad file where its kind is read from: run, attribution and IUM files in the runs folder, the
    annotation file as ``$RAGEVAL_ANNOTATIONS``, the jobs database as ``jobs.sqlite`` of the cache folder, the LLM
    cache beside it."""
    if bad.kind == "jobs":
        return bad.build(cache, "jobs.sqlite")
    if bad.kind == "llm_cache":
        return bad.build(cache)
    path = bad.build(runs)
    if bad.kind == "annotations":
        monkeypatch.setenv("RAGEVAL_ANNOTATIONS", str(path))
    return path


@pytest.mark.parametrize("bad", FILE_INPUTS, ids=[bad.id for bad in FILE_INPUTS])
def test_each_bad_file_gives_a_clear_error_or_none_and_never_a_traceback(bad, folders, monkeypatch):
    runs, cache = folders
    write_good_files(runs)  # other runs in the same folder
    path = place(bad, runs, cache, monkeypatch)
    before = {folder: listing(folder) for folder in (runs, cache)}
    named = str(path)
    reports = []  # every error message shown, by the command line or a page
    unlisted = 0  # pages that do not list the file (not of their kind by its header) and warn about the link

    for argv in cli_views(bad, path, cache if bad.kind in ("jobs", "llm_cache") else runs):
        status, out, err = run_cli(*argv)
        assert "Traceback" not in err + out
        if status != 0:
            assert status == 2 and err.startswith("rageval: error: ") and err.count("\n") == 1, err
            assert named in err, err  # the file, and what is wrong with it
            reports.append(err)
        if bad.expect == "refused":
            assert status != 0, f"{argv}: {out}"
        if bad.expect == "shown":
            assert status == 0, err

    for page, params in page_views(bad, path):
        app = open_page(page, **params)
        no_traceback(app)
        shown_errors = errors(app)
        assert all(named in e for e in shown_errors), shown_errors  # an error is about the file, naming it
        reports += shown_errors
        unknown_run = any(f"run {path.stem!r}" in w for w in warnings(app))  # not a run of this kind: not listed
        unlisted += bool(unknown_run and not shown_errors)
        if bad.expect == "refused":
            assert shown_errors or unknown_run, (page, warnings(app))
        if bad.expect == "shown":
            assert not shown_errors, shown_errors
        good = {HOME: GOOD_RUN, INSPECTOR: GOOD_RUN, CITATIONS: GOOD_ATTRIBUTION, AGENTS: GOOD_IUM}.get(page)
        if good:  # the good run of this kind in the same folder is still offered
            assert good in sidebar_options(app)

    if bad.expect == "reported":
        assert reports, "the damage was reported by no view"
    # The remembered checks and summaries of the *good* runs may be written once those files are two seconds old
    # (a slow machine gets there during the test): they are the cache's own records, not a trace of the bad file.
    records = {"checked_files.json", "run_summaries.json"}
    # The annotation file is shared by writers (WAL mode): once its kind and pages are checked, its readers take
    # SQLite's locks, which may leave its -wal and -shm files beside it (never beside a file of another kind).
    siblings = {f"{path.name}-wal", f"{path.name}-shm"} if bad.kind == "annotations" else set()
    created = {folder: listing(folder) - names - records - siblings for folder, names in before.items()}
    assert created == {runs: set(), cache: set()}, created
    if bad.name == "hot-journal":  # rolled back on the way (the folder is writable)
        assert not journal_path(path).exists()
    if reports:
        result = "refused" if bad.expect == "refused" else "reported"
    else:
        result = "not listed, link warned" if unlisted else "shown"
    record(bad.kind, bad.name, bad.expect, result)


# --- every page, every bad file in one folder -------------------------------------------------------------------

@pytest.fixture(scope="module")
def crowded_folder(tmp_path_factory) -> tuple[Path, Path, dict[str, BadFile]]:
    """One runs folder holding every bad file (as ``<kind>-<name>.sqlite``), the good run, attribution run and IUM
    run, and a broken ``annotations.sqlite``; a cache folder with a broken ``jobs.sqlite``."""
    root = tmp_path_factory.mktemp("crowded")
    runs, cache = root / "runs", root / "cache"
    files = {}
    for bad in FILE_INPUTS:
        path = bad.build(runs, f"{bad.kind}-{bad.file_name().removeprefix('bad-')}")
        files[str(path)] = bad
    write_good_files(runs)
    later = time.time() + 3600  # the good files are the newest, whatever a test rewrites (a hot journal rolled back)
    for name in (GOOD_RUN, GOOD_ATTRIBUTION, GOOD_IUM):
        os.utime(runs / f"{name}.sqlite", (later, later))
    annotations = next(b for b in FILE_INPUTS if b.kind == "annotations" and b.name == "random-bytes")
    files[str(annotations.build(runs, "annotations.sqlite"))] = annotations
    jobs = next(b for b in FILE_INPUTS if b.kind == "jobs" and b.name == "truncated-half")
    files[str(jobs.build(cache, "jobs.sqlite"))] = jobs
    return runs, cache, files


def unreadable_runs(files: dict[str, BadFile]) -> list[str]:
    """The bad files the cross-run pages must name: those refused on opening that are runs by their header (or
    not SQLite at all, so possibly one), i.e. every refused file a run listing can contain."""
    names = []
    for path, bad in files.items():
        if bad.expect != "refused" or Path(path).name in ("annotations.sqlite", "jobs.sqlite"):
            continue
        sqlite_kind = kind_of(path) if Path(path).is_file() else None
        header = Path(path).read_bytes()[:16] if Path(path).is_file() and not Path(path).is_symlink() else b""
        if sqlite_kind is RUN or (sqlite_kind is None and not header.startswith(b"SQLite format 3")):
            names.append(path)
    return names


@pytest.mark.parametrize("page", PAGES, ids=[Path(p).stem for p in PAGES])
def test_every_page_shows_the_good_runs_beside_every_bad_file(page, crowded_folder, monkeypatch):
    runs, cache, files = crowded_folder
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(cache))
    before = listing(runs)
    app = open_page(page)
    no_traceback(app)
    shown_errors = errors(app)
    if page == ANNOTATE:  # the page needs the broken annotation file: it says which and what is wrong
        assert len(shown_errors) == 1 and str(runs / "annotations.sqlite") in shown_errors[0], shown_errors
    elif page == RESCORE:  # the job list needs the broken jobs database
        assert len(shown_errors) == 1 and str(cache / "jobs.sqlite") in shown_errors[0], shown_errors
    else:
        assert not shown_errors, shown_errors
    if page in (HOME, INSPECTOR, RETEVAL, "app_pages/5_Correlations.py", RESCORE, ANNOTATE):
        assert app.query_params["run"] == GOOD_RUN  # the default is the run that reads, not the newest file
    if page == CITATIONS:
        assert app.query_params["run"] == GOOD_ATTRIBUTION
    if page == AGENTS:
        assert app.query_params["run"] == GOOD_IUM
    if page in (FAILURES, COMPARE):  # cross-run: every unreadable run named in one warning box, the rest shown
        box = next(w for w in warnings(app) if "could not be read and are left out" in w)
        missing = [path for path in unreadable_runs(files) if path not in box]
        assert not missing, missing
        if page == FAILURES:
            cases = next(df.value for df in app.dataframe if "Inspect" in df.value.columns)
            link = parse_qs(urlsplit(cases["Inspect"].iloc[0]).query)
            assert cases["Run"].iloc[0] == GOOD_RUN
            assert (link["run"], link["query"]) == ([GOOD_RUN], [FAILING_QUERY]) and link["list"]  # with its worklist
            assert not set(cases["Run"]) & {Path(p).stem for p in unreadable_runs(files)}
        else:
            options = set(app.sidebar.selectbox[0].options)
            assert GOOD_RUN in options and not options & {Path(p).stem for p in unreadable_runs(files)}
    assert listing(runs) <= before  # nothing created (a hot journal may have been rolled back and removed)
    record("page with every bad file", Path(page).stem, "shown", "good runs shown, bad ones named")


# --- URL parameters, upload files, command-line arguments ---------------------------------------------------------

@pytest.mark.parametrize("case", URL_CASES, ids=[case.name for case in URL_CASES])
def test_unknown_or_malformed_url_parameters_are_named_in_a_warning(case: UrlCase, folders):
    runs, _ = folders
    write_good_files(runs)
    app = open_page(case.page, **case.params)
    no_traceback(app)
    shown = " ".join(warnings(app))
    missing = [value for value in case.named if value not in shown]
    assert not missing, (missing, shown)
    assert not errors(app)
    record("URL parameter", case.name, "warned", "warned")


def test_a_value_this_session_put_in_the_url_is_no_unknown_link(folders, tmp_path):
    """Choosing another run keeps the previous run's ``?query=`` in the URL for a moment: that is no link the user
    opened, so no warning (while the same value in a link opened afresh is named)."""
    runs, _ = folders
    GOOD["run"][1](runs / f"{GOOD_RUN}.sqlite")
    build_uploaded_run(tmp_path / "user-files", runs, "mine")  # another dataset: query ids t1..t6
    app = open_page(INSPECTOR, run=GOOD_RUN, query="nq:1")
    assert not warnings(app) and app.query_params["query"] == "nq:1"
    app.sidebar.selectbox[0].set_value("mine").run()
    no_traceback(app)
    assert app.query_params["run"] == "mine" and app.query_params["query"] == "t1"
    assert not warnings(app)
    fresh = open_page(INSPECTOR, run="mine", query="nq:1")
    assert any("query 'nq:1'" in w for w in warnings(fresh))


@pytest.mark.parametrize("case", UPLOAD_CASES, ids=[case.name for case in UPLOAD_CASES])
def test_bad_upload_files_are_named_in_one_clear_report(case: UploadCase, tmp_path):
    files = upload_files(tmp_path / "upload")
    case.make(files[case.slot])
    argv = ["upload", "--check"] + [arg for slot in ("run", "queries", "passages", "qrels")
                                     for arg in (f"--{slot}", str(files[slot]))]
    status, out, err = run_cli(*argv)
    assert status in (1, 2), out
    assert "Traceback" not in err and files[case.slot].name in err, err
    record("upload file", case.name, "refused", "refused")


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.name for case in CLI_CASES])
def test_bad_command_line_arguments_give_one_clear_line(case: CliCase, tmp_path):
    run = GOOD["run"][1](tmp_path / f"{GOOD_RUN}.sqlite")
    (tmp_path / "notes.txt").write_text("not a run\n")
    argv = [arg.format(folder=tmp_path, run=run) for arg in case.argv]
    before = listing(tmp_path)
    status, _out, err = run_cli(*argv)
    assert status != 0 and "Traceback" not in err, err
    assert err.strip().count("\n") == 0 or err.startswith("usage:"), err
    for name in case.names:
        assert name.format(folder=tmp_path, run=run) in err, err
    assert listing(tmp_path) == before
    record("command-line argument", case.name, "refused", "refused")


def test_the_command_itself_prints_one_line_and_no_traceback(tmp_path):
    """The real ``python -m rageval`` process on a few broken files (the tests above call ``main`` in-process)."""
    for bad in (b for b in FILE_INPUTS if b.kind == "run" and b.name in ("random-bytes", "settings-deep",
                                                                         "labels-other-shape", "folder")):
        path = bad.build(tmp_path)
        for argv in (["info", str(path)], ["export", str(path), "--out", str(tmp_path.parent / "x.csv")]):
            done = subprocess.run([sys.executable, "-m", "rageval", *argv], capture_output=True, text=True,
                                  cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=TIMEOUT_S)
            assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
            assert done.stderr.startswith(f"rageval: error: {path}: ") and done.stderr.count("\n") == 1


# --- the hot journal in a folder that cannot be written ---------------------------------------------------------

def test_a_hot_journal_that_cannot_be_rolled_back_is_read_around_with_a_warning(tmp_path, monkeypatch):
    bad = next(b for b in FILE_INPUTS if b.kind == "run" and b.name == "hot-journal")
    runs = tmp_path / "runs"
    path = bad.build(runs, f"{GOOD_RUN}.sqlite")
    before = listing(runs)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode == os.W_OK else real_access(p, mode, **kw))
    with RunReader(path) as reader:
        assert reader.note and "interrupted" in reader.note and str(path) in reader.note
        assert reader.settings()["k"] == 5 and len(reader.query_table()) == 6
    assert listing(runs) == before and journal_path(path).exists()  # read around, nothing written or created
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    app = open_page(HOME)
    no_traceback(app)
    assert any("interrupted" in w and str(path) in w for w in warnings(app))
    assert listing(runs) == before
    monkeypatch.undo()
    assert recover_hot_journal(path) and listing(runs) == before - {journal_path(path).name}


def test_a_read_only_open_of_a_wal_file_leaves_no_file(tmp_path):
    path = GOOD["run"][1](tmp_path / "run.sqlite")
    damage.wal_mode(path, RUN)
    with RunReader(path) as reader:
        assert reader.settings()["k"] == 5
    assert listing(tmp_path) == {"run.sqlite"}
