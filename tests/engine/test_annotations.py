"""The annotation store and its agreement statistics (rageval/annotations.py), on the fixture run
(tests/run_fixtures.make_small_run: 6 real NQ questions x 5 passages, labels gold / contains_answer / erag:em) and on
a small attributed-answer run of 4 real HAGRID queries (:func:`make_small_attribution_run`). Cohen's kappa is
checked against scikit-learn, qrels against pytrec_eval's parser, disagreements against a set built here."""

from __future__ import annotations

import io
import itertools
import os
import sqlite3
import subprocess
import sys
import warnings
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from rageval.agreement import (
    agreement_between_annotators,
    agreement_with_methods,
    cohen_kappa,
    disagreements,
    fleiss_kappa,
    krippendorff_alpha,
    multi_annotator_agreement,
    statement_method_labels,
)
from rageval.annotations import (
    ANNOTATIONS_FILE,
    STATEMENT_METHODS,
    AnnotationStore,
    annotations_path,
    labels_csv,
    latest_labels,
    qrels_frame,
    sample_passages,
    sample_status,
)
from rageval.errors import StoreError
from rageval.store import ANNOTATION_APPLICATION_ID, RunReader, list_runs, sqlite_application_id
from rageval.store.annotations import LABEL_COLUMNS, SKIPPED, UNSURE, PassageItem, StatementItem
from rageval.store.schemas import ANNOTATIONS, ANNOTATIONS_SCHEMA_V1
from rageval.trec import qrels_text
from tests.run_fixtures import LABEL_METHODS, N_QUERIES, K, make_small_run

REPO = Path(__file__).resolve().parents[2]
RUN = "fixture"


def make_small_attribution_run(path: Path, uncited_last: bool = False) -> Path:
    """An attributed-answer run file of HAGRID's own answers to its first 4 dev queries (their annotated sentences
    as statements, with HAGRID's human labels), scored by the word-containment NLI of tests/attribution_fixtures.py
    (no model, no retrieval). ``uncited_last``: the last statement of every answer of several statements loses its
    citations (5 of the 21 statements), like a generated answer's uncited closing sentence."""
    import dataclasses

    from rageval.attribution.experiment import gold_answer_records, hagrid_query_id
    from rageval.attribution.scoring import score_answers
    from rageval.data import HAGRID_FILE, read_hagrid
    from rageval.paths import DATA_DIR
    from rageval.store.attribution import AttributionRun, write_attribution_run
    from tests.attribution_fixtures import ContainmentNli

    records = read_hagrid(DATA_DIR / HAGRID_FILE)[:4]
    answers = [a for r in records for a in gold_answer_records(r, {})]
    if uncited_last:
        answers = [a if len(a.statements) < 2 else dataclasses.replace(a, statements=(
            *a.statements[:-1], dataclasses.replace(a.statements[-1], citations=()))) for a in answers]
    scored = score_answers(answers, ContainmentNli())
    settings = {"dataset": "hagrid-dev (first 4 queries)", "nli": ContainmentNli.model_id}
    queries = [(hagrid_query_id(r), r.query, ()) for r in records]
    return write_attribution_run(AttributionRun(settings, queries, scored), path)


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("runs") / f"{RUN}.sqlite")


@pytest.fixture(scope="module")
def run_labels(run_path) -> pd.DataFrame:
    with RunReader(run_path) as reader:
        return reader.labels()


@pytest.fixture(scope="module")
def retrieved(run_path) -> list[tuple[str, str]]:
    """Every (query id, passage id) of the fixture's rankings, in rank order (30 items)."""
    with RunReader(run_path) as reader:
        return [(q, pid) for q, ranking in reader.rankings().items() for pid in ranking.passage_ids]


def method_values(run_labels: pd.DataFrame, method: str) -> dict[tuple[str, str], float]:
    rows = run_labels[run_labels["method"] == method]
    return {(q, p): float(v) for q, p, v in zip(rows["query_id"], rows["passage_id"], rows["value"])}


def simulated_person(run_labels, retrieved) -> dict[tuple[str, str], int]:
    """A person who mostly agrees with contains-answer: its label on every retrieved passage, flipped on every
    fourth one (so no method agrees perfectly and kappa is informative)."""
    contains = method_values(run_labels, "contains_answer")
    return {item: int(contains[item]) ^ (index % 4 == 3) for index, item in enumerate(retrieved)}


