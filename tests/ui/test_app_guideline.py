"""The Annotate page shows the run's guideline (the default for its task type until one is set), lets it be edited,
and a label saved there keeps the guideline shown (issue 41, item 6)."""

from __future__ import annotations

from pathlib import Path

from rageval.annotations import ANNOTATIONS_FILE, SINGLE_HOP, AnnotationStore, default_guideline
from tests.run_fixtures import make_small_run
from tests.ui.test_app import start

ANNOTATE = str(Path(__file__).resolve().parents[2] / "app_pages" / "9_Annotate.py")


def test_annotate_shows_edits_and_stores_the_run_guideline(tmp_path, monkeypatch):
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("RAGEVAL_ANNOTATIONS", raising=False)
    app = start(ANNOTATE, annotator="ada", run="fixture", mode="passages")
    shown = " ".join(m.value for m in app.markdown).replace("\\", "")
    assert default_guideline("passage", SINGLE_HOP) in shown  # an NQ run: the single-hop default
    app.text_area(key="annotate.guideline_text").input("Useful: states the year the prize was first given.")
    next(b for b in app.button if b.label == "Save the guideline").click().run()
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    assert store.guideline("fixture", "passage") == "Useful: states the year the prize was first given."
    assert "Set for this run" in " ".join(c.value for c in app.caption)
