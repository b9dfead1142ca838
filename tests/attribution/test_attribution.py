"""Attributed answers (issue 5): citation metrics, scoring, human agreement and the HAGRID run, on real HAGRID data.

The NLI model here is a transparent stand-in (word containment) so that every expected value can be worked out by
hand; the trained model is tested in tests/attribution/test_nli.py.
"""

from __future__ import annotations

import math

import pytest

from rageval.attribution.metrics import (
    InputPassage,
    citation_overlap,
    citation_scores,
    correctness,
    format_passage,
    required_premises,
)
from rageval.attribution.scoring import AnswerRecord, StatementRecord, agreement, human_agreement, score_answers
from rageval.data import HAGRID_FILE, read_hagrid
from rageval.paths import DATA_DIR
from tests.attribution_fixtures import ContainmentNli, build_hagrid_run


@pytest.fixture(scope="module")
def hagrid():
    return read_hagrid(DATA_DIR / HAGRID_FILE)


def passages_of(*texts: str) -> dict[int, InputPassage]:
    return {n: InputPassage(n, f"p{n}", "", text) for n, text in enumerate(texts, start=1)}


# ------------------------------------------------------------------------------------------ metrics by hand


def test_citation_scores_worked_example():
    passages = passages_of("a", "b", "c")
    # Statement 0 cites 1 and 2; only 1 entails it and {1, 2} jointly does: 2 can go -> 1 of 2 citations precise.
    # Statement 1 cites 3, which does not entail it, although passage 2 does (AutoAIS_pssg counts that).
    # Statement 2 cites nothing. Statement 3 cites [7], no such passage.
    matrix = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]
    joint = {(0, (1, 2)): 1}
    scores = citation_scores([(1, 2), (3,), (), (7,)], passages, matrix, joint.__getitem__)
    assert scores.autoais_cit == pytest.approx(1 / 4)
    assert scores.autoais_pssg == pytest.approx(4 / 4)
    assert scores.alce_recall == pytest.approx(1 / 4)
    # Precise: citation 1 of statement 0, of 2 + 1 counted citations ([7] is out of range: ALCE counts none of it).
    assert scores.alce_precision == pytest.approx(1 / 3)
    assert (scores.statements, scores.citations, scores.invalid_citations, scores.uncited_statements) == (4, 3, 1, 1)
    assert scores.statement_supported == (1, 0, 0, 0)


def test_alce_precision_keeps_a_citation_needed_for_joint_support():
    passages = passages_of("a", "b", "c")
    # Neither passage alone entails the statement but {1, 2} does: both citations are needed, both precise.
    scores = citation_scores([(1, 2)], passages, [[0, 0, 0]], {(0, (1, 2)): 1}.__getitem__)
    assert (scores.alce_recall, scores.alce_precision, scores.autoais_cit) == (1.0, 1.0, 0.0)
    # Three citations, passage 3 superfluous: {1, 2} still entails without it.
    needed = required_premises([(1, 2, 3)], passages)
    assert needed == {(0, (1, 2, 3)), (0, (2, 3)), (0, (1, 3)), (0, (1, 2))}
    decisions = {(0, (1, 2, 3)): 1, (0, (2, 3)): 0, (0, (1, 3)): 0, (0, (1, 2)): 1}
    scores = citation_scores([(1, 2, 3)], passages, [[0, 0, 0]], decisions.__getitem__)
    assert scores.alce_precision == pytest.approx(2 / 3)


# ---------------------------------------------------------------- ALCE's eval.py, case by case (compute_autoais)
# ALCE (princeton-nlp/ALCE, eval.py, compute_autoais with citation=True, at_most_citations=3): a statement with no
# citation, or with any citation past the passage list, gets recall 0 and adds nothing to total_citations; otherwise
# its citations are capped at 3 and all counted; precision = precise / total_citations (0 when none is counted).