def saved_store(tmp_path: Path, person: dict[tuple[str, str], int], annotator: str = "Ada") -> AnnotationStore:
    store = AnnotationStore(annotations_path(tmp_path))
    for (query_id, passage_id), label in person.items():
        store.save_label(RUN, PassageItem(query_id, passage_id), label, annotator)
    return store


def sklearn_kappa(first, second) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns (and returns NaN) when kappa is undefined
        return float(cohen_kappa_score(list(first), list(second)))


# --- Cohen's kappa ----------------------------------------------------------------------------------------------

def test_kappa_and_confusion_counts_match_sklearn_on_the_fixture_methods(run_labels, retrieved):
    informative = 0
    for first, second in itertools.combinations(LABEL_METHODS, 2):
        x = [int(method_values(run_labels, first)[item]) for item in retrieved]
        y = [int(method_values(run_labels, second)[item]) for item in retrieved]
        ours = cohen_kappa(x, y)
        assert ours.n == len(retrieved) == N_QUERIES * K
        assert ours.kappa == pytest.approx(sklearn_kappa(x, y), abs=1e-12), (first, second)
        assert [[ours.both_yes, ours.first_only], [ours.second_only, ours.both_no]] == \
            confusion_matrix(x, y, labels=[1, 0]).tolist()
        assert ours.observed == pytest.approx(np.mean(np.array(x) == np.array(y)))
        informative += 0 < ours.kappa < 1
    assert informative >= 2  # the fixture's methods disagree on some passages, so the check is not vacuous


def test_kappa_refuses_labels_other_than_0_and_1_instead_of_truncating_them():
    with pytest.raises(ValueError, match=r"got 0\.7"):
        cohen_kappa([0.7, 1, 0], [1, 1, 0])  # int(0.7) once read it as 0
    with pytest.raises(ValueError, match="got 2"):
        cohen_kappa([1, 0], [2, 0])
    assert cohen_kappa([1.0, 0.0, True], [1, 0, 1]).kappa == 1.0  # 0/1 as floats or bools are fine


def test_kappa_undefined_cases_are_nan_with_a_reason():
    both_useful = cohen_kappa([1, 1, 1], [1, 1, 1])
    assert np.isnan(both_useful.kappa) and np.isnan(sklearn_kappa([1, 1, 1], [1, 1, 1]))
    assert both_useful.n == 3 and both_useful.both_yes == 3 and both_useful.observed == 1.0
    assert "all 3 items the label 1" in both_useful.reason
    assert "label 0" in cohen_kappa([0, 0], [0, 0]).reason
    empty = cohen_kappa([], [])
    assert empty.n == 0 and np.isnan(empty.kappa) and empty.reason == "no item labelled by both"
    # One constant rater and one that varies: defined, and 0 (agreement no better than chance), as sklearn says.
    one_constant = cohen_kappa([1, 1, 1, 1], [1, 0, 1, 0])
    assert one_constant.reason == "" and one_constant.kappa == pytest.approx(sklearn_kappa([1, 1, 1, 1], [1, 0, 1, 0]))
    assert one_constant.kappa == 0.0
    with pytest.raises(ValueError, match="0 or 1"):
        cohen_kappa([2], [1])


def test_agreement_with_each_method_matches_sklearn(tmp_path, run_labels, retrieved):
    person = simulated_person(run_labels, retrieved)
    mine = latest_labels(saved_store(tmp_path, person).labels(RUN, "passage"), "passage", "Ada")
    table = agreement_with_methods(mine, run_labels).set_index("method")
    assert sorted(table.index) == sorted(LABEL_METHODS)
    for method in LABEL_METHODS:
        values = method_values(run_labels, method)
        x = [person[item] for item in retrieved]
        y = [int(values[item] >= 0.5) for item in retrieved]
        # gold also labels query 5's unretrieved gold passage; nobody labelled it, so it is not counted.
        assert table.at[method, "n"] == len(retrieved)
        assert table.at[method, "kappa"] == pytest.approx(sklearn_kappa(x, y), abs=1e-12), method
        assert table.at[method, "both_useful"] == sum(a == b == 1 for a, b in zip(x, y))
        assert table.at[method, "person_only"] == sum(a == 1 and b == 0 for a, b in zip(x, y))
        assert table.at[method, "reason"] == ""


