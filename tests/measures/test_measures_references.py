"""The expected values of ir_measures' and ranx's own test files, on their own inputs, for every case rageval's
grammar can express. Each block names the file it comes from; values are as those files assert them (rounded
where they round). Read from terrierteam/ir_measures (test/) and AmenRa/ranx (tests/unit/ranx/).

Counted: 171 expectations from ir_measures and 33 from ranx are checked here. Left out: ir_measures'
``parse_trec_measure`` cases (trec_eval names like ``P_5``, ``ndcg_cut.10``: not our grammar), ERR and the cwl_eval
measures beyond P/AP/RR/RBP (not implemented), ``SetP(rel=2)@5`` / ``SetR(rel=2)@5`` (a set measure takes no
cutoff here) and NaN aggregates of empty inputs; ranx's ``hits`` (no count at a cutoff), cases that compare ranx
with itself, and a run listing one passage three times (refused here).
"""

from __future__ import annotations

import math

import pytest

from rageval.measures import aggregate_measures, compute_measures, compute_measures_from_run, parse_measure


def trec_qrels(text: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in text.strip().splitlines():
        query_id, _, doc, label = line.split()
        qrels.setdefault(query_id, {})[doc] = int(label)
    return qrels


def trec_run(text: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in text.strip().splitlines():
        query_id, _, doc, _, score, *_ = line.split()
        run.setdefault(query_id, {})[doc] = float(score)
    return run


def values(measure: str, run, qrels) -> tuple[list[float], float]:
    """Per-query values (qrels order) and the aggregate (mean, or sum for the counts) of one measure."""
    per_query = compute_measures_from_run([measure], run, qrels)
    return per_query["value"].tolist(), aggregate_measures(per_query)["value"].item()


def check(measure: str, run, qrels, expected: list[float], aggregate: float | None = None, tol: float = 1e-9):
    per_query, total = values(measure, run, qrels)
    assert per_query == pytest.approx(expected, abs=tol), measure
    if aggregate is not None:
        assert total == pytest.approx(aggregate, abs=tol), measure


# ----------------------------------------------------------------------------------------------
# ir_measures test/test_pytrec_eval.py (expected values of trec_eval through pytrec_eval)
# ----------------------------------------------------------------------------------------------

RUN_A = trec_run("""
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D3 2 0.7 run
1 0 D4 3 0.3 run
1 0 D2 4 0.4 run
""")
RUN_C = trec_run("""
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D4 2 0.7 run
1 0 D3 3 0.3 run
1 0 D2 4 0.4 run
""")
QRELS_A = trec_qrels("""
0 0 D0 0
0 0 D1 1
0 0 D2 1
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 2
""")
QRELS_NUMREL = trec_qrels("""
0 0 D0 0
0 0 D1 1
0 0 D2 1
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 0
""")
QRELS_C = trec_qrels("""
0 0 D0 0
0 0 D1 1
0 0 D2 2
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 0
""")
QRELS_IPREC = trec_qrels("""
0 0 D0 1
0 0 D1 1
0 0 D2 2
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 0
""")
QRELS_INFAP = trec_qrels("""
0 0 D0 1
0 0 D1 -1
0 0 D2 0
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D4 -1
1 0 D5 0
""")

IR_MEASURES_PYTREC_EVAL = [
    # test_NumRet
    ("NumRet", RUN_A, QRELS_A, [5, 4], 9),
    ("NumRet(rel=1)", RUN_A, QRELS_A, [3, 1], 4),
    ("NumRet(rel=2)", RUN_A, QRELS_A, [1, 1], 2),
    ("NumRet(rel=3)", RUN_A, QRELS_A, [0, 0], 0),
    # test_NumQ
    ("NumQ", RUN_A, QRELS_A, [1, 1], 2),
    # test_NumRel
    ("NumRel", RUN_A, QRELS_NUMREL, [3, 2], 5),
    # test_Success
    ("Success@2", RUN_C, QRELS_C, [1, 0], 0.5),
    ("Success(rel=2)@2", RUN_C, QRELS_C, [1, 0], 0.5),
    ("Success(rel=3)@2", RUN_C, QRELS_C, [0, 0], 0),
    # test_SetP
    ("SetP(rel=1)", RUN_C, QRELS_C, [0.6, 0.25], 0.425),
    ("SetP(rel=2)", RUN_C, QRELS_C, [0.4, 0.25], 0.325),
    ("SetP(rel=3)", RUN_C, QRELS_C, [0, 0], 0),
    # test_SetR
    ("SetR(rel=1)", RUN_C, QRELS_C, [1.0, 0.5], 0.75),
    ("SetR(rel=2)", RUN_C, QRELS_C, [1.0, 1.0], 1.0),
    ("SetR(rel=3)", RUN_C, QRELS_C, [0, 0], 0),
    # test_IPrec
    ("IPrec@0.25", RUN_C, QRELS_IPREC, [1.0, 0.25], 0.625),
    ("IPrec@0.5", RUN_C, QRELS_IPREC, [1.0, 0.25], 0.625),
    ("IPrec@0.75", RUN_C, QRELS_IPREC, [1.0, 0.0], 0.5),
    ("IPrec(rel=2)@0.1", RUN_C, QRELS_IPREC, [0.6666666, 0.25], 0.4583),
    ("IPrec(rel=2)@0.25", RUN_C, QRELS_IPREC, [0.6666666, 0.25], 0.4583),
    ("IPrec(rel=2)@0.5", RUN_C, QRELS_IPREC, [0.6666666, 0.25], 0.4583),
    ("IPrec(rel=2)@0.75", RUN_C, QRELS_IPREC, [0.6666666, 0.25], 0.4583),
    # test_infAP
    ("AP", RUN_C, QRELS_INFAP, [0.8333, 0.125], 0.47916666666666663),
    ("infAP", RUN_C, QRELS_INFAP, [0.8333, 0.1875], 0.510416),
    ("AP(rel=2)", RUN_C, QRELS_INFAP, [0.33333, 0.25], 0.2917),
    ("infAP(rel=2)", RUN_C, QRELS_INFAP, [0.33333, 0.375], 0.3542),
]


@pytest.mark.parametrize(("measure", "run", "qrels", "expected", "aggregate"), IR_MEASURES_PYTREC_EVAL,
                         ids=[case[0] for case in IR_MEASURES_PYTREC_EVAL])
def test_ir_measures_pytrec_eval_expectations(measure, run, qrels, expected, aggregate):
    check(measure, run, qrels, expected, aggregate, tol=1e-4)  # the file asserts 4 places where it rounds


# ----------------------------------------------------------------------------------------------
# ir_measures test/test_ranx.py (one query: q0 of QRELS_A and RUN_A)
# ----------------------------------------------------------------------------------------------

IR_MEASURES_RANX = {
    "P@5": 0.6, "P(rel=2)@5": 0.2, "SetP": 0.6,
    "R@5": 1.0, "R(rel=2)@5": 1.0, "R@2": 0.3333333333333333, "R(rel=2)@2": 0.0, "SetR": 1.0,
    "RR": 0.5, "RR(rel=2)": 0.3333333333333333, "RR@10": 0.5, "RR(rel=2)@10": 0.3333333333333333,
    "RR@2": 0.5, "RR(rel=2)@2": 0.0,
    "AP": 0.6388888888888888, "AP(rel=2)": 0.3333333333333333, "AP@10": 0.6388888888888888,
    "AP(rel=2)@10": 0.3333333333333333, "AP@2": 0.16666666666666666, "AP(rel=2)@2": 0.0,
    "Success@10": 1.0, "Success(rel=2)@10": 1.0, "Success@2": 1.0, "Success(rel=2)@2": 0.0,
    "NumRet(rel=1)": 3.0,
    "nDCG": 0.6584645692843067, "nDCG@5": 0.6584645692843067, "nDCG@2": 0.23981246656813146,
    "nDCG(dcg='exp-log2')": 0.6201040599710453, "nDCG(dcg='exp-log2')@5": 0.6201040599710453,
    "nDCG(dcg='exp-log2')@2": 0.17376534287144002,
    "Rprec": 0.6666666666666666, "Rprec(rel=2)": 0.0,
}


@pytest.mark.parametrize("measure", list(IR_MEASURES_RANX))
def test_ir_measures_ranx_expectations(measure):
    check(measure, {"0": RUN_A["0"]}, {"0": QRELS_A["0"]}, [IR_MEASURES_RANX[measure]], tol=1e-15)


# ----------------------------------------------------------------------------------------------
# ir_measures test/test_judged.py, test_gdeval.py, test_aggregate.py, test_providers.py (test_empty)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("measure", "expected"), [
    ("Judged@1000", [1.0, 1.0 / 4.0]), ("Judged@10", [1.0, 1.0 / 4.0]),
    ("Judged@3", [1.0, 1.0 / 3.0]), ("Judged@1", [1.0, 0.0]),
])
def test_ir_measures_judged_expectations(measure, expected):
    check(measure, RUN_A, QRELS_A, expected)