def test_alce_statement_without_citations_adds_nothing_to_precision():
    # s0 cites nothing: recall 0, no citation counted. s1 cites [1], which entails it: recall 1, precise 1 of 1.
    # Recall = (0 + 1) / 2 = 0.5; precision = 1 / 1 = 1.0.
    scores = citation_scores([(), (1,)], passages_of("a"), [[1], [1]], {}.__getitem__)
    assert (scores.alce_recall, scores.alce_precision, scores.citations) == (0.5, 1.0, 1)


def test_alce_out_of_range_citation_is_left_out_of_the_precision_denominator():
    # s0 cites [1] (entailed): precise 1 of 1. s1 cites [9], past the one passage: recall 0, counted 0 citations.
    # Precision = 1 / 1 = 1.0 (it was 1 / 2 = 0.5 when [9] was counted); recall = 1 / 2.
    scores = citation_scores([(1,), (9,)], passages_of("a"), [[1], [1]], {}.__getitem__)
    assert (scores.alce_precision, scores.alce_recall, scores.citations, scores.invalid_citations) == \
        (1.0, 0.5, 1, 1)
    # One out-of-range citation rejects the whole statement, its valid citation too (ALCE checks every citation
    # before capping): [1][9] -> recall 0, 0 citations counted, so precision 0 / 0 -> 0.0; AutoAIS_cit (Eq. 1) still
    # reads the valid [1]: 1.
    scores = citation_scores([(1, 9)], passages_of("a"), [[1]], {}.__getitem__)
    assert (scores.alce_recall, scores.alce_precision, scores.citations, scores.autoais_cit) == (0, 0.0, 0, 1.0)


def test_alce_counts_at_most_three_citations():
    # [1][2][3][4]: capped to [1][2][3] (passage 4, which entails it, is never read). Joint {1,2,3} entails: recall 1.
    # Leave-one-out: c=1 entails alone -> precise; c=2 fails alone and {1,3} entails -> not precise; c=3 fails
    # alone and {1,2} entails -> not precise. Precision = 1 / 3 (3 citations counted, not 4).
    passages = passages_of("a", "b", "c", "d")
    decisions = {(0, (1, 2, 3)): 1, (0, (2, 3)): 0, (0, (1, 3)): 1, (0, (1, 2)): 1}
    scores = citation_scores([(1, 2, 3, 4)], passages, [[1, 0, 0, 1]], decisions.__getitem__)
    assert (scores.alce_recall, scores.alce_precision, scores.citations) == (1, pytest.approx(1 / 3), 3)
    # A fifth citation past the list still rejects the statement, even beyond the cap: recall 0, nothing counted.
    scores = citation_scores([(1, 2, 3, 9)], passages, [[1, 0, 0, 1]], decisions.__getitem__)
    assert (scores.alce_recall, scores.alce_precision, scores.citations) == (0, 0.0, 0)


@pytest.mark.parametrize(("row", "joint", "precision"), [
    # Both entail alone: c=1 and c=2 precise (condition A) -> 2 / 2.
    ([1, 1], 1, 1.0),
    # Only 1 entails alone: c=1 precise; c=2 fails alone and {1} entails -> not precise -> 1 / 2.
    ([1, 0], 1, 0.5),
    # Neither alone, the pair jointly: c=1 fails alone, {2} fails -> precise; c=2 likewise -> 2 / 2.
    ([0, 0], 1, 1.0),
    # The pair does not entail: recall 0, no citation precise, both counted -> 0 / 2.
    ([1, 1], 0, 0.0),
])
def test_alce_leave_one_out_with_two_citations(row, joint, precision):
    scores = citation_scores([(1, 2)], passages_of("a", "b"), [row], {(0, (1, 2)): joint}.__getitem__)
    assert (scores.alce_precision, scores.alce_recall, scores.citations) == (precision, joint, 2)