def test_disagreements_are_exactly_the_differing_items(tmp_path, run_labels, retrieved):
    person = simulated_person(run_labels, retrieved)
    mine = latest_labels(saved_store(tmp_path, person).labels(RUN, "passage"), "passage", "Ada")
    found = disagreements(mine, run_labels)
    expected = {(q, p, method) for method in LABEL_METHODS
                for (q, p), value in method_values(run_labels, method).items()
                if (q, p) in person and person[q, p] != int(value >= 0.5)}
    got = list(zip(found["query_id"], found["passage_id"], found["method"]))
    assert len(got) == len(set(got)) and set(got) == expected and expected
    for row in found.itertuples():
        assert row.label == person[row.query_id, row.passage_id] != row.method_label


def test_graded_method_labels_count_as_useful_from_one_half():
    mine = pd.DataFrame({"query_id": ["q", "q", "q"], "passage_id": ["a", "b", "c"], "label": [1, 1, 0]})
    graded = pd.DataFrame({"method": "erag:f1", "query_id": "q", "passage_id": ["a", "b", "c"],
                           "value": [0.5, 0.4, 0.0]})
    row = agreement_with_methods(mine, graded).iloc[0]
    assert (row["both_useful"], row["person_only"], row["both_not"]) == (1, 1, 1)
    assert list(disagreements(mine, graded)["passage_id"]) == ["b"]


def test_all_one_class_agreement_reports_nan_and_does_not_crash():
    mine = pd.DataFrame({"query_id": ["q", "q"], "passage_id": ["a", "b"], "label": [1, 1]})
    method = pd.DataFrame({"method": ["gold", "gold", "other"], "query_id": ["q", "q", "q9"],
                           "passage_id": ["a", "b", "zzz"], "value": [1.0, 1.0, 1.0]})
    table = agreement_with_methods(mine, method).set_index("method")
    assert np.isnan(table.at["gold", "kappa"]) and "chance agreement is 1" in table.at["gold", "reason"]
    assert table.at["other", "n"] == 0 and table.at["other", "reason"] == "no item labelled by both"


def test_agreement_between_annotators_matches_sklearn(tmp_path, run_labels, retrieved):
    ada = simulated_person(run_labels, retrieved)
    gold = method_values(run_labels, "gold")
    bob = {item: int(gold[item]) for item in retrieved[:20]}  # Bob labels the first 20 passages, like gold
    store = saved_store(tmp_path, ada)
    saved_store(tmp_path, bob, annotator="Bob")
    table = agreement_between_annotators(latest_labels(store.labels(RUN), "passage"))
    assert list(zip(table["annotator_a"], table["annotator_b"])) == [("Ada", "Bob")]
    shared = retrieved[:20]
    assert table.at[0, "n"] == 20
    assert table.at[0, "kappa"] == pytest.approx(sklearn_kappa([ada[i] for i in shared], [bob[i] for i in shared]))


# --- the store ------------------------------------------------------------------------------------------------

def test_store_survives_a_reopen_latest_label_wins_and_history_is_kept(tmp_path, retrieved):
    path = tmp_path / ANNOTATIONS_FILE
    first, second = (PassageItem(*item) for item in retrieved[:2])
    store = AnnotationStore(path)
    assert not path.exists() and store.labels().empty and store.revision() == 0  # created on the first save
    ids = [store.save_label(RUN, first, 1, "  Ada   Lovelace "), store.save_label(RUN, second, 0, "Ada Lovelace"),
           store.save_label(RUN, first, 0, "Ada Lovelace", note="on second thought"),
           store.save_label(RUN, first, 1, "Bob")]
    assert ids == sorted(ids) and AnnotationStore(path).revision() == ids[-1]

    reopened = AnnotationStore(path).labels(RUN, "passage")
    assert list(reopened.columns) == list(LABEL_COLUMNS)
    assert list(reopened["id"]) == ids and list(reopened["label"]) == [1, 0, 0, 1]
    assert set(reopened["annotator"]) == {"Ada Lovelace", "Bob"}  # blanks normalised
    for stamp in reopened["labelled_at"]:
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)
    with sqlite3.connect(path) as connection:  # the rows are in the file itself
        assert connection.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 4
        assert connection.execute("PRAGMA application_id").fetchone()[0] == ANNOTATION_APPLICATION_ID

    ada = latest_labels(reopened, "passage", "Ada Lovelace").set_index("passage_id")
    assert ada.at[first.passage_id, "label"] == 0 and ada.at[first.passage_id, "note"] == "on second thought"
    assert ada.at[first.passage_id, "times_labelled"] == 2 and ada.at[second.passage_id, "times_labelled"] == 1
    assert len(latest_labels(reopened, "passage")) == 3  # Ada's two passages and Bob's one


