"""rageval.measures: cross-checked against pytrec_eval (trec_eval 9) and hand-computed edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rageval.measures import (
    AP,
    Measure,
    MeasureDefinition,
    aggregate_measures,
    build_ranked_labels,
    compute_measures,
    compute_measures_from_run,
    get_definition,
    nDCG,
    parse_measure,
    rank_by_score,
    register_measure,
    registered_measures,
)

# ----------------------------------------------------------------------------------------------
# Cross-check against pytrec_eval on random runs
# ----------------------------------------------------------------------------------------------

CUTOFFS = (1, 5, 20)  # rankings hold at most 15 passages, so @20 is past the end of every list


def trec_name(measure: Measure) -> str | None:
    """The pytrec_eval output key equal to ``measure``; None for RR@k (checked on a truncated run)."""
    k = measure.cutoff
    return {
        ("P", True): f"P_{k}",
        ("P", False): "set_P",
        ("R", True): f"recall_{k}",
        ("R", False): "set_recall",
        ("AP", True): f"map_cut_{k}",
        ("AP", False): "map",
        ("nDCG", True): f"ndcg_cut_{k}",
        ("nDCG", False): "ndcg",
        ("Hit", True): f"success_{k}",
        ("RR", False): "recip_rank",
        ("Rprec", False): "Rprec",
    }.get((measure.name, k is not None))


MEASURES = [
    *(f"{name}@{k}" for name in ("P", "R", "AP", "nDCG", "Hit", "RR") for k in CUTOFFS),
    "P", "R", "AP", "nDCG", "RR", "Rprec",
]
_CUTOFF_LIST = ",".join(map(str, CUTOFFS))
TREC_MEASURES = {
    *(f"{name}.{_CUTOFF_LIST}" for name in ("P", "recall", "map_cut", "ndcg_cut", "success")),
    "set_P", "set_recall", "map", "ndcg", "recip_rank", "Rprec",
}


def random_case(seed: int, graded: bool):
    """A run with tied scores, empty and missing rankings, queries without relevant passages.

    Scores are drawn from 4 values so most rankings have ties; labels are 0/1 or 0/1/2 integers
    (pytrec_eval only accepts integer relevance).
    """
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(30)]  # "d3" > "d20" as strings: the tie-break order is not numeric
    run, qrels = {}, {}
    for q in range(40):
        query_id = f"q{q}"
        n_retrieved = 0 if q % 10 == 0 else int(rng.integers(1, 16))
        retrieved = rng.choice(pool, n_retrieved, replace=False).tolist()
        run[query_id] = {doc: float(rng.integers(0, 4)) / 4 for doc in retrieved}
        judged = rng.choice(pool, int(rng.integers(1, 12)), replace=False).tolist()
        top_label = 3 if graded else 2
        labels = {doc: int(rng.integers(0, top_label)) for doc in judged}
        if q % 7 == 3:
            labels = dict.fromkeys(judged, 0)  # judged, but nothing relevant
        qrels[query_id] = labels
    del run["q5"]  # judged but not retrieved at all
    run["unjudged"] = {"d1": 1.0}  # retrieved but not judged: ignored by both sides
    return run, qrels


def trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order written independently of rank_by_score: score desc, then docno desc."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def reference_values(run, qrels, measure: Measure) -> dict[str, float]:
    """pytrec_eval's value of ``measure`` per query it returns."""
    if measure.name == "RR" and measure.cutoff is not None:
        run = {q: {doc: scores[doc] for doc in trec_order(scores)[: measure.cutoff]} for q, scores in run.items()}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
    key = "recip_rank" if measure.name == "RR" else trec_name(measure)
    return {query_id: values[key] for query_id, values in evaluated.items()}


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded012"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_measures_match_pytrec_eval(seed, graded):
    run, qrels = random_case(seed, graded)
    via_rankings = compute_measures(MEASURES, rank_by_score(run), qrels)
    via_run = compute_measures_from_run(MEASURES, run, qrels)
    pd.testing.assert_frame_equal(via_rankings, via_run)
    for name in MEASURES:
        measure = parse_measure(name)
        ours = via_rankings[via_rankings["measure"] == name].set_index("query_id")["value"]
        reference = reference_values(run, qrels, measure)
        # pytrec_eval drops a query missing from the run (q5 here; it also drops a query whose qrels
        # mapping is empty); ours keeps every judged query and scores it 0.0, as trec_eval -c does.
        assert set(reference) <= set(ours.index)
        assert set(ours.index) == set(qrels)
        for query_id, value in ours.items():
            expected = reference.get(query_id, 0.0)
            assert value == pytest.approx(expected, abs=1e-12), (name, query_id)


