"""Re-scoring an attributed-answer run with another checker, without generating again (issue 17;
``rageval.attribution.rescore``), on the 4-query HAGRID run of ``tests/attribution_fixtures.py`` (fake generator,
word-containment NLI, real HAGRID gold answers).

Rescoring with the checker the run was built with must give back every stored score: that is what lets the shipped
run be re-scored with the new checker instead of generated again.
"""

from __future__ import annotations

import shutil
import sqlite3

import pandas as pd
import pytest

from rageval.attribution.rescore import rescore_attribution_run, rescore_target
from rageval.data import HAGRID_FILE, read_hagrid
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR, RUNS_DIR
from rageval.store.attribution import AttributionReader
from tests.attribution_fixtures import ContainmentNli, build_hagrid_run

KEPT_TABLES = {  # table: its key columns (rows compared in key order, every column)
    "queries": ["query_id"], "input_passages": ["scenario", "query_id", "number"],
    "answers": ["scenario", "query_id", "answer_id"], "retrieval_rankings": ["system", "query_id", "rank"],
    "retrieval_measures": ["system", "query_id", "measure"], "subqueries": ["query_id", "position"]}
STATEMENT_KEY = ["scenario", "query_id", "answer_id", "statement"]


@pytest.fixture(scope="module")
def hagrid():
    return read_hagrid(DATA_DIR / HAGRID_FILE)


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus, hagrid):
    """The 4-query run, scored at build time by the containment checker."""
    path, _, _ = build_hagrid_run(tmp_path_factory.mktemp("rescore"), corpus, hagrid)
    return path


def rows(path, table: str, key: list[str], columns: list[str] | None = None) -> pd.DataFrame:
    with AttributionReader(path) as reader:
        frame = reader.frame(table)
    return frame.sort_values(key, ignore_index=True)[columns or list(frame.columns)]


@pytest.mark.model
def test_the_same_checker_gives_back_every_stored_score(built, tmp_path, corpus, hagrid):
    out = rescore_attribution_run(built, ContainmentNli(), tmp_path / "same.sqlite", corpus=corpus, hagrid=hagrid,
                                  command="rageval attribution --rescore a.sqlite", log=lambda message: None)
    metric_key = ["scenario", "query_id", "answer_id", "metric"]
    before, after = rows(built, "answer_metrics", metric_key), rows(out, "answer_metrics", metric_key)
    assert len(before) > 10_000  # every metric of 24 generated and 1,318 gold answers
    assert before[metric_key].equals(after[metric_key])
    assert after.value.to_numpy() == pytest.approx(before.value.to_numpy(), abs=1e-9)
    columns = [*STATEMENT_KEY, "supported", "alce_recall"]
    assert rows(built, "statements", STATEMENT_KEY, columns).equals(rows(out, "statements", STATEMENT_KEY, columns))
    cell_key = [*STATEMENT_KEY, "number"]
    assert rows(out, "entailment", cell_key).probability.to_numpy() == pytest.approx(
        rows(built, "entailment", cell_key).probability.to_numpy(), abs=1e-9)
    agreement_before, agreement_after = rows(built, "agreement", ["level", "score"]), rows(out, "agreement",
                                                                                           ["level", "score"])
    assert agreement_before.drop(columns=["pearson", "spearman"]).equals(
        agreement_after.drop(columns=["pearson", "spearman"]))
    assert agreement_after[["pearson", "spearman"]].to_numpy() == pytest.approx(
        agreement_before[["pearson", "spearman"]].to_numpy(), abs=1e-9, nan_ok=True)
    with AttributionReader(built) as old, AttributionReader(out) as new:
        settings = new.settings()
        rescored = settings.pop("rescored")
        assert settings == old.settings()  # command, plan, nli and every other setting as built
        assert new.scenarios() == old.scenarios()  # the file's answer order
    assert rescored["previous_nli"] == "test:containment" and rescored["previous_nli_threshold"] == 0.5
    assert rescored["command"] == "rageval attribution --rescore a.sqlite" and rescored["seconds"] >= 0
    assert "reranker" in rescored["kept"] and rescored["date"].endswith("Z")
    # results.md says so, under the run's line; a run scored by its build says nothing of it.
    from rageval.attribution.results_section import attribution_sections

    section = "\n".join(attribution_sections(out))
    assert "Re-scored by `rageval attribution --rescore a.sqlite`" in section
    assert "with checker `test:containment` (supported at p ≥ 0.500; the build used `test:containment`)" in section
    assert "Re-scored" not in "\n".join(attribution_sections(built))


class HalfContainment(ContainmentNli):
    """Another checker: 0.9 x the containment checker's probability, deciding at 0.3 (so a statement the containment
    checker gave 0.34-0.5 is now supported)."""

    model_id = "test:half-containment@0.3"
    threshold = 0.3

    def entailment_probabilities(self, pairs):
        return [score * 0.9 for score in super().entailment_probabilities(pairs)]