def test_a_saved_label_survives_killing_the_process(tmp_path):
    path = tmp_path / ANNOTATIONS_FILE
    code = ("import os, signal, sys; from rageval.annotations import AnnotationStore; "
            "from rageval.store.annotations import PassageItem; "
            "AnnotationStore(sys.argv[1]).save_label('fixture', PassageItem('nq:0', 'nq_oracle:0'), 1, 'Ada'); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    result = subprocess.run([sys.executable, "-c", code, str(path)], check=False, cwd=REPO, capture_output=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert result.returncode == -9, result.stderr.decode()
    saved = AnnotationStore(path).labels()
    assert list(zip(saved["query_id"], saved["passage_id"], saved["label"], saved["annotator"])) == [
        ("nq:0", "nq_oracle:0", 1, "Ada")]


def test_bad_labels_and_foreign_files_are_refused(tmp_path, run_path):
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    with pytest.raises(ValueError, match="annotator name is required"):
        store.save_label(RUN, PassageItem("q", "p"), 1, "   ")
    with pytest.raises(ValueError, match="label must be 1"):
        store.save_label(RUN, PassageItem("q", "p"), 2, "Ada")
    with pytest.raises(StoreError, match=r"fixture\.sqlite: not a rageval annotation file"):
        AnnotationStore(run_path)
    store.save_label(RUN, PassageItem("q", "p"), 1, "Ada")
    with pytest.raises(StoreError, match="not a rageval run file"):
        RunReader(store.path)
    (tmp_path / "empty.sqlite").touch()
    with pytest.raises(StoreError, match=r"empty\.sqlite: empty file"):
        AnnotationStore(tmp_path / "empty.sqlite")


def test_the_annotation_file_is_not_listed_as_a_run(tmp_path, monkeypatch):
    from ui import data

    run = make_small_run(tmp_path / f"{RUN}.sqlite")
    store = AnnotationStore(annotations_path(tmp_path))
    store.save_label(RUN, PassageItem("nq:0", "nq_oracle:0"), 1, "Ada")
    os.utime(store.path, (2_000_000_000, 2_000_000_000))  # the newest file: it would be the default run if listed
    assert sqlite_application_id(store.path) == ANNOTATION_APPLICATION_ID
    assert list_runs(tmp_path) == [run]
    assert data.find_runs(tmp_path) == [run]
    monkeypatch.setenv(data.RUNS_DIR_ENV, str(tmp_path))
    assert data.find_attribution_runs() == [] and data.find_ium_runs() == []


# --- export ---------------------------------------------------------------------------------------------------

def test_csv_export_parses_back_to_every_saved_row(tmp_path, retrieved):
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    store.save_label(RUN, PassageItem(*retrieved[0]), 1, "Ada", note='first, "quoted"\nsecond line')
    store.save_label(RUN, PassageItem(*retrieved[0]), 0, "Ada")
    store.save_label(RUN, PassageItem(*retrieved[1]), 1, "Bob")
    store.save_label("hagrid", StatementItem("gold-answer", "hagrid:3120", "0", 2), 0, "Ada")
    history = store.labels()

    parsed = pd.read_csv(io.StringIO(labels_csv(history)), dtype=str, keep_default_na=False)
    assert list(parsed.columns) == [*LABEL_COLUMNS, "current"]
    expected = history.astype(object).where(history.notna(), "").astype(str)
    pd.testing.assert_frame_equal(parsed[list(LABEL_COLUMNS)], expected)
    assert list(parsed["current"]) == ["0", "1", "1", "1"]  # Ada's first label was replaced
    assert parsed.at[0, "note"] == 'first, "quoted"\nsecond line'


def test_qrels_export_parses_back_with_pytrec_eval(tmp_path, run_labels, retrieved):
    person = simulated_person(run_labels, retrieved)
    store = saved_store(tmp_path, person)
    latest = latest_labels(store.labels(RUN, "passage"), "passage")
    qrels_file = tmp_path / "ada.qrels"
    qrels_file.write_text(qrels_text(qrels_frame(latest, "Ada")))
    with qrels_file.open() as handle:
        parsed = pytrec_eval.parse_qrel(handle)
    expected: dict[str, dict[str, int]] = {}
    for (query_id, passage_id), label in person.items():
        expected.setdefault(query_id, {})[passage_id] = label
    assert parsed == expected
    assert all(len(line.split()) == 4 and line.split()[1] == "0" for line in qrels_file.read_text().splitlines())


def test_majority_qrels_across_annotators(tmp_path):
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    votes = {"a": {"Ada": 1, "Bob": 1, "Cy": 0}, "b": {"Ada": 1, "Bob": 0}, "c": {"Cy": 1}, "d": {"Ada": 0, "Bob": 0}}
    for passage_id, by_annotator in votes.items():
        for annotator, label in by_annotator.items():
            store.save_label(RUN, PassageItem("q1", passage_id), 1 - label, annotator)  # replaced below
            store.save_label(RUN, PassageItem("q1", passage_id), label, annotator)
    majority = qrels_frame(latest_labels(store.labels(RUN), "passage"))
    # a: 2 of 3 say useful -> 1; b: a tie -> 0 (documented); c: its one vote; d: none says useful.
    assert dict(zip(majority["passage_id"], majority["label"])) == {"a": 1, "b": 0, "c": 1, "d": 0}
    assert qrels_text(majority).splitlines()[0] == "q1 0 a 1"
    with pytest.raises(ValueError, match="no whitespace"):
        qrels_text(pd.DataFrame({"query_id": ["q 1"], "passage_id": ["p"], "label": [1]}))


# --- statements of an attributed-answer run --------------------------------------------------------------------

def test_statement_labels_against_the_nli_verdicts(tmp_path):
    from rageval.store.attribution import AttributionReader

    with AttributionReader(make_small_attribution_run(tmp_path / "hagrid.sqlite")) as reader:
        statements = reader.frame("statements")
    long = statement_method_labels(statements)
    for column, method in STATEMENT_METHODS.items():
        assert (long["method"] == method).sum() == statements[column].notna().sum()
    assert statements["supported"].nunique() == 2  # the containment NLI says yes to some statements, no to others

    # A person who labels like HAGRID's annotators where they gave a label, else "supported".
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    person = {}
    for row in statements.itertuples():
        label = 1 if pd.isna(row.human_attributable) else int(row.human_attributable)
        person[(row.scenario, row.query_id, row.answer_id, int(row.statement))] = label
        store.save_label("hagrid", StatementItem(row.scenario, row.query_id, row.answer_id, int(row.statement)), label,
                         "Ada")
    mine = latest_labels(store.labels("hagrid", "statement"), "statement", "Ada")
    table = agreement_with_methods(mine, long, "statement").set_index("method")
    for column, method in STATEMENT_METHODS.items():
        judged = statements[statements[column].notna()]
        keys = list(zip(judged["scenario"], judged["query_id"], judged["answer_id"], judged["statement"].astype(int)))
        x, y = [person[key] for key in keys], judged[column].astype(int).tolist()
        assert table.at[method, "n"] == len(keys)
        if np.isnan(table.at[method, "kappa"]):
            assert np.isnan(sklearn_kappa(x, y))
        else:
            assert table.at[method, "kappa"] == pytest.approx(sklearn_kappa(x, y))
    assert table.at["hagrid:human", "kappa"] == 1.0 or np.isnan(table.at["hagrid:human", "kappa"])
    assert not np.isnan(table.at["nli:autoais", "kappa"])


def test_a_passage_a_method_left_unlabelled_in_a_judged_query_counts_as_not_useful():
    """Like a run's ``gold`` rows (only its positive passages): qrels semantics, as trec_eval reads them."""
    mine = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "passage_id": ["a", "b", "c"], "label": [1, 1, 0]})
    gold = pd.DataFrame({"method": ["gold"], "query_id": ["q1"], "passage_id": ["a"], "value": [1.0]})
    row = agreement_with_methods(mine, gold).iloc[0]
    # q1/b is unlabelled in judged q1 -> 0; q2 was never judged by gold -> not counted.
    assert (row["n"], row["both_useful"], row["person_only"]) == (2, 1, 1)
    found = disagreements(mine, gold)
    assert list(zip(found["passage_id"], found["value"])) == [("b", 0.0)]