@pytest.mark.parametrize(("measure", "expected", "aggregate"), [
    # gdeval's nDCG is the exponential-gain one; the file asserts gdeval's 5-decimal output
    ("nDCG(dcg='exp-log2')@20", [0.6201, 0.35099], 0.485545),
    ("nDCG(dcg='exp-log2')@2", [0.17377, 0.38685], 0.28031),
])
def test_ir_measures_gdeval_expectations(measure, expected, aggregate):
    check(measure, RUN_A, QRELS_A, expected, aggregate, tol=1e-5)


def test_ir_measures_aggregate_expectation():
    run = RUN_A | {"1": RUN_A["1"] | {"D0": 0.1}}
    assert values("P@5", run, QRELS_A)[1] == pytest.approx(0.5)


@pytest.mark.parametrize("measure", ["P@5", "Judged@5", "RR@5"])
def test_ir_measures_empty_inputs(measure):
    assert values(measure, {}, QRELS_A) == ([0.0, 0.0], 0.0)  # qrels but no run
    assert compute_measures_from_run([measure], RUN_A, {}).empty  # a run but no qrels: nothing to evaluate


# ----------------------------------------------------------------------------------------------
# ir_measures test/test_cwl_eval.py (cwl.qrels, cwl.run; values of a manual cwl-eval run, 4 places)
# ----------------------------------------------------------------------------------------------

