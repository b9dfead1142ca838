"""The one open/version/check of rageval's six kinds of SQLite file (rageval.store.files): odd file names open,
anything that is not the expected kind or version is a StoreError naming the file, and runs are listed by kind."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest

from rageval.annotations import AnnotationStore
from rageval.errors import StoreError
from rageval.generation.cache import LLMCache
from rageval.jobs.spec import JobStore
from rageval.store import (
    ANNOTATIONS,
    ATTRIBUTION,
    IUM,
    JOBS,
    LLM_CACHE,
    RUN,
    RunReader,
    kind_of,
    list_runs,
    open_for_write,
    open_readonly,
    sqlite_uri,
    stamp,
    write_run,
    write_sqlite_atomically,
)
from rageval.store.annotations import PassageItem
from rageval.store.attribution import AttributionReader
from rageval.store.ium import read_ium_run
from tests.store.test_store import small_run

ODD_NAME = "a#b?c%2f.sqlite"


def test_odd_file_names_open_read_only(tmp_path):
    path = write_run(small_run(), tmp_path / ODD_NAME)
    assert "%23" in sqlite_uri(path) and "%3F" in sqlite_uri(path) and "%252f" in sqlite_uri(path)
    with RunReader(path) as reader:
        assert reader.settings()["notes"] == "first"
    assert list_runs(tmp_path) == [path]
    assert not (tmp_path / "a").exists()  # the old `file:{path}?mode=ro` would have opened (and made) "a"


def _bad_files(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE t (x)")
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    zipped = tmp_path / "zipped.sqlite"
    zipped.write_bytes(gzip.compress(write_run(small_run(), tmp_path / "inner.sqlite").read_bytes()))
    (tmp_path / "inner.sqlite").unlink()
    newer = write_run(small_run(), tmp_path / "newer.sqlite")
    with sqlite3.connect(newer) as connection:
        connection.execute(f"PRAGMA user_version = {RUN.version + 1}")
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(write_run(small_run(), tmp_path / "whole.sqlite").read_bytes()[:1500])
    (tmp_path / "whole.sqlite").unlink()
    return {"foreign": foreign, "empty": empty, "zipped": zipped, "newer": newer, "truncated": truncated}


@pytest.mark.parametrize(("name", "message"), [
    ("foreign", r"not a rageval run file \(SQLite application_id 0x0"),
    ("empty", "empty file, not a rageval run file"),
    ("zipped", r"not a rageval run file \(SQLite says: file is not a database\)"),
    ("newer", rf"run schema version {RUN.version + 1} is newer than this rageval understands \({RUN.version}\)"),
    ("truncated", "not a rageval run file"),
])
def test_what_is_not_a_readable_run_is_a_store_error_naming_the_file(tmp_path, name, message):
    path = _bad_files(tmp_path)[name]
    with pytest.raises(StoreError, match=rf"{path.name}: {message}"):
        RunReader(path)
    with pytest.raises(StoreError, match=path.name):
        open_for_write(path, RUN)


def test_another_kind_is_named(tmp_path):
    annotations = AnnotationStore(tmp_path / "annotations.sqlite")
    annotations.save_label("run", PassageItem("q", "p"), 1, "Ada")
    with pytest.raises(StoreError, match=r"annotations\.sqlite: not a rageval run file \(it is a rageval "
                                         r"annotation file, expected 'RAGE'\)"):
        RunReader(annotations.path)
    run = write_run(small_run(), tmp_path / "run.sqlite")
    for open_as in (AttributionReader, read_ium_run, LLMCache, JobStore, AnnotationStore):
        with pytest.raises(StoreError, match=r"run\.sqlite: not a rageval .*it is a rageval run file"):
            open_as(run)


def _ium_file(path, version=IUM.version):
    def fill(connection):
        stamp(connection, IUM)
        connection.execute(f"PRAGMA user_version = {version}")
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('settings', ?)", (json.dumps({"seed": 0}),))
        connection.execute("CREATE TABLE agents (name TEXT, dataset TEXT, task_id TEXT, model_id TEXT, k INTEGER, "
                           "utility TEXT)")
    return write_sqlite_atomically(path, fill)


def test_ium_files_carry_and_check_a_schema_version(tmp_path):
    settings, tables = read_ium_run(_ium_file(tmp_path / "ium.sqlite"))
    assert settings == {"seed": 0} and list(tables) == ["agents"]
    with pytest.raises(StoreError, match=rf"newer\.sqlite: IUM schema version {IUM.version + 1} is newer"):
        read_ium_run(_ium_file(tmp_path / "newer.sqlite", IUM.version + 1))


def test_list_runs_lists_run_files_by_kind(tmp_path):
    run = write_run(small_run(), tmp_path / "run.sqlite")
    _ium_file(tmp_path / "ium.sqlite")
    AnnotationStore(tmp_path / "labels.sqlite").save_label("run", PassageItem("q", "p"), 1, "Ada")
    LLMCache(tmp_path / "cache.sqlite").close()
    JobStore(tmp_path / "jobs.sqlite").close()
    (tmp_path / "bad").mkdir()
    bad = _bad_files(tmp_path / "bad")
    # A run file of a newer schema, or one cut short after its header, is still a run by kind: listed, and opening
    # it says what is wrong. Everything else is not listed.
    assert sorted(list_runs(tmp_path)) == sorted([run, bad["newer"], bad["truncated"]])
    kinds = {p.name: kind_of(p) for p in tmp_path.glob("*.sqlite")}
    assert kinds == {"run.sqlite": RUN, "ium.sqlite": IUM, "labels.sqlite": ANNOTATIONS, "cache.sqlite": LLM_CACHE,
                     "jobs.sqlite": JOBS}


def test_writers_stamp_kind_and_version_and_unmarked_old_files_still_open(tmp_path):
    for kind, make in ((LLM_CACHE, lambda p: LLMCache(p).close()), (JOBS, lambda p: JobStore(p).close())):
        path = tmp_path / f"{kind.tag}.sqlite"
        make(path)
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA application_id").fetchone()[0] == kind.application_id
            assert connection.execute("PRAGMA user_version").fetchone()[0] == kind.version
            connection.execute("PRAGMA application_id = 0")  # as written before the kinds were stamped
        make(path)
        open_readonly(path, kind).close()
    assert ATTRIBUTION.tag == "RAGA" and RUN.tag == "RAGE" and IUM.tag == "RAGI" and ANNOTATIONS.tag == "RAGN"


def test_open_for_write_needs_the_file_unless_creating(tmp_path):
    with pytest.raises(StoreError, match=r"missing\.sqlite: no such run file"):
        open_for_write(tmp_path / "missing.sqlite", RUN)
    with pytest.raises(StoreError, match=r"missing\.sqlite: no such run file"):
        open_readonly(tmp_path / "missing.sqlite", RUN)
    connection = open_for_write(tmp_path / "new.sqlite", JOBS, create=True)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 0
    connection.close()


def test_a_journal_gone_before_recovery_is_a_finished_write_not_an_interrupted_one(tmp_path, monkeypatch):
    """Under closely following writes (annotators labelling while a job writes), a read-only reader can take the
    journal of a write in progress for a hot one (SQLite checks the journal, then the writer's lock: between the two
    one write ends and the next begins). By the time the reader tries to roll it back, that write has finished and
    its journal is gone: the file is whole and must be read normally, not "as it is on disk" with an interrupted-write
    note. The interleaving is made real: a writer holds a live transaction (its journal beside the file), SQLite's
    answer is the one the race gives, and the writer commits in between."""
    from rageval.store import files
    from rageval.store.schemas import ANNOTATIONS

    path = tmp_path / "annotations.sqlite"
    AnnotationStore(path).save_label("r", PassageItem("q", "p0"), 1, "a")
    with sqlite3.connect(path) as connection:  # the annotation file is in WAL mode; the race is the rollback journal's
        connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE labels SET note = 'written meanwhile'")
    assert files.journal_path(path).exists()  # a write in progress: its journal beside the file

    def raced(connection):  # SQLite's answer in the race; meanwhile the write ends and its journal goes
        writer.execute("COMMIT")
        return True

    monkeypatch.setattr(files, "_needs_rollback", raced)
    connection = files.open_readonly(path, ANNOTATIONS)
    try:
        assert connection.note is None
        assert connection.execute("SELECT note FROM labels").fetchone() == ("written meanwhile",)
    finally:
        connection.close()
        writer.close()