def test_an_annotator_who_labels_like_the_nli_method_gets_kappa_1_and_uncited_statements_are_not_judged(tmp_path):
    """Issue 15: the NLI methods stored every uncited statement as "not supported" while the page said uncited
    statements are not judged, so a careful annotator got kappa 0. Uncited statements are now left out on both
    sides: a person who labels every cited statement as the method does agrees perfectly."""
    from rageval.store.attribution import AttributionReader

    with AttributionReader(make_small_attribution_run(tmp_path / "hagrid.sqlite", uncited_last=True)) as reader:
        statements = reader.frame("statements")
    uncited = statements[statements["citations"] == "[]"]
    assert len(uncited) == 5 and (uncited["supported"] == 0).all()  # what the run stores for them
    long = statement_method_labels(statements)
    keys = ["scenario", "query_id", "answer_id", "statement"]
    judged_nli = long[long["method"] == "nli:autoais"].merge(uncited[keys], on=keys)
    assert judged_nli.empty  # not judged by the NLI methods ...
    assert len(long[long["method"] == "hagrid:human"].merge(uncited[keys], on=keys)) == 5  # ... HAGRID's people did

    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    cited = statements[statements["citations"] != "[]"]
    for row in cited.itertuples():  # labels exactly like AutoAIS on the statements the page asks about
        store.save_label("hagrid", StatementItem(row.scenario, row.query_id, row.answer_id, int(row.statement)),
                         int(row.supported), "Ada")
    mine = latest_labels(store.labels("hagrid", "statement"), "statement", "Ada")
    table = agreement_with_methods(mine, long, "statement").set_index("method")
    assert table.at["nli:autoais", "kappa"] == 1.0 and table.at["nli:autoais", "n"] == len(cited) == 16
    assert cited["supported"].nunique() == 2  # both labels occur, so kappa 1 is not a 0/0 case
    # The old reading (uncited = "not supported") against a person who leaves them out would not change n; against
    # one who judged them by the input passages it gave kappa 0 (the bug): the uncited statements are gone here.
    assert disagreements(mine, long, "statement").query("method == 'nli:autoais'").empty