CWL_QRELS = trec_qrels("""
T1 00 D1 1
T1 00 D2 0
T1 00 D3 1
T1 00 D4 1
T1 00 D7 1
T1 00 D8 0
T1 00 D9 1
T1 00 D10 0
T2 00 D1 1
T2 00 D2 1
T2 00 D5 1
T2 00 D6 0
T2 00 D7 1
T2 00 D8 1
T2 00 D9 1
T2 00 D10 0
T3 00 D4 0
T3 00 D5 0
T3 00 D6 1
T3 00 D7 1
T3 00 D8 1
T3 00 D9 0
T3 00 D10 1
""")
CWL_SCORES = (4.3, 4.2, 4.1, 3.9, 3.8, 3.7, 3.6, 3.5, 3.4, 3.3)  # D1..D10, the same for each topic in cwl.run
CWL_RUN = {topic: {f"D{rank}": score for rank, score in enumerate(CWL_SCORES, 1)} for topic in ("T1", "T2", "T3")}


@pytest.mark.parametrize(("measure", "expected"), [
    ("AP", [0.7087, 0.7438, 0.3068]),
    ("P@1", [1.0, 1.0, 0.0]),
    ("P@10", [0.5, 0.6, 0.4]),
    ("P@20", [0.25, 0.3, 0.2]),
    ("P@5", [0.6, 0.6, 0.0]),
    ("RBP(p=0.9,rel=1)", [0.3501, 0.3996, 0.1988]),
    ("RR", [1.0, 1.0, 0.1667]),
])
def test_ir_measures_cwl_eval_expectations(measure, expected):
    check(measure, CWL_RUN, CWL_QRELS, expected, tol=1e-4)


