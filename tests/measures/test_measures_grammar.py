"""The measure grammar (ir_measures' strings), canonical spellings, parameter checks, and what the label
parameters do, by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rageval.measures import (
    AP,
    P,
    RankedLabels,
    aggregate_measures,
    build_ranked_labels,
    compute_measure_values,
    compute_measures,
    nDCG,
    parse_measure,
    registered_measures,
    required_depths,
    requires_judgments,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "measures.md"

# ----------------------------------------------------------------------------------------------
# Canonical strings
# ----------------------------------------------------------------------------------------------

#: Every name rageval wrote before the grammar (run files store them): each must keep its canonical string.
EXISTING = {
    "P@5": "P@5", "R@10": "R@10", "AP@100": "AP@100", "AP": "AP", "RR@10": "RR@10", "RR": "RR",
    "nDCG@10": "nDCG@10", "nDCG": "nDCG", "Hit@3": "Hit@3", "Rprec": "Rprec", "P": "P", "R": "R",
    "MAP@10": "AP@10", "MRR@10": "RR@10", "NDCG@5": "nDCG@5", "HitRate@3": "Hit@3", "Success@3": "Hit@3",
    "Recall@5": "R@5", "MAP": "AP", "MRR": "RR",
}


@pytest.mark.parametrize(("text", "canonical"), EXISTING.items())
def test_existing_names_keep_their_canonical_strings(text, canonical):
    assert str(parse_measure(text)) == canonical


@pytest.mark.parametrize(("text", "canonical"), [
    ("P(rel=2)@5", "P(rel=2)@5"),
    ("P(rel=2.0)@5", "P(rel=2)@5"),  # values are normalised
    (" P ( rel = 2 ) @ 5 ", "P(rel=2)@5"),  # spaces around the parts
    ("AP(judged_only=True, rel=2)", "AP(judged_only=True,rel=2)"),  # parameters in alphabetical order
    ("AP(rel=2,judged_only=True)", "AP(judged_only=True,rel=2)"),
    ("AP(judged_only=False)", "AP"),  # a parameter at its default is left out
    ("RBP(p=0.8)", "RBP"), ("SetF(beta=1)", "SetF"), ("nDCG(dcg='log2')@10", "nDCG@10"),
    ("SetP(relative=False)", "SetP"), ("Rprec(mult=1.0)", "Rprec"),
    ("nDCG(dcg=log2)@10", "nDCG@10"),  # a bare word is a string
    ("nDCG(gains={0:0,1:1,2:3})", "nDCG(gains={2:3})"),  # a label mapped to itself is the default
    ("nDCG(gains={2: 3, 1: 1, 0: 0})@10", "nDCG(gains={2:3})@10"),
    ("nDCG(gains={0: 0, 1: 1})", "nDCG"),
    ("nDCG(gains={0:1,1:2.5})", "nDCG(gains={0:1,1:2.5})"),
    ('DCG(dcg="exp-log2", judged_only=True)@5', "DCG(dcg='exp-log2',judged_only=True)@5"),
    ("RBP(p=0.95,rel=1)@20", "RBP(p=0.95,rel=1)@20"),
    ("IPrec@0.50", "IPrec@0.5"), ("IPrec@1", "IPrec@1.0"), ("IPrec@.1", "IPrec@0.1"), ("IPrec@0", "IPrec@0.0"),
    ("11pt_avg", "IPrec11pt"), ("BPref", "Bpref"), ("NumRet(rel=1)", "NumRet(rel=1)"),
    ("SetF(beta=0.5,rel=2)", "SetF(beta=0.5,rel=2)"), ("Rprec(mult=0.2)", "Rprec(mult=0.2)"),
    ("Judged@10", "Judged@10"), ("F1@5", "F1@5"), ("infAP", "infAP"), ("NumQ", "NumQ"),
])
def test_canonical_spelling(text, canonical):
    measure = parse_measure(text)
    assert str(measure) == repr(measure) == canonical
    assert parse_measure(canonical) == measure and hash(parse_measure(canonical)) == hash(measure)


def test_python_spelling_builds_the_same_measures():
    assert P(rel=2) @ 5 == parse_measure("P(rel=2)@5")
    assert nDCG(dcg="exp-log2") @ 10 == parse_measure("nDCG(dcg='exp-log2')@10")
    assert AP(judged_only=True) == parse_measure("AP(judged_only=True)")
    assert (P @ 5).params == () and str(P(rel=2) @ 5 @ 10) == "P(rel=2)@10"


@pytest.mark.parametrize("name", sorted(registered_measures()))
def test_every_registered_measure_round_trips_with_its_parameters(name):
    definition = registered_measures()[name]
    cutoff = "@0.3" if definition.cutoff_kind == "recall" else ("@7" if definition.accepts_cutoff else "")
    examples = {"rel": 2, "judged_only": True, "gains": {1: 2}, "dcg": "exp-log2", "p": 0.5, "beta": 0.5,
                "relative": True, "mult": 0.4}
    params = ",".join(f"{param.name}={examples[param.name]!r}" for param in definition.params)
    measure = parse_measure(f"{name}({params}){cutoff}" if params else f"{name}{cutoff}")
    assert parse_measure(str(measure)) == measure
    assert len(measure.params) == len(definition.params)


# ----------------------------------------------------------------------------------------------
# Refusals, each saying what is wrong
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message"), [
    ("P(level=2)@5", r"takes no parameter 'level' \(its parameters: rel, judged_only\)"),
    ("NumQ(rel=2)", r"takes no parameter 'rel' \(its parameters: none\)"),
    ("P(rel=0)@5", "rel must be > 0"),
    ("P(rel=-1)@5", "rel must be > 0"),
    ("P(rel='high')@5", "rel must be a finite number"),
    ("AP(judged_only=1)", "judged_only must be True or False"),
    ("AP(judged_only=true)", "judged_only must be True or False, got 'true'"),
    ("RBP(p=1.5)", "strictly between 0 and 1"),
    ("nDCG(dcg='exp')", "dcg must be one of 'log2', 'exp-log2'"),
    ("nDCG(gains=[1, 2])", "gains must be a mapping"),
    ("nDCG(gains={-1: 2})", "labels must be >= 0"),
    ("nDCG(gains={1: 'x'})", "the gain of label 1 must be a finite number"),
    ("P(2)@5", "expected name=value pairs"),
    ("P(rel=2, rel=3)@5", "twice"),
    ("P(rel=2@5", "cannot parse measure"),
    ("P(rel=os.system('x'))@5", "must be a number, True/False, a quoted string"),
    ("SetP@5", "takes no cutoff"),
    ("Bpref@10", "takes no cutoff"),
    ("IPrec", r"needs a cutoff, e.g. IPrec@0.5"),
    ("IPrec@1.5", r"recall level of 'IPrec' must be a number in \[0, 1\]"),
    ("IPrec@x", "recall level after '@' must be a number"),
    ("P@0.5", "cutoff after '@' must be an integer"),
    ("P(cutoff=2.5)", "cutoff must be an integer"),
    ("nDCG@0", "must be an integer >= 1"),
    ("unknown@3", "unknown measure 'unknown'"),
    ("", "cannot parse measure"),
])
def test_bad_strings_are_refused_saying_why(text, message):
    with pytest.raises(ValueError, match=message):
        parse_measure(text)


# ----------------------------------------------------------------------------------------------
# What the label parameters do, by hand
# ----------------------------------------------------------------------------------------------

# Ranking: two unjudged passages, then relevant r1 (label 2), judged non-relevant n1, pooled-unjudged p1 (-1),
# relevant r2 (label 1). Judged but not retrieved: r3 (label 3).
RANKING = {"q": ["u1", "u2", "r1", "n1", "p1", "r2"]}
QRELS = {"q": {"r1": 2, "n1": 0, "p1": -1, "r2": 1, "r3": 3}}


@pytest.mark.parametrize(("measure", "expected"), [
    ("P@2", 0.0),
    ("P(judged_only=True)@2", 1 / 2),  # r1, n1: the unjudged and the pooled-unjudged passages close up
    ("RR", 1 / 3),
    ("RR(judged_only=True)", 1.0),
    ("NumRet", 6), ("NumRet(judged_only=True)", 3),
    ("P(rel=2)@3", 1 / 3), ("R(rel=2)", 1 / 2),  # of r1, r3 (labels >= 2) r1 is retrieved
    ("NumRel", 3), ("NumRel(rel=2)", 2), ("NumRelRet", 2), ("NumRet(rel=2)", 1),
    ("Judged@4", 2 / 4), ("Judged", 4 / 6),  # p1's -1 is in the qrels: ir_measures counts it as judged
    # Bpref: R = 3, N = 1 (n1); r1 has no non-relevant above (1), r2 has n1 above: 1 - 1/min(1, 3) = 0
    ("Bpref", (1 + 0) / 3),
    # nDCG with gains {1: 1, 2: 5, 3: 10}: DCG = 5/log2(4) + 1/log2(7); ideal 10, 5, 1
    ("nDCG(gains={2:5,3:10})", (5 / 2 + 1 / np.log2(7)) / (10 + 5 / np.log2(3) + 1 / 2)),
    ("DCG(dcg='exp-log2')", 3 / 2 + 1 / np.log2(7)),  # 2^2-1 at rank 3, 2^1-1 at rank 6
    ("DCG(dcg='exp-log2',judged_only=True)", 3 + 1 / np.log2(4)),  # ranks 1 and 3 of r1, n1, r2
])
def test_label_parameters_by_hand(measure, expected):
    assert compute_measures([measure], RANKING, QRELS)["value"].item() == pytest.approx(expected, abs=1e-15)


def test_rel_makes_fractional_labels_binary():
    qrels = {"q": {"a": 0.5, "b": 0.2, "c": 1.0}}
    with pytest.raises(ValueError, match=r"fractional label.*rel= to set a relevance level"):
        compute_measures(["AP"], {"q": ["a", "b"]}, qrels)
    values = compute_measures(["AP(rel=0.5)", "P(rel=0.5)@2", "P@2"], {"q": ["a", "b"]}, qrels)
    assert values["value"].tolist() == pytest.approx([(1 / 1) / 2, 1 / 2, (0.5 + 0.2) / 2])


def test_counts_are_summed_and_numq_counts_the_queries():
    rankings = {"q1": ["a", "b"], "q2": ["a"], "q3": []}
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}, "q3": {"a": 0}}
    summary = aggregate_measures(compute_measures(["NumRet", "NumRel", "NumRelRet", "NumQ", "P@1"], rankings, qrels))
    assert summary.set_index("measure")["value"].to_dict() == {
        "NumRet": 3, "NumRel": 3, "NumRelRet": 1, "NumQ": 3, "P@1": pytest.approx(1 / 3)}
    assert (summary["n_queries"] == 3).all()


def test_depths_and_judgments_follow_the_measures():
    def needs(*names):
        parsed = [parse_measure(name) for name in names]
        return required_depths(parsed), requires_judgments(parsed)

    assert needs("P@5", "nDCG@10") == ((10, 10), False)
    assert needs("P@5", "R@20") == ((20, 0), False)  # no measure reads the ideal ranking
    assert needs("P@5", "AP") == ((None, 0), False)
    assert needs("NumQ", "NumRel") == ((0, 0), False)  # no ranking read at all
    assert needs("P(judged_only=True)@5") == ((None, 0), True)  # ranks close up: the whole ranking
    assert needs("IPrec@0.5") == ((None, 0), False)
    assert needs("Judged@5", "nDCG") == ((None, None), True)
    assert needs("nDCG(gains={0:1})@5") == ((5, 5), True)  # label 0 has a gain: judged passages count
    assert needs("nDCG(gains={2:4})@5") == ((5, 5), False)


def test_measures_needing_judgments_say_so_on_labels_built_without():
    labels = build_ranked_labels(RANKING, QRELS)
    with pytest.raises(ValueError, match="Bpref reads the judgments of every ranked passage"):
        compute_measure_values(["Bpref"], labels)
    truncated = build_ranked_labels(RANKING, QRELS, depth=2, judgments=True)
    with pytest.raises(ValueError, match="judged_only needs the whole ranking"):
        compute_measure_values(["P(judged_only=True)@2"], truncated)


def test_ranked_judgments_layout():
    labels: RankedLabels = build_ranked_labels(RANKING, QRELS, judgments=True)
    np.testing.assert_array_equal(labels.ranked_judgments, [[np.nan, np.nan, 2, 0, -1, 1]])
    np.testing.assert_array_equal(labels.gains, [[0, 0, 2, 0, 0, 1]])
    assert labels.n_nonrelevant().tolist() == [1.0]
    assert build_ranked_labels(RANKING, QRELS).ranked_judgments is None


# ----------------------------------------------------------------------------------------------
# The measure list in the docs
# ----------------------------------------------------------------------------------------------


def test_docs_list_every_measure_and_parameter():
    text = DOCS.read_text(encoding="utf-8")
    for name, definition in registered_measures().items():
        assert f"`{name}" in text, name
        for param in definition.params:
            assert f"`{param.name}=" in text, (name, param.name)