# --- the sample queue, unsure / skipped, the v1 file ---------------------------------------------------------

def population(retrieved) -> pd.DataFrame:
    ranks = {}
    rows = []
    for query_id, passage_id in retrieved:
        ranks[query_id] = ranks.get(query_id, 0) + 1
        rows.append((query_id, passage_id, ranks[query_id]))
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "rank"])


def test_sample_is_deterministic_grouped_by_query_and_shared_through_the_file(tmp_path, retrieved):
    items = population(retrieved)
    first = sample_passages(items, 10, seed=7)
    again = sample_passages(items.sample(frac=1, random_state=3), 10, seed=7)  # the input order does not matter
    pd.testing.assert_frame_equal(first, again)
    assert len(first) == 10 and list(first["position"]) == list(range(10))
    assert len(set(zip(first["query_id"], first["passage_id"]))) == 10
    assert set(zip(first["query_id"], first["passage_id"])) <= set(retrieved)
    runs = [q for q, _ in itertools.groupby(first["query_id"])]
    assert len(runs) == first["query_id"].nunique()  # a query's items are consecutive
    bigger = sample_passages(items, 20, seed=7)
    assert set(zip(first["query_id"], first["passage_id"])) < set(zip(bigger["query_id"], bigger["passage_id"]))
    assert set(zip(*sample_passages(items, 10, seed=8)[["query_id", "passage_id"]].T.values)) != \
        set(zip(first["query_id"], first["passage_id"]))
    assert len(sample_passages(items, 500, seed=1)) == len(retrieved)  # capped at the run's passages
    with pytest.raises(ValueError, match="at least 1"):
        sample_passages(items, 0, seed=1)

    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    assert store.latest_sample(RUN) is None
    sample_id = store.create_sample(RUN, items, 10, 7, "Ada")
    shared = AnnotationStore(tmp_path / ANNOTATIONS_FILE).latest_sample(RUN)  # another session, another annotator
    assert shared is not None and shared.id == sample_id and (shared.size, shared.seed) == (10, 7)
    assert shared.population == len(retrieved) and shared.created_by == "Ada"
    pd.testing.assert_frame_equal(shared.items, first)
    assert AnnotationStore(tmp_path / ANNOTATIONS_FILE).latest_sample("another run") is None