@pytest.mark.model
def test_another_checker_rescores_and_keeps_answers_retrieval_and_subqueries(built, tmp_path, corpus, hagrid):
    # The run as a file built before the ALCE fix stores it: hagrid:2629's gold answer 1 cites [1] (supported) and
    # [2] (its query has one quote); the old precision counted [2] in the denominator (1/2).
    old = tmp_path / "old.sqlite"
    shutil.copy(built, old)
    answer = ("gold-answer", "hagrid:2629", "1")
    with sqlite3.connect(old) as connection:
        for metric, value in (("citations", 2.0), ("alce_precision", 0.5)):
            connection.execute("UPDATE answer_metrics SET value = ? WHERE scenario = ? AND query_id = ? AND "
                               "answer_id = ? AND metric = ?", (value, *answer, metric))
    out = rescore_attribution_run(old, HalfContainment(), tmp_path / "new.sqlite", corpus=corpus, hagrid=hagrid,
                                  log=lambda message: None)
    for table, key in KEPT_TABLES.items():
        assert rows(old, table, key).equals(rows(out, table, key)), table
    text_columns = [*STATEMENT_KEY, "text", "raw", "citations", "human_attributable"]
    assert rows(old, "statements", STATEMENT_KEY, text_columns).equals(
        rows(out, "statements", STATEMENT_KEY, text_columns))
    with AttributionReader(out) as reader:
        settings = reader.settings()
        assert (settings["nli"], settings["nli_threshold"]) == ("test:half-containment@0.3", 0.3)
        assert settings["rescored"]["previous_nli"] == "test:containment"
        means = reader.metric_means().set_index(["scenario", "metric"])["value"]
        metrics = reader.frame("answer_metrics", "scenario = ? AND query_id = ? AND answer_id = ?", answer) \
            .set_index("metric")["value"]
        statements = reader.frame("statements", "scenario = ? AND query_id = ? AND answer_id = ?", answer)
    # A quote-copying RTG-gold answer is entailed at 0.9 x 1.0 >= 0.3: still supported.
    assert means[("RTG-gold", "autoais_cit")] == pytest.approx(1.0)
    with AttributionReader(old) as reader:
        old_cells = reader.frame("entailment").sort_values(["scenario", "query_id", "answer_id", "statement",
                                                            "number"], ignore_index=True)
    new_cells = rows(out, "entailment", [*STATEMENT_KEY, "number"])
    assert new_cells.probability.to_numpy() == pytest.approx(
        0.9 * old_cells.probability.to_numpy(), abs=1e-9)
    # ALCE's rule: the statement citing only [2] adds nothing to the denominator; [1] alone counts.
    assert statements.citations.tolist() == ["[1]", "[2]"]
    assert metrics["citations"] == 1.0 and metrics["invalid_citations"] == 1.0
    supported_first = statements.alce_recall.iloc[0]
    assert statements.alce_recall.iloc[1] == 0
    assert metrics["alce_precision"] == supported_first  # 1/1 when [1] supports its statement, else 0/1


@pytest.mark.model
def test_the_command_rescores_a_copy_and_refuses_to_overwrite_a_shipped_run(built, tmp_path, capsys):
    from rageval.cli import main
    from tests.attribution.test_checkers import _bert_classifier, _save

    run = tmp_path / "mine.sqlite"
    shutil.copy(built, run)
    checker = _save(tmp_path / "nli3", _bert_classifier({0: "entailment", 1: "neutral", 2: "contradiction"}))
    spec = f"hf:{checker}"
    assert main(["attribution", "--rescore", str(run), "--checker", spec, "--threshold", "0.4",
                 "--checker-device", "cpu"]) == 0
    with AttributionReader(run) as reader:  # replaced in place
        settings = reader.settings()
        probabilities = reader.frame("entailment").probability
    assert (settings["nli"], settings["nli_threshold"]) == (f"{spec}@0.4", 0.4)
    assert settings["rescored"]["command"] == f"rageval attribution --rescore {run} --checker {spec} --threshold 0.4"
    assert probabilities.between(0, 1).all() and probabilities.nunique() > 1  # the tiny model's, not containment's
    assert "gold-answer" in capsys.readouterr().out

    shipped = RUNS_DIR / "attribution" / "hagrid-gemma3_270m.sqlite"
    assert main(["attribution", "--rescore", str(shipped)]) == 2
    assert "data/ is read-only" in capsys.readouterr().err
    assert rescore_target(shipped, shipped) == shipped  # named explicitly: allowed, to rebuild it


@pytest.mark.model
def test_files_that_are_not_hagrid_runs_are_one_error_naming_them(built, tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database")
    lacking = tmp_path / "lacking.sqlite"
    shutil.copy(built, lacking)
    with sqlite3.connect(lacking) as connection:
        connection.execute("DROP TABLE subqueries")
    user = tmp_path / "user.sqlite"
    shutil.copy(built, user)
    with sqlite3.connect(user) as connection:
        connection.execute("UPDATE meta SET value = json_set(value, '$.dataset', 'answers.jsonl', '$.source', "
                           "'user-answers') WHERE key = 'settings'")
    damaged = tmp_path / "damaged.sqlite"
    shutil.copy(built, damaged)
    with sqlite3.connect(damaged) as connection:
        connection.execute("UPDATE meta SET value = json_set(value, '$.rescored', 'yesterday') WHERE key = 'settings'")
    for path, expected in ((text, "notes.sqlite"), (lacking, "lacking.sqlite"), (user, "user-answers"),
                           (damaged, "setting 'rescored' is not an object")):
        with pytest.raises(RagevalError, match=str(path.name)) as error:
            rescore_attribution_run(path, ContainmentNli(), tmp_path / "out.sqlite", log=lambda message: None)
        assert expected in str(error.value)
    assert not (tmp_path / "out.sqlite").exists()


def test_the_citations_caption_names_the_build_checker_of_a_rescored_run():
    from ui.render_citations import provenance

    settings = {"generator": "g", "nli": "new", "rescored": {"date": "2026-11-26T10:37:11Z", "previous_nli": "old"}}
    caption = provenance(settings, 3)
    assert caption.index("NLI new") < caption.index("re\\-scored 2026\\-11\\-26 \\(built with NLI old\\)")
    assert "re\\-scored" not in provenance({"nli": "new"})