def test_rank_by_score_matches_trec_order_on_ties():
    run, _ = random_case(3, graded=False)
    assert rank_by_score(run) == {q: trec_order(scores) for q, scores in run.items()}


def test_rank_by_score_breaks_ties_by_id_descending_as_strings():
    # trec_eval: score desc, then strcmp(docno) desc, so "d9" comes before "d10".
    assert rank_by_score({"q": {"d10": 1.0, "a": 2.0, "d9": 1.0, "b": 0.5}}) == {"q": ["a", "d9", "d10", "b"]}
    assert rank_by_score({}) == {}
    assert rank_by_score({"q": {}}) == {"q": []}


# ----------------------------------------------------------------------------------------------
# Hand-computed values
# ----------------------------------------------------------------------------------------------

# Ranking a, b, c, d, e; relevant: b and d (and "z", never retrieved): R = 3.
RANKING = {"q": ["a", "b", "c", "d", "e"]}
QRELS = {"q": {"b": 1, "d": 1, "z": 1, "a": 0}}
HAND = {
    "P@1": 0.0,  # a is not relevant
    "P@4": 2 / 4,  # b, d in the top 4
    "P@10": 2 / 10,  # trec_eval divides by k even past the end of the list
    "P": 2 / 5,  # no cutoff: relevant retrieved / retrieved (set_P)
    "R@2": 1 / 3,  # b of {b, d, z}
    "R": 2 / 3,
    "AP@2": (1 / 2) / 3,  # precision 1/2 at b; divided by R = 3, not by the 1 relevant in the top 2
    "AP": (1 / 2 + 2 / 4) / 3,  # precisions at b (rank 2) and d (rank 4)
    "RR@1": 0.0,
    "RR@3": 1 / 2,  # first relevant at rank 2
    "Hit@1": 0.0,
    "Hit@2": 1.0,
    "Rprec": 1 / 3,  # top R = 3: a, b, c -> one relevant
    # DCG@4 = 1/log2(3) + 1/log2(5); ideal of the 3 relevant: 1 + 1/log2(3) + 1/log2(4)
    "nDCG@4": (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / 2),
    # @1: DCG = 0, nothing relevant at rank 1
    "nDCG@1": 0.0,
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_computed_values(name):
    values = compute_measures([name], RANKING, QRELS)
    assert values["value"].tolist() == [pytest.approx(HAND[name], abs=1e-15)]


def test_graded_ndcg_by_hand():
    # Gains 2 at rank 1 and 1 at rank 3, a judged 3 never retrieved.
    # DCG@3 = 2/log2(2) + 1/log2(4) = 2.5; ideal: 3, 2, 1 -> 3 + 2/log2(3) + 1/2.
    values = compute_measures(["nDCG@3"], {"q": ["x", "y", "w"]}, {"q": {"x": 2, "w": 1, "v": 3, "y": -1}})
    assert values["value"].item() == pytest.approx(2.5 / (3 + 2 / math.log2(3) + 0.5))


def test_empty_ranking_and_no_relevant_give_zero_for_every_measure():
    measures = ["P@5", "R@5", "AP@5", "RR@5", "nDCG@5", "Hit@5", "Rprec", "nDCG", "P"]
    rankings = {"empty": [], "no_relevant": ["a", "b"]}
    qrels = {"empty": {"a": 1}, "no_relevant": {"a": 0}, "missing": {"a": 1}, "unlabelled": {}}
    values = compute_measures(measures, rankings, qrels)
    assert set(values["query_id"]) == {"empty", "no_relevant", "missing", "unlabelled"}
    assert (values["value"] == 0.0).all()
    assert all(parse_measure(name).default == 0.0 for name in measures)


def test_no_query_retrieved_anything_gives_zero_as_trec_eval_does():
    """Every ranking empty (or none given): the label matrix has no column; RR's argmax once raised here."""
    measures = ["RR", "RR@5", "P@5", "AP", "nDCG@10", "Rprec", "R@5"]
    for rankings in ({}, {"q1": []}):
        values = compute_measures(measures, rankings, {"q1": {"d1": 1}})
        assert values["query_id"].tolist() == ["q1"] * len(measures)
        assert (values["value"] == 0.0).all(), rankings


def test_query_set_is_qrels_or_given_queries():
    rankings = {"q1": ["a"], "not_judged": ["a"]}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    assert compute_measures(["P@1"], rankings, qrels)["query_id"].tolist() == ["q1", "q2"]
    chosen = compute_measures(["P@1"], rankings, qrels, queries=["q2", "q1"])
    assert chosen["query_id"].tolist() == ["q2", "q1"] and chosen["value"].tolist() == [0.0, 1.0]


def test_long_format_and_aggregation():
    rankings = {"q1": ["a", "b"], "q2": ["b", "a"]}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    per_query = compute_measures(["RR@2", "P@1"], rankings, qrels)
    assert list(per_query.columns) == ["query_id", "measure", "value"]
    assert per_query["measure"].tolist() == ["RR@2", "RR@2", "P@1", "P@1"]
    assert per_query["value"].tolist() == [1.0, 0.5, 1.0, 0.0]  # a at rank 1 in q1, rank 2 in q2
    summary = aggregate_measures(per_query)
    assert summary.to_dict("records") == [
        {"measure": "RR@2", "value": 0.75, "n_queries": 2},  # MRR = (1 + 1/2) / 2
        {"measure": "P@1", "value": 0.5, "n_queries": 2},
    ]


def test_truncated_depth_gives_the_same_values_as_the_full_matrix():
    run, qrels = random_case(4, graded=True)
    rankings = rank_by_score(run)
    cut_only = compute_measures(["nDCG@5", "AP@5", "P@5"], rankings, qrels)
    with_full = compute_measures(["nDCG@5", "AP@5", "P@5", "Rprec"], rankings, qrels)
    pd.testing.assert_frame_equal(cut_only, with_full[with_full["measure"] != "Rprec"].reset_index(drop=True))


def test_inputs_are_not_mutated():
    rankings = {"q": ["a", "b"]}
    qrels = {"q": {"a": 1}}
    compute_measures(["P@1", "Rprec"], rankings, qrels)
    assert rankings == {"q": ["a", "b"]} and qrels == {"q": {"a": 1}}


# ----------------------------------------------------------------------------------------------
# Fractional (eRAG) labels
# ----------------------------------------------------------------------------------------------

FRACTIONAL_RANKING = {"q": ["a", "b", "c"]}
FRACTIONAL_QRELS = {"q": {"a": 0.5, "b": 0.0, "c": 0.25, "d": 1.0}}


def test_fractional_precision_is_the_mean_label_and_hit_the_max():
    values = compute_measures(["P@2", "P@3", "P@4", "Hit@1", "Hit@3"], FRACTIONAL_RANKING, FRACTIONAL_QRELS)
    assert values["value"].tolist() == pytest.approx([
        (0.5 + 0.0) / 2,  # mean label of a, b
        (0.5 + 0.0 + 0.25) / 3,
        (0.5 + 0.0 + 0.25) / 4,  # divided by k past the end of the list
        0.5,  # label of a
        0.5,  # max of 0.5, 0.0, 0.25
    ])


def test_fractional_ndcg_uses_the_labels_as_gains():
    # DCG@2 = 0.5/1 + 0/log2(3); ideal (1.0, 0.5) -> 1 + 0.5/log2(3)
    values = compute_measures(["nDCG@2"], FRACTIONAL_RANKING, FRACTIONAL_QRELS)
    assert values["value"].item() == pytest.approx(0.5 / (1 + 0.5 / math.log2(3)))


def test_grades_above_one_count_as_relevant_for_set_measures():
    # Grade 2 is "relevant" for P and Hit (trec_eval relevance_level 1): clip(2, 0, 1) = 1.
    values = compute_measures(["P@2", "Hit@1", "R@1"], {"q": ["a", "b"]}, {"q": {"a": 2, "b": 0}})
    assert values["value"].tolist() == [0.5, 1.0, 1.0]


@pytest.mark.parametrize("name", ["R@2", "AP@2", "RR@2", "Rprec", "R", "MAP@3", "MRR@3"])
def test_binary_only_measures_refuse_fractional_labels(name):
    with pytest.raises(ValueError, match=r"query 'q'.*binary labels only; use P@k, Hit@k or nDCG@k") as error:
        compute_measures([name], FRACTIONAL_RANKING, FRACTIONAL_QRELS)
    assert str(parse_measure(name)) in str(error.value)


def test_accepts_graded_is_declared_per_measure():
    graded = {name for name, definition in registered_measures().items() if definition.accepts_graded}
    # The measures defined on label values (means, maxima, gains, counts); the others need a count of relevant.
    assert graded == {"P", "nDCG", "DCG", "Hit", "RBP", "SetP", "Judged", "NumRet", "NumRel", "NumRelRet", "NumQ"}


# ----------------------------------------------------------------------------------------------
# Names, parsing and the registry
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["P@10", "R@5", "AP@100", "AP", "RR@10", "RR", "nDCG@10", "nDCG", "Hit@3", "Rprec", "P"]
)
def test_parse_round_trips(text):
    measure = parse_measure(text)
    assert str(measure) == repr(measure) == text
    assert parse_measure(repr(measure)) == measure
    assert hash(parse_measure(text)) == hash(measure)


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("MAP@10", "AP@10"), ("MRR@10", "RR@10"), ("NDCG@5", "nDCG@5"), ("HitRate@3", "Hit@3"), ("MAP", "AP")],
)
def test_aliases_parse_to_the_canonical_measure(alias, canonical):
    assert str(parse_measure(alias)) == canonical
    assert parse_measure(alias) == parse_measure(canonical)


