"""Ordinary path mistakes on the command line (a missing file, a folder given as a file, a file given as a folder,
a file in another encoding than UTF-8) are one line naming the path and what was expected, exit status 2, no
traceback and nothing written: for every command that takes a path. No model and no retrieval runs: each check is
made before either would start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval.cli import describe_os_error, main
from tests.run_fixtures import make_small_run


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    """Valid small inputs (questions, corpus, TREC run, qrels, attributed answers), a folder, a plain file and a
    run file; ``missing`` names nothing."""
    folder = tmp_path / "in"
    folder.mkdir()
    questions = folder / "questions.jsonl"
    questions.write_text(json.dumps({"query_id": "q1", "text": "capital of austria", "answers": ["Vienna"]}) + "\n")
    corpus = folder / "corpus.jsonl"
    corpus.write_text(json.dumps({"passage_id": "d1", "title": "Vienna", "text": "Vienna is the capital."}) + "\n")
    run = folder / "system.trec"
    run.write_text("q1 Q0 d1 1 2.0 mine\n")
    qrels = folder / "gold.qrels"
    qrels.write_text("q1 0 d1 1\n")
    answers = folder / "answers.jsonl"
    answers.write_text(json.dumps({"query_id": "q1", "question": "capital of austria", "answer": "Vienna [1].",
                                   "passages": [{"title": "Vienna", "text": "Vienna is the capital."}]}) + "\n")
    plain = folder / "notes.txt"
    plain.write_text("not a folder\n")
    return {"questions": questions, "corpus": corpus, "run": run, "qrels": qrels, "answers": answers,
            "folder": tmp_path / "a-folder", "plain": plain, "missing": tmp_path / "nope.jsonl",
            "run_file": make_small_run(tmp_path / "fixture.sqlite")}


def one_line_error(argv, capsys, monkeypatch, tmp_path) -> str:
    """Run the CLI, assert exit 2 and a single ``rageval: error:`` line on stderr, and return that line."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    before = {p for p in tmp_path.rglob("*") if "cache" not in p.parts}
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, (code, captured.err)
    assert len(lines) == 1 and lines[0].startswith("rageval: error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    written = {p for p in tmp_path.rglob("*") if "cache" not in p.parts} - before
    assert not written, written
    return lines[0].removeprefix("rageval: error: ")


def test_missing_files_and_folders_as_files_are_named(inputs, tmp_path, capsys, monkeypatch):
    inputs["folder"].mkdir()
    f, missing, folder = inputs, inputs["missing"], inputs["folder"]
    evaluate = ["evaluate", "--retriever", "bm25", "--dry-run"]
    cases = [
        (["upload", "--check", "--jsonl", missing], f"{missing}: no such file"),
        (["upload", "--check", "--jsonl", folder], f"{folder}: is a folder; expected a file"),
        ([*evaluate, "--queries", missing, "--corpus", f["corpus"]], f"{missing}: no such file (the questions)"),
        ([*evaluate, "--queries", f["questions"], "--corpus", folder], f"{folder}: is a folder; expected the corpus "
                                                                      "file"),
        ([*evaluate, "--queries", f["questions"], "--corpus", f["corpus"], "--qrels", missing],
         f"{missing}: no such file (the qrels)"),
        (["evaluate", "--queries", f["questions"], "--corpus", f["corpus"], "--run", folder, "--dry-run"],
         f"{folder}: is a folder; expected the run file"),
        (["evaluate", "--config", missing, "--dry-run"], f"{missing}: no such config file"),
        (["evaluate", "--config", folder, "--dry-run"], f"{folder}: is a folder; expected a TOML config file"),
        (["evaluate-citations", missing, "--out", tmp_path / "c.sqlite"], f"{missing}: no such file"),
        (["evaluate-citations", folder, "--out", tmp_path / "c.sqlite"], f"{folder}: is a folder; expected the "
                                                                         "answers file"),
        (["info", missing], f"{missing}: no such run file"),
        (["info", folder], f"{folder}: is a folder; expected a run file"),
        (["info", folder, "--json"], f"{folder}: is a folder; expected a run file"),
        (["export", folder, "--out", tmp_path / "x.csv"], f"{folder}: is a folder; expected a run file"),
        (["rescore", "start", folder, "--model", "gemma-3-270m"], f"{folder}: is a folder; expected a run file"),
        (["eval-retrieval", "--queries", missing, "--corpus", f["corpus"], "--qrels", f["qrels"]],
         f"{missing}: no such file (the questions)"),
        (["eval-retrieval", "--queries", f["questions"], "--corpus", f["corpus"], "--qrels", folder],
         f"{folder}: is a folder; expected the qrels file"),
    ]
    for argv, expected in cases:
        assert one_line_error(argv, capsys, monkeypatch, tmp_path) == expected, argv


def test_output_paths_that_are_folders_or_under_a_file_are_named(inputs, tmp_path, capsys, monkeypatch):
    inputs["folder"].mkdir()
    f, folder, plain = inputs, inputs["folder"], inputs["plain"]
    evaluate = ["evaluate", "--queries", f["questions"], "--corpus", f["corpus"], "--run", f["run"], "--dry-run"]
    cases = [
        (["export", f["run_file"], "--what", "labels", "--out", folder],
         f"--out {folder}: is a folder; expected a file name"),
        (["export", f["run_file"], "--what", "labels", "--out", plain / "x.csv"],
         f"--out {plain / 'x.csv'}: {plain} is a file, not a folder; expected a file name"),
        ([*evaluate, "--out", folder], f"--out {folder}: is a folder; expected a .sqlite file name"),
        ([*evaluate, "--out", plain / "x.sqlite"],
         f"--out {plain / 'x.sqlite'}: {plain} is a file, not a folder; expected a .sqlite file name"),
        (["eval-retrieval", "--queries", f["questions"], "--corpus", f["corpus"], "--qrels", f["qrels"],
          "--out-dir", plain], f"--out-dir {plain}: is a file, not a folder"),
        (["upload", "--name", "mine", "--run", f["run"], "--queries", f["questions"], "--passages", f["corpus"],
          "--runs-dir", plain], f"runs folder {plain}: is a file, not a folder; save the run into a folder"),
    ]
    for argv, expected in cases:
        assert one_line_error(argv, capsys, monkeypatch, tmp_path) == expected, argv


def test_a_utf16_input_is_named_as_utf16_not_as_bad_json(inputs, tmp_path, capsys, monkeypatch):
    f = inputs
    utf16 = f["questions"].with_name("questions-utf16.jsonl")
    utf16.write_bytes(f["questions"].read_text().encode("utf-16-le"))  # no byte-order mark: Windows' "Unicode"
    said = f"{utf16}: the file is UTF-16 (little-endian, without a byte-order mark); save it as UTF-8"
    assert one_line_error(["evaluate", "--queries", utf16, "--corpus", f["corpus"], "--run", f["run"], "--dry-run"],
                          capsys, monkeypatch, tmp_path) == said
    utf16_answers = f["answers"].with_name("answers-utf16.jsonl")
    utf16_answers.write_bytes(f["answers"].read_text().encode("utf-16-le"))
    message = one_line_error(["evaluate-citations", utf16_answers, "--out", tmp_path / "c.sqlite"], capsys,
                             monkeypatch, tmp_path)
    assert message == f"{utf16_answers}: {said.split(': ', 1)[1]}"
    config = tmp_path / "evaluate.toml"
    config.write_bytes('queries = "q.jsonl"\n'.encode("utf-16"))
    assert one_line_error(["evaluate", "--config", config, "--dry-run"], capsys, monkeypatch, tmp_path) == (
        f"{config}: the file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8")


def test_any_other_file_system_error_is_one_line_naming_the_file(inputs, tmp_path, capsys, monkeypatch):
    """The last resort of ``main``: an OSError no command foresaw is printed as ``FILE: reason``, exit 2."""
    import rageval.export

    def failing_export(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "locked.csv"))

    monkeypatch.setattr(rageval.export, "export_run", failing_export)
    message = one_line_error(["export", inputs["run_file"], "--out", tmp_path / "locked.csv"], capsys, monkeypatch,
                             tmp_path)
    assert message == f"{tmp_path / 'locked.csv'}: permission denied"
    assert describe_os_error(OSError(18, "Invalid cross-device link", "a", None, "b")) == \
        "a -> b: invalid cross-device link"
    assert describe_os_error(ConnectionRefusedError(111, "Connection refused")) == "Connection refused"