def test_unsure_and_skipped_are_stored_distinctly_and_left_out_of_kappa(tmp_path, run_labels, retrieved):
    person = simulated_person(run_labels, retrieved)
    store = saved_store(tmp_path, person)
    unsure, skipped = retrieved[0], retrieved[1]
    store.save_label(RUN, PassageItem(*unsure), UNSURE, "Ada", note="the passage is cut off")
    store.save_label(RUN, PassageItem(*skipped), SKIPPED, "Ada")
    with pytest.raises(ValueError, match="label must be"):
        store.save_label(RUN, PassageItem(*skipped), "maybe", "Ada")
    with sqlite3.connect(store.path) as connection:
        stored = connection.execute("SELECT label, status, note FROM labels ORDER BY id DESC LIMIT 2").fetchall()
    assert stored == [(None, "skipped", ""), (None, "unsure", "the passage is cut off")]

    mine = latest_labels(store.labels(RUN, "passage"), "passage", "Ada")
    assert mine.set_index(["query_id", "passage_id"]).at[unsure, "status"] == UNSURE  # the latest decision counts
    table = agreement_with_methods(mine, run_labels).set_index("method")
    kept = retrieved[2:]
    for method in LABEL_METHODS:
        values = method_values(run_labels, method)
        assert table.at[method, "n"] == len(kept) == len(retrieved) - 2
        assert table.at[method, "kappa"] == pytest.approx(
            sklearn_kappa([person[i] for i in kept], [int(values[i] >= 0.5) for i in kept]), abs=1e-12)
    assert set(zip(qrels_frame(mine, "Ada")["query_id"], qrels_frame(mine, "Ada")["passage_id"])) == set(kept)

    sample = sample_passages(population(retrieved), 30, seed=1)
    status = sample_status(sample, mine).set_index(["query_id", "passage_id"])
    assert status.at[unsure, "status"] == UNSURE and status.at[skipped, "status"] == SKIPPED
    assert pd.isna(status.at[unsure, "label"]) and status.at[unsure, "note"] == "the passage is cut off"
    assert (status["status"] == "labelled").sum() == 28


def test_a_v1_file_is_read_and_upgraded_in_place_on_the_first_write(tmp_path):
    """A file written by the v1 schema (labels 0/1, no status, no samples), made here with that schema's SQL."""
    path = tmp_path / ANNOTATIONS_FILE
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA application_id = {ANNOTATION_APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
        connection.executescript(ANNOTATIONS_SCHEMA_V1)
        connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        connection.executemany(
            "INSERT INTO labels (run, kind, query_id, passage_id, label, annotator, labelled_at, note) "
            "VALUES (?, 'passage', ?, ?, ?, 'Ada', '2026-01-01T00:00:00.000000+00:00', ?)",
            [(RUN, "q1", "a", 1, "old"), (RUN, "q1", "b", 0, "")])
    connection.close()
    store = AnnotationStore(path)
    assert store.version() == 1 and store.latest_sample(RUN) is None and store.revision() == 2
    old = store.labels(RUN)
    assert list(old["label"]) == [1, 0] and set(old["status"]) == {"labelled"} and list(old["note"]) == ["old", ""]

    store.save_label(RUN, PassageItem("q1", "c"), UNSURE, "Ada")  # the first write upgrades the file
    assert AnnotationStore(path).version() == ANNOTATIONS.version  # v1 -> v2 -> v3, in one transaction
    new = AnnotationStore(path).labels(RUN)
    assert list(new["id"]) == [1, 2, 3] and list(new["status"]) == ["labelled", "labelled", "unsure"]
    assert list(new["label"].iloc[:2]) == [1, 0] and pd.isna(new["label"].iloc[2])
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == ANNOTATIONS.version
        assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
            ANNOTATIONS.version)
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    connection.close()


# --- several annotators: Fleiss' kappa and Krippendorff's alpha --------------------------------------------------