# ----------------------------------------------------------------------------------------------
# ir_measures test/test_util.py (test_parse_measure): the grammar
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "canonical"), [
    ("AP", "AP"), ("MAP", "AP"), ("P@10", "P@10"), ("nDCG@10", "nDCG@10"), ("P(rel=2)@10", "P(rel=2)@10"),
    ('nDCG(dcg="exp-log2")@10', "nDCG(dcg='exp-log2')@10"),
    ('nDCG(dcg="exp-log2", cutoff=20)@10', "nDCG(dcg='exp-log2')@10"),  # the @ cutoff wins
    ('nDCG(dcg="exp-log2", cutoff=20)', "nDCG(dcg='exp-log2')@20"),
    ("IPrec@0.2", "IPrec@0.2"), ("IPrec(rel=2)@0.2", "IPrec(rel=2)@0.2"),
    ("IPrec(rel=2, recall=0.4)@0.2", "IPrec(rel=2)@0.2"), ("IPrec(rel=2, recall=0.4)", "IPrec(rel=2)@0.4"),
])
def test_ir_measures_parse_measure_cases(text, canonical):
    assert str(parse_measure(text)) == canonical


# ----------------------------------------------------------------------------------------------
# ranx tests/unit/ranx/metrics_test.py (arrays in rank order: used as rankings as they are)
# ----------------------------------------------------------------------------------------------


def ranked(ids) -> list[str]:
    return [str(i) for i in ids]


def per_query(measure: str, rankings: dict, qrels: dict) -> list[float]:
    return compute_measures([measure], rankings, qrels)["value"].tolist()


def test_ranx_hit_rate():
    qrels = {"a": {"9": 1, "6": 1, "8": 1}, "b": {"1": 1, "2": 1, "4": 1}}
    rankings = {"a": ranked([1, 2, 3, 4, 5, 7]), "b": ranked([1, 2, 4, 3, 5, 7])}
    assert sum(per_query("Hit@5", rankings, qrels)) / 2 == 0.5


def test_ranx_reciprocal_rank():
    assert per_query("RR@5", {"q": ranked([2, 3, 1, 4, 5])}, {"q": {"3": 1}}) == [pytest.approx(0.5)]
    assert per_query("RR@5", {"q": ranked([2, 1, 4, 5])}, {"q": {"3": 1}}) == [0.0]


def test_ranx_r_precision_and_recall():
    ranking = ranked([2, 4, 3, 1, 5, 6, 7])
    one = {"q": {"1": 1, "2": 1, "3": 1}}
    assert per_query("Rprec", {"q": ranking}, one) == [pytest.approx(2 / 3)]
    assert per_query("R@2", {"q": ranking}, one) == [pytest.approx(1 / 3)]
    two = {"a": one["q"], "b": {"1": 1, "2": 1}}
    both = {"a": ranking, "b": ranking}
    assert sum(per_query("Rprec", both, two)) / 2 == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert sum(per_query("R@2", both, two)) / 2 == pytest.approx((1 / 3 + 1 / 2) / 2)


RANX_GRADED = {"q": {"2": 5, "4": 4, "5": 3, "10": 2}}
RANX_RANKINGS = [ranked([1, 2, 3, 4, 5]), ranked([10, 5, 2, 4, 3]), ranked([1, 3, 6, 7, 8])]
LOG2 = math.log2


def test_ranx_dcg_and_ndcg_jarvelin():
    dcgs = [5 / LOG2(3) + 4 / LOG2(5) + 3 / LOG2(6), 2 / LOG2(2) + 3 / LOG2(3) + 5 / LOG2(4) + 4 / LOG2(5), 0.0]
    idcg = 5 / LOG2(2) + 4 / LOG2(3) + 3 / LOG2(4) + 2 / LOG2(5)
    for ranking, dcg in zip(RANX_RANKINGS, dcgs):
        assert per_query("DCG@10", {"q": ranking}, RANX_GRADED) == [pytest.approx(dcg)]
        assert per_query("nDCG@10", {"q": ranking}, RANX_GRADED) == [pytest.approx(dcg / idcg)]


