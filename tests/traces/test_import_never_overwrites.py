"""``rageval import`` never overwrites a good run by surprise: a file read in the wrong format, traces without a
retriever span, an existing run without ``--replace``; a bare ``--out`` name goes to the runs folder, never into the
checkout; a killed write's leftovers are cleaned on the next write or dashboard start."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rageval.cli import main
from rageval.paths import REPO_ROOT
from rageval.store.files import remove_stale_temporaries

FIXTURES = Path(__file__).parent / "fixtures"
RAGAS = FIXTURES / "ragas_dataset.jsonl"
OTLP = FIXTURES / "openinference_otlp.json"
LANGSMITH = FIXTURES / "langsmith_runs.jsonl"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def runs(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


@pytest.mark.parametrize("wrong", [OTLP, LANGSMITH])
def test_a_file_of_another_format_fails_and_leaves_the_earlier_run(runs, wrong, capsys):
    good = runs / "mine.sqlite"
    assert main(["import", "ragas", str(RAGAS), "--out", str(good)]) == 0
    before = digest(good)
    code = main(["import", "ragas", str(wrong), "--out", str(good), "--replace"])
    err = capsys.readouterr().err
    assert code != 0 and str(wrong) in err and "Traceback" not in err
    assert digest(good) == before


def test_traces_without_a_retriever_span_fail_and_write_nothing(runs, tmp_path, capsys):
    rows = tmp_path / "no-contexts.jsonl"
    rows.write_text('{"user_input": "Who?", "response": "Me", "reference": "Me"}\n'
                    '{"user_input": "Where?", "response": "Here", "reference": "There"}\n')
    code = main(["import", "ragas", str(rows), "--out", str(runs / "empty.sqlite")])
    assert code != 0 and "not one has a retrieved list" in capsys.readouterr().err
    assert not (runs / "empty.sqlite").exists()


def test_an_existing_run_is_replaced_only_when_asked_and_the_output_says_what(runs, capsys):
    path = runs / "mine.sqlite"
    assert main(["import", "ragas", str(RAGAS), "--out", str(path)]) == 0
    before = digest(path)
    capsys.readouterr()
    assert main(["import", "langsmith", str(LANGSMITH), "--out", str(path)]) != 0
    assert "--replace" in capsys.readouterr().err and digest(path) == before
    assert main(["import", "langsmith", str(LANGSMITH), "--out", str(path), "--replace"]) == 0
    out = capsys.readouterr().out
    assert f"replaced {path} (a run of" in out and "imported traces" in out
    assert digest(path) != before


def test_a_bare_out_name_goes_to_the_runs_folder_and_the_checkout_is_refused(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["import", "ragas", str(RAGAS), "--out", "mine.sqlite"]) == 0
    assert (runs / "mine.sqlite").is_file() and not (tmp_path / "mine.sqlite").exists()
    monkeypatch.chdir(REPO_ROOT)
    assert main(["import", "ragas", str(RAGAS), "--out", "runs/mine.sqlite"]) != 0
    assert "inside rageval's checkout" in capsys.readouterr().err
    assert not (REPO_ROOT / "runs").exists()


def test_a_killed_import_leaves_nothing_the_next_start_does_not_clean(runs, tmp_path):
    """A real import killed with SIGKILL while its temporary file is open: the leftovers are hidden files of a
    dead process; the next write into the folder removes them, a live process's are kept."""
    runs.mkdir(parents=True)
    script = textwrap.dedent(f"""
        import os, signal, sys
        from rageval.store import files
        def fill(connection):
            connection.execute("CREATE TABLE t (x)")
            connection.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(1000)])
            os.kill(os.getpid(), signal.SIGKILL)
        files.write_sqlite_atomically({str(runs / 'killed.sqlite')!r}, fill)
    """)
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == -9
    left = sorted(p.name for p in runs.iterdir())
    assert left and all(name.startswith(".killed.sqlite.") for name in left) and not (runs / "killed.sqlite").exists()
    mine = runs / f".other.sqlite.{os.getpid()}.abc.tmp"  # a live write's (this process): kept
    mine.write_text("")
    removed = remove_stale_temporaries(runs)
    assert sorted(p.name for p in removed) == left
    assert [p.name for p in runs.iterdir()] == [mine.name]