def test_matmul_builds_measures():
    assert nDCG @ 10 == parse_measure("nDCG@10")
    assert parse_measure("MAP@5") == AP @ 5


def test_measures_are_frozen():
    with pytest.raises(AttributeError):
        parse_measure("P@1").cutoff = 2


@pytest.mark.parametrize("text", ["nDCG@0", "nDCG@-1", "nDCG@x", "Rprec@10", "unknown@3", "@3", "", "P@@1"])
def test_bad_measure_strings_are_refused(text):
    with pytest.raises(ValueError):
        parse_measure(text)


@pytest.mark.parametrize("name, aliases", [("nDCG", ()), ("AP", ()), ("NewMeasure", ("MRR",))])
def test_registry_refuses_duplicate_names_and_aliases(name, aliases):
    before = dict(registered_measures())
    duplicate = MeasureDefinition(
        name=name, kernel=lambda labels, cutoff: None, summary="", accepts_graded=True, aliases=aliases
    )
    with pytest.raises(ValueError, match="already registered"):
        register_measure(duplicate)
    assert dict(registered_measures()) == before
    assert get_definition("MRR").name == "RR"


# ----------------------------------------------------------------------------------------------
# Bad inputs
# ----------------------------------------------------------------------------------------------


def test_duplicate_passage_in_a_ranking_is_refused():
    with pytest.raises(ValueError, match="ranking of query 'q' lists a passage id more than once"):
        compute_measures(["P@2"], {"q": ["a", "a"]}, {"q": {"a": 1}})