@pytest.mark.parametrize(("row", "subsets", "precise"), [
    # Only {1,2} entails without the third: c=1 ({2,3}: 0) precise, c=2 ({1,3}: 0) precise, c=3 ({1,2}: 1) not.
    ([0, 0, 0], {(2, 3): 0, (1, 3): 0, (1, 2): 1}, 2),
    # Passage 2 entails alone: c=2 precise (A); c=1 fails alone and {2,3} entails -> not; c=3 likewise ({1,2}) -> 1.
    ([0, 1, 0], {(2, 3): 1, (1, 3): 0, (1, 2): 1}, 1),
    # No proper subset entails: every citation is needed -> 3 precise.
    ([0, 0, 0], {(2, 3): 0, (1, 3): 0, (1, 2): 0}, 3),
])
def test_alce_leave_one_out_with_three_citations(row, subsets, precise):
    decisions = {(0, (1, 2, 3)): 1, **{(0, key): value for key, value in subsets.items()}}
    scores = citation_scores([(1, 2, 3)], passages_of("a", "b", "c"), [row], decisions.__getitem__)
    assert scores.alce_precision == pytest.approx(precise / 3) and scores.citations == 3


def test_alce_caps_citations_at_three():
    passages = passages_of("a", "b", "c", "d")
    assert max(len(key[1]) for key in required_premises([(1, 2, 3, 4)], passages)) == 3


def test_empty_answer_and_no_passages_score_zero():
    scores = citation_scores([], passages_of("a"), [], {}.__getitem__)
    assert (scores.autoais_cit, scores.alce_recall, scores.alce_precision, scores.statements) == (0, 0, 0, 0)
    scores = citation_scores([(1,)], {}, [[]], {}.__getitem__)
    assert (scores.autoais_cit, scores.autoais_pssg, scores.invalid_citations) == (0, 0, 1)


def test_citation_overlap():
    assert citation_overlap(["a", "b"], ["b", "c", "d"]) == (0.5, pytest.approx(1 / 3))
    assert citation_overlap([], ["a"]) == (0.0, 0.0)


def test_alce_premise_format():
    assert format_passage("Penicillin", "It was found.") == "Title: Penicillin\nIt was found."
    assert format_passage("", "It was found.") == "It was found."


@pytest.mark.model
def test_correctness_best_over_references():
    from rageval.bertscore import BertScorer

    scorer = BertScorer()
    exact = correctness("The cat sat on the mat.", ["A dog barked.", "The cat sat on the mat."], scorer)
    assert exact["bleu"] == pytest.approx(100.0)
    assert exact["rougeL_f"] == pytest.approx(1.0)
    assert exact["bertscore_f"] == pytest.approx(1.0, abs=1e-5)
    other = correctness("A bird flew away.", ["The cat sat on the mat."], scorer)
    assert other["bleu"] < 10 and other["rougeL_f"] < 0.3 and other["bertscore_f"] < exact["bertscore_f"]
    empty = correctness("", ["The cat sat."], scorer)
    assert (empty["bleu"], empty["rougeL_f"], empty["bertscore_f"]) == (0.0, 0.0, 0.0)


def test_agreement_matches_scipy_and_is_nan_when_constant():
    from scipy.stats import pearsonr, spearmanr

    human, model = [1, 0, 1, 1, 0, 0], [0.9, 0.2, 0.6, 0.4, 0.1, 0.7]
    result = agreement("answer", "x", human, model)
    assert result.pearson == pytest.approx(pearsonr(model, human).statistic)
    assert result.spearman == pytest.approx(spearmanr(model, human).statistic)
    assert result.accuracy == pytest.approx(4 / 6)
    assert math.isnan(agreement("answer", "x", [1, 1], [0.2, 0.9]).pearson)


# ------------------------------------------------------------------------------------------ real HAGRID answers


