"""Who started a job and who uploaded a run are stored with them (jobs database v3, the run's settings)."""

from __future__ import annotations

import sqlite3

from rageval.jobs.spec import JobSpec, JobStore
from rageval.store.schemas import JOBS


def test_jobs_database_v2_gains_started_by(tmp_path):
    path = tmp_path / "jobs.sqlite"
    with JobStore(path) as store:
        spec = JobSpec(run_path=str(tmp_path / "run.sqlite"))
        store.create(spec, "erag:em@fake", 3)
    # Make it the version-2 file an older rageval wrote: no started_by column.
    connection = sqlite3.connect(path)
    for column in ("started_by", "plan", "llm_started", "activity", "activity_since"):  # v3's and v4's
        connection.execute(f"ALTER TABLE jobs DROP COLUMN {column}")
    connection.execute("PRAGMA user_version = 2")
    connection.commit()
    connection.close()
    with JobStore(path) as store:
        old = store.list()[0]
        assert old.started_by is None and old.total == 3
        new = store.create(spec, "erag:em@fake", 2, started_by="ops@example.org")
        assert store.get(new.job_id).started_by == "ops@example.org"
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == JOBS.version == 4
    connection.close()


def test_upload_records_who(tmp_path):
    from rageval.store import read_run
    from rageval.upload.save import save_upload
    from tests.run_fixtures import make_small_run

    source = make_small_run(tmp_path / "source.sqlite")
    run = read_run(source)
    path = save_upload(run, tmp_path / "runs", "mine", uploaded_by="ops@example.org")
    assert read_run(path).settings["uploaded_by"] == "ops@example.org"
    assert "uploaded_by" not in read_run(save_upload(run, tmp_path / "runs", "local")).settings