def test_label_that_is_not_a_number_names_query_and_passage():
    with pytest.raises(ValueError, match="query 'q', passage 'b': label 'yes' is not a number"):
        compute_measures(["P@2"], {"q": ["a"]}, {"q": {"a": 1, "b": "yes"}})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_score_that_is_not_finite_names_the_query(bad):
    run = {"q1": {"a": 1.0}, "q2": {"b": 0.0, "a": bad}}
    with pytest.raises(ValueError, match="query 'q2' has a score that is not finite"):
        rank_by_score(run)
    with pytest.raises(ValueError, match="query 'q2' has a score that is not finite"):
        compute_measures_from_run(["P@1"], run, {"q1": {}, "q2": {}})


def test_ranked_labels_layout():
    labels = build_ranked_labels({"q": ["a", "b", "c"]}, {"q": {"c": 2, "a": 0.5, "z": 3}, "r": {}})
    assert labels.query_ids == ("q", "r")
    np.testing.assert_array_equal(labels.gains, [[0.5, 0, 2], [0, 0, 0]])
    np.testing.assert_array_equal(labels.relevance, [[0.5, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(labels.ideal_gains, [[3, 2, 0.5], [0, 0, 0]])
    np.testing.assert_array_equal(labels.n_relevant, [2.5, 0])  # clip(3)+clip(2)+0.5
    np.testing.assert_array_equal(labels.has_fractional, [True, False])
    np.testing.assert_array_equal(labels.lengths, [3, 0])