def test_gold_answers_keep_every_annotated_sentence(hagrid):
    from rageval.attribution.experiment import gold_answer_records

    records = [a for r in hagrid for a in gold_answer_records(r, {})]
    assert len(records) == sum(len(r.answers) for r in hagrid) == 1318
    sentences = [s for r in hagrid for a in r.answers for s in a.sentences]
    assert sum(len(a.statements) for a in records) == len(sentences) == 2388  # the data README's count
    labelled = [s for a in records for s in a.statements if s.human_attributable is not None]
    assert len(labelled) == sum(s.attributable is not None for s in sentences) > 2000
    cited = [n for a in records for s in a.statements for n in s.citations]
    assert cited and all(isinstance(n, int) for n in cited)


def test_scoring_real_gold_answers_with_missing_quotes_and_no_citations(hagrid):
    from rageval.attribution.experiment import gold_answer_records

    records = [a for r in hagrid[:120] for a in gold_answer_records(r, {})]
    nli = ContainmentNli()
    scored = score_answers(records, nli)
    assert len(scored) == len(records)
    for item in scored:
        assert len(item.probabilities) == len(item.answer.statements)
        assert all(len(row) == len(item.answer.passages) for row in item.probabilities)
        assert "overlap_p" not in item.metrics  # against themselves: not reported (the paper's "-")
        for name in ("autoais_cit", "autoais_pssg", "alce_recall", "alce_precision"):
            assert 0.0 <= item.metrics[name] <= 1.0
        assert item.metrics["autoais_cit"] <= item.metrics["autoais_pssg"] + 1e-9
    # Some real answers cite a quote number their query lacks, or cite nothing: both count and score 0 there.
    invalid = [s for s in scored if s.citations.invalid_citations]
    uncited = [s for s in scored if s.citations.uncited_statements]
    assert uncited, "expected real HAGRID answers with an uncited sentence in the first 120 queries"
    for item in invalid + uncited:
        for index, statement in enumerate(item.answer.statements):
            if not any(n in item.answer.passages for n in statement.citations):
                assert item.citations.statement_supported[index] == 0
    # Gold sentences mostly copy their quotes: word containment finds support for most of them.
    assert sum(s.metrics["autoais_cit"] for s in scored) / len(scored) > 0.4
    # Duplicated (premise, statement) pairs are scored once.
    assert nli.pairs_seen <= sum(len(s.answer.statements) * len(s.answer.passages) for s in scored) + 10 * len(scored)


def test_empty_answer_is_scored_as_zero():
    record = AnswerRecord("RTG-gold", "q", "0", "", (), passages_of("text"), ("p1",), ("a reference",))
    [scored] = score_answers([record], ContainmentNli())
    assert scored.metrics["statements"] == 0 and scored.metrics["autoais_cit"] == 0.0
    assert scored.probabilities == []


def test_human_agreement_on_real_labels(hagrid):
    from rageval.attribution.experiment import gold_answer_records

    records = [a for r in hagrid[:200] for a in gold_answer_records(r, {})]
    rows = {(a.level, a.score): a for a in human_agreement(score_answers(records, ContainmentNli()))}
    answer_level = rows[("answer", "autoais_cit")]
    assert answer_level.n == sum(1 for a in records if a.human_attributable is not None and a.statements)
    sentence_level = rows[("sentence", "nli_verdict_cited")]
    assert sentence_level.n == sum(1 for a in records for s in a.statements if s.human_attributable is not None)
    assert -1.0 <= answer_level.pearson <= 1.0 and 0.0 <= sentence_level.accuracy <= 1.0


# ------------------------------------------------------------------------------------------ GTR and usability


def test_gtr_cites_one_retrieved_passage_per_statement(passages):
    from rageval.attribution.experiment import attribute_after_generation
    from rageval.attribution.statements import sentence_tokenizer

    ids = sorted(passages)[:2]
    calls = []

    def retrieve_one(statement: str) -> str:
        calls.append(statement)
        return ids[0] if "first" in statement else ids[1]

    text, statements, inputs = attribute_after_generation(
        "The first claim is here. A second claim follows. The first again.", sentence_tokenizer(), retrieve_one,
        passages)
    assert calls == ["The first claim is here.", "A second claim follows.", "The first again."]
    assert [s.citations for s in statements] == [(1,), (2,), (1,)]
    assert text == "The first claim is here. [1] A second claim follows. [2] The first again. [1]"
    assert [inputs[n].passage_id for n in (1, 2)] == ids