def test_ranx_dcg_and_ndcg_burges():
    dcgs = [(2**5 - 1) / LOG2(3) + (2**4 - 1) / LOG2(5) + (2**3 - 1) / LOG2(6),
            (2**2 - 1) / LOG2(2) + (2**3 - 1) / LOG2(3) + (2**5 - 1) / LOG2(4) + (2**4 - 1) / LOG2(5), 0.0]
    idcg = (2**5 - 1) / LOG2(2) + (2**4 - 1) / LOG2(3) + (2**3 - 1) / LOG2(4) + (2**2 - 1) / LOG2(5)
    for ranking, dcg in zip(RANX_RANKINGS, dcgs):
        assert per_query("DCG(dcg='exp-log2')@10", {"q": ranking}, RANX_GRADED) == [pytest.approx(dcg)]
        assert per_query("nDCG(dcg='exp-log2')@10", {"q": ranking}, RANX_GRADED) == [pytest.approx(dcg / idcg)]


# ----------------------------------------------------------------------------------------------
# ranx tests/unit/ranx/metrics/rank_biased_precision_test.py, f1_test.py, bpref_test.py,
# zero_division_error_test.py (scored runs, as ranx's Run sorts them)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "expected"), [(0.5, 0.7661), (0.8, 0.4526), (0.95, 0.1881)])
def test_ranx_rank_biased_precision(p, expected):
    qrels = {"q1": dict.fromkeys(["d1", "d2", "d6", "d11", "d17"], 1)}
    run = {"q1": {f"d{i}": 21 - i for i in range(1, 21)}}
    assert round(values(f"RBP(p={p})", run, qrels)[0][0], 4) == expected


RANX_QRELS = {
    "q1": {"d2": 1, "d5": 1, "d1": 0, "d4": 0},
    "q2": {"d2": 1, "d5": 1, "d1": 0, "d6": 0},
    "q3": {"d2": 1, "d5": 1, "d7": 1, "d1": 0, "d6": 0, "d8": 0},
    "q4": {"d2": 1, "d4": 1, "d6": 1, "d9": 1, "d1": 0, "d3": 0, "d7": 0, "d8": 0},
}
RANX_RUN = {
    "q1": {"d1": 10, "d2": 9, "d3": 8, "d4": 7},
    "q2": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d5": 6, "d6": 5},
    "q3": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d5": 6, "d6": 5, "d7": 4, "d8": 3},
}


def test_ranx_f1():
    run = RANX_RUN | {"q4": {"d1": 10, "d12": 9, "d3": 8, "d14": 7, "d16": 5, "d7": 4, "d8": 3}}
    precision_recall = [(1 / 4, 1 / 2), (2 / 6, 2 / 2), (3 / 8, 3 / 3)]  # set P and R of q1-q3 by hand
    expected = [2 * (p * r) / (p + r) for p, r in precision_recall] + [0.0]
    assert values("F1", run, RANX_QRELS)[0] == pytest.approx(expected)


def test_ranx_bpref():
    run = RANX_RUN | {"q4": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d6": 5, "d7": 4, "d8": 3}}
    expected = [1 / 2 * (1 - (1 / 2)), 1 / 2 * ((1 - (1 / 2)) + (1 - (1 / 2))),
                1 / 3 * ((1 - (1 / 3)) + (1 - (1 / 3)) + (1 - (2 / 3))),
                1 / 4 * ((1 - (1 / 4)) + (1 - (2 / 4)) + (1 - (2 / 4)))]
    assert values("Bpref", run, RANX_QRELS)[0] == pytest.approx(expected)


@pytest.mark.parametrize("measure", ["SetP", "SetR", "F1"])
def test_ranx_zero_division(measure):
    qrels = {"q_1": {"doc_a": 1}, "q_2": {"doc_b": 1}, "q_3": {"doc_c": 1}, "q_4": {"doc_d": 1}}
    run = {"q_1": {"doc_a": 1.0}, "q_2": {"doc_b": 1.0}, "q_3": {}, "q_4": {"doc_d": 1.0}}
    assert values(measure, run, qrels)[1] == 0.75
