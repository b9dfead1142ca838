"""The loop from the command line and the annotation tools (issue 41, item 4): ``rageval annotations sample``,
``rageval queue create / status / export / import / adjudicate``, and the round trip of a queue through Label
Studio's JSON export (built here as Label Studio's documented task format describes it,
https://labelstud.io/guide/task_format) and Argilla's record export (made by argilla 2.8.0 itself:
fixtures/make_argilla_export.py). A bad file is named with its line, and a failed import writes nothing."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from rageval.cli import main
from rageval.queues import QueueStore
from tests.run_fixtures import make_small_run
from tests.trust.fixtures.make_argilla_export import PENDING, decision

FIXTURES = Path(__file__).parent / "fixtures"


def make_queue(folder: Path) -> tuple[Path, Path]:
    """The fixture run and a uniform queue of 6 of its passages, seed 5, each to ann and bob (queue 1)."""
    run = make_small_run(folder / "small.sqlite")
    store = folder / ANNOTATIONS_FILE
    assert main(["queue", "create", str(run), "--size", "6", "--seed", "5", "--overlap", "2", "--annotators",
                 "ann,bob", "--name", "tools", "--annotations", str(store)]) == 0
    return run, store


@pytest.fixture
def queue(tmp_path, capsys):
    run, store = make_queue(tmp_path)
    capsys.readouterr()
    return run, store


def exported(store: Path, fmt: str, capsys) -> str:
    assert main(["queue", "export", "1", "--format", fmt, "--annotations", str(store)]) == 0
    return capsys.readouterr().out


def queue_labels(store: Path) -> dict[tuple[int, str], int | str]:
    latest = QueueStore(store).latest_decisions(1)
    return {(int(p), a): (int(v) if s == "labelled" else s)
            for p, a, v, s in zip(latest["position"], latest["annotator"], latest["label"], latest["status"])}


def test_csv_round_trip_status_and_adjudication(queue, tmp_path, capsys):
    _run, store = queue
    rows = list(csv.DictReader(exported(store, "csv", capsys).splitlines()))
    assert len(rows) == 12 and {r["annotator"] for r in rows} == {"ann", "bob"}
    assert all(r["question"] and r["passage"] for r in rows)  # what an annotator reads
    for r in rows:
        r["label"] = "" if (int(r["position"]), r["annotator"]) in PENDING else \
            {"useful": "1", "not useful": "0"}[decision(int(r["position"]), r["annotator"])]
    filled = tmp_path / "filled.csv"
    with filled.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["queue", "import", "1", str(filled), "--annotations", str(store)]) == 0
    assert queue_labels(store) == {(p, a): 1 if decision(p, a) == "useful" else 0
                                   for p in range(6) for a in ("ann", "bob") if (p, a) not in PENDING}
    capsys.readouterr()
    assert main(["queue", "status", "1", "--json", "--annotations", str(store)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["labels"]["unresolved"] == [0] and status["totals"]["done"] == 11
    adjudications = tmp_path / "adj.csv"
    adjudications.write_text("position,label,note\n0,1,the passage names it\n")
    assert main(["queue", "adjudicate", "1", "--from", str(adjudications), "--adjudicator", "lead",
                 "--annotations", str(store)]) == 0
    capsys.readouterr()
    assert main(["queue", "status", "1", "--json", "--annotations", str(store)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["labels"]["unresolved"] == [] and status["labels"]["adjudicated"] == 1


def label_studio_export(tasks: list[dict]) -> list[dict]:
    """Label Studio's JSON export of a project that imported ``tasks``: each task with its id, data, annotations
    (result regions of the Choices control ``label`` and the TextArea ``note``, completed_by a user id, lead_time,
    ...) and predictions, as the task format page documents it; one task cancelled (skipped), one not labelled."""
    out = []
    for number, task in enumerate(tasks, start=1):
        data = task["data"]
        key = (data["position"], data["annotator"])
        annotations = []
        if key not in PENDING:
            result = [{"id": f"r{number}", "from_name": "label", "to_name": "passage", "type": "choices",
                       "origin": "manual", "value": {"choices": [decision(*key)]}}]
            if number == 2:
                result.append({"id": f"n{number}", "from_name": "note", "to_name": "passage", "type": "textarea",
                               "origin": "manual", "value": {"text": ["hard one"]}})
            annotations.append({"id": 1000 + number, "completed_by": 7 if data["annotator"] == "ann" else 8,
                                "result": result, "was_cancelled": key == (3, "ann"), "ground_truth": False,
                                "created_at": "2026-12-07T03:00:00.000000Z",
                                "updated_at": "2026-12-07T03:00:00.000000Z", "lead_time": 4.2,
                                "result_count": 0, "task": number, "project": 3})
        out.append({"id": number, "data": data, "annotations": annotations, "predictions": [],
                    "meta": {}, "created_at": "2026-12-07T02:00:00.000000Z", "project": 3})
    return out


def test_label_studio_round_trip(queue, tmp_path, capsys):
    _, store = queue
    tasks = json.loads(exported(store, "label-studio", capsys))
    assert len(tasks) == 12 and set(tasks[0]["data"]) >= {"queue", "position", "annotator", "question", "passage"}
    export = tmp_path / "project-3-at-2026-12-07.json"
    export.write_text(json.dumps(label_studio_export(tasks), indent=2))
    assert main(["queue", "import", "1", str(export), "--format", "label-studio", "--annotations", str(store)]) == 0
    got = queue_labels(store)
    expected = {(p, a): 1 if decision(p, a) == "useful" else 0 for p in range(6) for a in ("ann", "bob")
                if (p, a) not in PENDING}
    expected[(3, "ann")] = "skipped"
    assert got == expected
    notes = QueueStore(store).latest_decisions(1).set_index(["position", "annotator"])["note"]
    second = (tasks[1]["data"]["position"], tasks[1]["data"]["annotator"])
    assert notes.loc[second] == "hard one"


def test_argilla_round_trip_on_records_argilla_wrote(queue, capsys):
    _, store = queue
    ours = json.loads(exported(store, "argilla", capsys))
    theirs = json.loads((FIXTURES / "argilla_records.json").read_text())
    assert [r["id"] for r in ours] == [r["id"] for r in theirs]  # the fixture is this queue's
    assert set(theirs[0]) >= {"id", "fields", "metadata", "responses", "suggestions", "vectors", "_server_id"}
    assert main(["queue", "import", "1", str(FIXTURES / "argilla_records.json"), "--format", "argilla",
                 "--annotations", str(store)]) == 0
    assert queue_labels(store) == {(p, a): 1 if decision(p, a) == "useful" else 0
                                   for p in range(6) for a in ("ann", "bob") if (p, a) not in PENDING}


@pytest.mark.parametrize("fmt", ["label-studio", "argilla"])
def test_a_bad_record_is_named_by_file_and_line_and_nothing_is_written(queue, tmp_path, capsys, fmt):
    _, store = queue
    if fmt == "label-studio":
        records = label_studio_export(json.loads(exported(store, fmt, capsys)))
        records[4]["annotations"][0]["result"][0]["value"]["choices"] = ["maybe"]
    else:
        records = json.loads((FIXTURES / "argilla_records.json").read_text())
        records[4]["responses"]["label"][0]["value"] = "maybe"
    bad = tmp_path / "bad.json"
    text = json.dumps(records, indent=1)
    bad.write_text(text)
    line = text.splitlines().index(" {", 0) + 1  # where the first record starts
    starts = [i + 1 for i, x in enumerate(text.splitlines()) if x == " {"]
    assert main(["queue", "import", "1", str(bad), "--format", fmt, "--annotations", str(store)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}, line {starts[4]}," in err and "'maybe'" in err and "Traceback" not in err and line == starts[0]
    assert QueueStore(store).decisions(1).empty  # the good records before it were not written either


def test_errors_name_the_line_for_an_unassigned_annotator_and_an_unknown_position(queue, tmp_path, capsys):
    _, store = queue
    rows = exported(store, "csv", capsys).splitlines()
    header, first = rows[0], rows[1].split(",")
    wrong = tmp_path / "wrong.csv"
    wrong.write_text(f"{header}\n" + ",".join([*first[:3], *first[3:-2], "1", ""]) + "\n1,0,cy,,,,,,0,\n")
    assert main(["queue", "import", "1", str(wrong), "--annotations", str(store)]) == 2
    assert f"{wrong}, line 3, field 'annotator': item 0 of queue 1 is not assigned to 'cy'" in capsys.readouterr().err
    adjudications = tmp_path / "adj.csv"
    adjudications.write_text("position,label\n0,1\n99,0\n")
    assert main(["queue", "adjudicate", "1", "--from", str(adjudications), "--annotations", str(store)]) == 2
    assert f"{adjudications}, line 3, field 'position': queue 1 has no item 99" in capsys.readouterr().err
    assert QueueStore(store).decisions(1).empty and QueueStore(store).adjudications(1).empty


def test_annotations_sample_is_a_stored_design_whose_csv_comes_back(tmp_path, capsys):
    run = make_small_run(tmp_path / "small.sqlite")
    store = tmp_path / ANNOTATIONS_FILE
    out = tmp_path / "items.csv"
    assert main(["annotations", "sample", str(run), "--size", "10", "--seed", "2", "--out", str(out),
                 "--annotations", str(store)]) == 0
    assert "rageval annotations import" in capsys.readouterr().out
    rows = list(csv.DictReader(out.open()))
    sample = AnnotationStore(store).latest_sample("small")
    assert sample is not None and [(r["query_id"], r["passage_id"]) for r in rows] == list(
        zip(sample.items["query_id"], sample.items["passage_id"]))
    for i, r in enumerate(rows):
        r["label"] = "" if i >= 8 else str(i % 2)  # two left to label
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["annotations", "import", str(run), str(out), "--annotator", "ann", "--annotations", str(store)]) == 0
    capsys.readouterr()
    assert main(["trust", str(run), "--json", "--plan", "0", "--annotations", str(store)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["design"]["plan"] == "uniform" and report["design"]["supports_unbiased_estimate"]
    assert report["human"]["labels_used"] == 8


def test_a_stratified_sample_is_a_queue_of_one_annotator(tmp_path, capsys):
    run = make_small_run(tmp_path / "small.sqlite")
    store = tmp_path / ANNOTATIONS_FILE
    out = tmp_path / "items.csv"
    assert main(["annotations", "sample", str(run), "--size", "8", "--plan", "stratified", "--by",
                 "contains_answer", "--annotator", "ann", "--out", str(out), "--annotations", str(store)]) == 0
    assert "rageval queue import 1" in capsys.readouterr().out
    queue = QueueStore(store).queue(1)
    assert queue.plan.stratify_by == "contains_answer" and queue.annotators == ("ann",) and queue.overlap == 1
    assert len(list(csv.DictReader(out.open()))) == 8


if __name__ == "__main__":  # rageval's Argilla export of make_queue's queue, for fixtures/make_argilla_export.py
    import contextlib
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        with contextlib.redirect_stdout(io.StringIO()):
            _, made = make_queue(Path(folder))
        sys.exit(main(["queue", "export", "1", "--format", "argilla", "--annotations", str(made)]))


def test_an_email_typed_with_capitals_is_the_identity_that_signs_in(tmp_path, capsys):
    """Issue 39 item 7 from the command line: a signed-in person's identity is their email in lower case, so a queue
    created for 'Ann@Example.ORG' is assigned to 'ann@example.org' (a name without '@' keeps its case)."""
    from rageval.queues import QueueStore

    run = make_small_run(tmp_path / "small.sqlite")
    store = tmp_path / ANNOTATIONS_FILE
    assert main(["queue", "create", str(run), "--size", "4", "--overlap", "2", "--annotators",
                 " Ann@Example.ORG ,Bob", "--annotations", str(store)]) == 0
    assert set(QueueStore(store).queue(1).annotators) == {"ann@example.org", "Bob"}