def test_citation_usability_counts():
    from rageval.attribution.experiment import citation_usability

    good = AnswerRecord("RTG", "q1", "0", "x", (StatementRecord("x", (1,), "x [1]"),), passages_of("a"))
    bad = AnswerRecord("RTG", "q2", "0", "y", (StatementRecord("y", (5,), "y [5]"),
                                               StatementRecord("z", (), "z")), passages_of("a"))
    empty = AnswerRecord("RTG", "q3", "0", "", (), passages_of("a"))
    usability = citation_usability([good, bad, empty])
    assert usability == {"answers": 3, "non_empty_answers": 2, "answers_with_valid_citation": 1, "statements": 3,
                         "cited_statements": 2, "citations": 2, "invalid_citations": 1}


# ------------------------------------------------------------------------------------------ the whole run


@pytest.fixture(scope="module")
def hagrid_run(tmp_path_factory, corpus, hagrid):
    """A 4-query HAGRID run with a fake generator, the containment NLI and BM25 over ~400 real passages."""
    return build_hagrid_run(tmp_path_factory.mktemp("hagrid-run"), corpus, hagrid)


@pytest.mark.model
def test_hagrid_run_end_to_end(hagrid_run):
    from rageval.attribution.experiment import GENERATED_SCENARIOS, GOLD_SCENARIO
    from rageval.store import list_runs
    from rageval.store.attribution import AttributionReader

    path, generator, records = hagrid_run
    assert list_runs(path.parent) == []  # not an eRAG run
    with AttributionReader(path) as reader:
        assert reader.scenarios() == [*GENERATED_SCENARIOS, GOLD_SCENARIO]
        answers = reader.frame("answers")
        assert (answers[answers.scenario != GOLD_SCENARIO].groupby("scenario").size() == 4).all()
        assert (answers.scenario == GOLD_SCENARIO).sum() == 1318
        means = reader.metric_means().set_index(["scenario", "metric"])["value"]
        # RTG-gold answers copy their first quote and cite it: every statement is supported by its citation.
        assert means[("RTG-gold", "autoais_cit")] == pytest.approx(1.0)
        assert means[("RTG-gold", "overlap_p")] > 0
        assert ("G", "autoais_cit") not in means.index and means[("G", "rougeL_f")] >= 0
        inputs = reader.frame("input_passages", "scenario = ?", ("RTG-vanilla",))
        assert (inputs.groupby("query_id").size() == 2).all()
        # RTG-vanilla reads BM25's top 2, RTG-query-gen CombSUM's (the plan's defaults), numbered in rank order.
        rankings = reader.frame("retrieval_rankings", "rank <= 2")
        for scenario, system in (("RTG-vanilla", "bm25"), ("RTG-query-gen", "combsum")):
            fed = reader.frame("input_passages", "scenario = ?", (scenario,)).sort_values(["query_id", "number"])
            top = rankings[rankings.system == system].sort_values(["query_id", "rank"])
            assert fed.passage_id.tolist() == top.passage_id.tolist()
        # The stored matrix has one cell per statement and input passage.
        first = answers[answers.scenario == "RTG-gold"].iloc[0]
        matrix = reader.entailment_matrix("RTG-gold", first.query_id, first.answer_id)
        quotes = len(records[0].quotes)
        assert matrix.shape[1] == quotes
        measures = reader.frame("retrieval_measures")
        systems = set(measures.system)
        assert {"bm25", "bm25+rerank", "monot5-run", "sort", "combsum", "combmnz", "pm2", "rerank", "MAX"} <= systems
        by_system = measures[measures.measure == "R@10"].groupby("system")["value"].mean()
        assert by_system["MAX"] >= max(by_system["bm25"], 0)
        agreement_rows = reader.frame("agreement")
        assert set(agreement_rows.level) == {"answer", "sentence"}
        settings = reader.settings()
        assert settings["usability"]["RTG-gold"]["answers_with_valid_citation"] == 4
        assert settings["nli"] == "test:containment"
    # A second build asks the generator for the same prompts: a cached generator would make no new call.
    assert generator.prompts_seen == 4 * 6  # sub-queries, G, and 4 RTG scenarios