#: Fleiss (1971)'s worked example as given in Wikipedia's "Fleiss' kappa": 10 subjects, 14 raters, 5 categories;
#: kappa = 0.210 (P_bar = 0.378, P_e = 0.213).
FLEISS_EXAMPLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                  [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers x 12 units with missing
#: values; nominal alpha = 0.743.
KRIPPENDORFF_EXAMPLE = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
                        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
                        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
                        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]


def test_fleiss_kappa_and_krippendorff_alpha_on_the_textbook_examples():
    assert fleiss_kappa(FLEISS_EXAMPLE) == pytest.approx(0.210, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_EXAMPLE) == pytest.approx(0.743, abs=5e-4)
    # Two raters, no missing value: Krippendorff's alpha for nominal data is Scott's pi (Krippendorff 2011), and
    # Fleiss' kappa with two raters is Scott's pi too: (p_o - p_e) / (1 - p_e) with p_e from the pooled shares.
    a, b = [1, 1, 0, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1]
    pooled = (sum(a) + sum(b)) / 16
    p_e = pooled ** 2 + (1 - pooled) ** 2
    scott = (np.mean(np.array(a) == np.array(b)) - p_e) / (1 - p_e)
    assert fleiss_kappa([[2 - x - y, x + y] for x, y in zip(a, b)]) == pytest.approx(scott)
    n = 16  # alpha corrects pi for the sample size: 1 - (n - 1) D_o / (n (1 - p_e) ... ), close to but above it
    assert krippendorff_alpha([a, b]) == pytest.approx(1 - (n - 1) / n * (1 - scott))
    assert np.isnan(fleiss_kappa([[0, 3], [0, 3]])) and np.isnan(krippendorff_alpha([[1, 1], [1, 1]]))
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[1, 2], [0, 2]])


def test_fleiss_kappa_matches_statsmodels():
    rng = np.random.default_rng(15)
    truth = rng.integers(0, 2, 40)
    ratings = np.array([np.where(rng.random(40) < 0.8, truth, 1 - truth) for _ in range(4)], dtype=float)
    counts = [[int((ratings[:, i] == 0).sum()), int((ratings[:, i] == 1).sum())] for i in range(40)]
    statsmodels = pytest.importorskip("statsmodels.stats.inter_rater", reason="statsmodels is not installed")
    assert fleiss_kappa(counts) == pytest.approx(statsmodels.fleiss_kappa(np.array(counts), method="fleiss"))
    assert fleiss_kappa(FLEISS_EXAMPLE) == pytest.approx(statsmodels.fleiss_kappa(np.array(FLEISS_EXAMPLE)))


def test_krippendorff_alpha_matches_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff", reason="pip install -r requirements-dev.txt")
    rng = np.random.default_rng(15)
    truth = rng.integers(0, 2, 40)
    ratings = np.array([np.where(rng.random(40) < 0.8, truth, 1 - truth) for _ in range(4)], dtype=float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    for data in (ratings, KRIPPENDORFF_EXAMPLE):
        assert krippendorff_alpha(data) == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12)


def test_multi_annotator_agreement_over_the_store(tmp_path, run_labels, retrieved):
    ada = simulated_person(run_labels, retrieved)
    gold = method_values(run_labels, "gold")
    bob = {item: int(gold[item]) for item in retrieved[:20]}
    cy = {item: int(method_values(run_labels, "contains_answer")[item]) for item in retrieved[5:25]}
    store = saved_store(tmp_path, ada)
    saved_store(tmp_path, bob, annotator="Bob")
    saved_store(tmp_path, cy, annotator="Cy")
    store.save_label(RUN, PassageItem(*retrieved[6]), UNSURE, "Cy")  # Cy's unsure: not a rating
    result = multi_annotator_agreement(latest_labels(store.labels(RUN), "passage"))
    everyone = [i for i in retrieved[5:20] if i != retrieved[6]]
    assert result.annotators == 3 and result.fleiss_items == len(everyone) == 14
    counts = [[sum(p[i] == 0 for p in (ada, bob, cy)), sum(p[i] == 1 for p in (ada, bob, cy))] for i in everyone]
    assert result.fleiss == pytest.approx(fleiss_kappa(counts))
    rows = [[p.get(i, np.nan) if not (p is cy and i == retrieved[6]) else np.nan for i in retrieved]
            for p in (ada, bob, cy)]
    assert result.alpha_items == 25  # passages 0-24 have Ada plus Bob or Cy
    assert result.alpha == pytest.approx(krippendorff_alpha(rows))
