"""One plan: the Annotate page's "Label next" (ui.data_trust.load_plan) and ``rageval trust --plan`` are the same
function with the same seed (rageval.trust.report.next_plan), so they list the same passages, also after a label is
changed (the annotation file's revision then differs from the number of labelled items; issue 41, item 3)."""

from __future__ import annotations

import json

import pandas as pd

from rageval.annotations import AnnotationStore
from rageval.cli import main
from tests.run_fixtures import make_small_run
from ui import data_annotate, data_trust


def test_label_next_on_the_page_is_the_command_line_plan(tmp_path, capsys):
    path = make_small_run(tmp_path / "small.sqlite")
    from rageval.store import RunReader

    with RunReader(path) as reader:
        rankings = reader.rankings()
    items = [(q, p, rank) for q, r in rankings.items() for rank, p in enumerate(r.passage_ids, start=1)]
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    store.create_sample("small", pd.DataFrame(items, columns=["query_id", "passage_id", "rank"]), 12, 3, "tester")
    sample = store.latest_sample("small").items
    rows = [(q, p, i % 2, "ann") for i, (q, p) in enumerate(zip(sample["query_id"], sample["passage_id"]))]
    store.save_passage_labels("small", rows[:8])
    store.save_passage_labels("small", [(rows[0][0], rows[0][1], 1 - rows[0][2], "ann")])  # a change of mind

    assert main(["trust", str(path), "--annotations", str(store.path), "--json", "--plan", "6",
                 "--plan-method", "gold"]) == 0
    printed = json.loads(capsys.readouterr().out)["plan"]
    key = data_annotate.annotation_key(store.path)
    assert key[1] != 8  # the revision (9 label rows) is not the number of labelled items (8)
    page_items, page_allocation = data_trust.load_plan(*key, str(path), path.stat().st_mtime_ns, "gold", 6)
    assert [(i["query_id"], i["passage_id"]) for i in printed["items"]] == list(
        zip(page_items["query_id"], page_items["passage_id"]))
    assert [a["add"] for a in printed["allocation"]] == page_allocation["add"].tolist()