@pytest.mark.model
def test_results_section_puts_our_tables_next_to_the_papers(hagrid_run, tmp_path):
    import json

    from rageval.attribution.results_section import attribution_sections

    path, _, _ = hagrid_run
    report = tmp_path / "nli.json"
    def evaluation(checker, data, protocol, bacc):
        return {"checker": checker, "data": data, "split": "test", "protocol": protocol, "n": 10, "positives": 4,
                "threshold": 0.5, "accuracy": 0.8, "balanced_accuracy": bacc,
                "balanced_accuracy_interval": [bacc - 0.1, bacc + 0.1], "f1": 0.6, "roc_auc": 0.9,
                "roc_auc_interval": [0.8, 0.95]}

    checkers = {"nli-new": {"threshold": 0.31, "trained_on": ["snli", "drop"], "description": "shipped recipe"},
                "nli-old": {"threshold": 0.5, "trained_on": ["snli"], "description": "issue-5 recipe"},
                "nli-loso": {"threshold": 0.4, "trained_on": ["snli"],
                             "description": "shipped recipe without drop, at most 800 pairs a source"}}
    report.write_text(json.dumps({"format": "rageval-nli-report", "version": 2, "checkers": checkers, "evaluations": [
        evaluation("nli-new", "drop", "in-distribution", 0.75), evaluation("nli-old", "drop", "zero-shot", 0.55),
        evaluation("nli-loso", "drop", "leave-one-source-out", 0.65)]}))
    text = "\n".join(attribution_sections(path, report))
    for expected in ("| drop | 10 | 75.0 [65.0, 85.0] (trained on) | 55.0 [45.0, 65.0] | 0.900 | 0.900 |",
                     "| drop | `nli-loso` | 10 | 65.0 [55.0, 75.0] | 0.900 |", "threshold 0.310",
                     "| RTG-gold (n=4) |", "| gold-answer (n=1318) |",
                     "| RTG-gold | 28.22 |", "query-gen: MAX", "| RTG-vanilla | `bm25` |",
                     "| RTG-query-gen | `combsum` |", "| answer | autoais_cit |", "test:containment"):
        assert expected in text, expected
    missing = "\n".join(attribution_sections(tmp_path / "none.sqlite"))
    assert "build it with `rageval attribution`" in missing


def test_zero_based_quote_records_are_cited_from_one(hagrid):
    from rageval.attribution.experiment import gold_answer_records, quote_numbers

    zero_based = [r for r in hagrid if min(q.idx for q in r.quotes) == 0]
    assert len(zero_based) == 91  # file lines 626-716 of the shipped HAGRID dev file
    for record in zero_based:
        assert sorted(quote_numbers(record)) == [q.idx + 1 for q in sorted(record.quotes, key=lambda q: q.idx)]
    answers = [a for r in hagrid for a in gold_answer_records(r, {})]
    invalid = [(a.query_id, n) for a in answers for s in a.statements for n in s.citations if n not in a.passages]
    # After the offset only one real citation names a quote its query lacks (query 2629 cites [2] of one quote).
    assert invalid == [("hagrid:2629", 2)]
    one_based = next(r for r in hagrid if r.query_id == "3120")
    assert sorted(quote_numbers(one_based)) == [1, 2]
