"""Every measure family against pytrec_eval (trec_eval 9) on random graded runs, at relevance levels 1-3 and with
judged-only rankings (trec_eval -l, -J), through the three label builders (rankings, scored run, tables)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rageval.measures import (
    compute_measures,
    compute_measures_from_frames,
    compute_measures_from_run,
    parse_measure,
    rank_by_score,
)

CUTOFFS = (1, 3, 5, 10, 30)  # rankings hold at most 24 passages: @30 is past the end of every one
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # trec_eval's iprec_at_recall defaults
MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)  # and Rprec_mult's
N_QUERIES = 60
SEEDS = range(6)
TREC_MEASURES = {
    *(f"{name}.{','.join(map(str, CUTOFFS))}" for name in ("P", "recall", "map_cut", "ndcg_cut", "success")),
    "map", "ndcg", "recip_rank", "Rprec", "infAP", "11pt_avg", "iprec_at_recall", "Rprec_mult", "set_P",
    "set_relative_P", "set_recall", "set_F", "set_map", "num_ret", "num_rel", "num_rel_ret", "num_q",
}


def random_case(seed: int):
    """Graded labels -1..3 (-1: pooled but unjudged), unjudged retrieved passages, tied scores, empty rankings,
    queries without a relevant passage. Scores take 6 values, so most rankings have ties, which both sides break
    by passage id descending; "d3" > "d20" as strings."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(30)]
    run, qrels = {}, {}
    for q in range(N_QUERIES):
        query_id = f"q{q}"
        retrieved = rng.choice(pool, 0 if q % 17 == 0 else int(rng.integers(1, 25)), replace=False).tolist()
        run[query_id] = {doc: float(rng.integers(0, 6)) / 5 for doc in retrieved}
        judged = rng.choice(pool, int(rng.integers(1, 20)), replace=False).tolist()
        qrels[query_id] = {doc: 0 if q % 7 == 3 else int(rng.integers(-1, 4)) for doc in judged}
    return run, qrels


def level_params(level: int | None, judged_only: bool, *extra: str) -> str:
    params = [*([f"rel={level}"] if level else []), *(["judged_only=True"] if judged_only else []), *extra]
    return f"({','.join(params)})" if params else ""


def measure_pairs(level: int | None, judged_only: bool) -> dict[str, str]:
    """Our measure string -> the pytrec_eval key it must equal (trec_eval run with -l level, -J judged_only)."""
    at = level_params(level, judged_only)
    judged = level_params(None, judged_only)  # nDCG, DCG and NumRet take no level (trec_eval's ignore it)
    pairs = {}
    for k in CUTOFFS:
        pairs |= {f"P{at}@{k}": f"P_{k}", f"R{at}@{k}": f"recall_{k}", f"AP{at}@{k}": f"map_cut_{k}",
                  f"nDCG{judged}@{k}": f"ndcg_cut_{k}", f"Hit{at}@{k}": f"success_{k}",
                  f"Success{at}@{k}": f"success_{k}"}
    pairs |= {
        f"AP{at}": "map", f"nDCG{judged}": "ndcg", f"RR{at}": "recip_rank", f"Rprec{at}": "Rprec",
        f"infAP{at}": "infAP", f"IPrec11pt{at}": "11pt_avg", f"SetP{at}": "set_P", f"P{at}": "set_P",
        f"SetP{level_params(level, judged_only, 'relative=True')}": "set_relative_P", f"SetR{at}": "set_recall",
        f"R{at}": "set_recall", f"SetF{at}": "set_F", f"F1{at}": "set_F", f"SetAP{at}": "set_map",
        f"NumRet{judged}": "num_ret", f"NumRelRet{at}": "num_rel_ret", f"NumRel{level_params(level, False)}": "num_rel",
        "NumQ": "num_q",
    }
    pairs |= {f"IPrec{at}@{r}": f"iprec_at_recall_{r:.2f}" for r in RECALL_LEVELS}
    pairs |= {f"Rprec{level_params(level, judged_only, f'mult={m}')}": f"Rprec_mult_{m:.2f}" for m in MULTIPLES}
    return pairs


def trec_eval(qrels, run, measures, level: int | None, judged_only: bool, tag: str) -> dict[str, dict[str, float]]:
    """pytrec_eval's values per query. Query ids get a prefix per configuration: trec_eval caches the last query's
    ranking by query id in a static variable, which must not leak from one evaluator into the next."""
    evaluator = pytrec_eval.RelevanceEvaluator({tag + q: v for q, v in qrels.items()}, measures,
                                               relevance_level=level or 1, judged_docs_only_flag=judged_only)
    values = evaluator.evaluate({tag + q: v for q, v in run.items()})
    return {query_id[len(tag):]: result for query_id, result in values.items()}


def as_frames(run, qrels) -> tuple[pd.DataFrame, pd.DataFrame]:
    run_rows = [(q, doc, score) for q, scores in run.items() for doc, score in scores.items()]
    qrels_rows = [(q, doc, label) for q, labels in qrels.items() for doc, label in labels.items()]
    return (pd.DataFrame(run_rows, columns=["query_id", "passage_id", "score"]),
            pd.DataFrame(qrels_rows, columns=["query_id", "passage_id", "label"]))


def ours_three_ways(measures, run, qrels) -> pd.DataFrame:
    """The values from rankings, from the scored run and from tables: they must be identical."""
    via_rankings = compute_measures(measures, rank_by_score(run), qrels)
    via_run = compute_measures_from_run(measures, run, qrels)
    via_frames = compute_measures_from_frames(measures, *as_frames(run, qrels))
    pd.testing.assert_frame_equal(via_rankings, via_run)
    pd.testing.assert_frame_equal(via_rankings, via_frames)
    return via_rankings.set_index(["measure", "query_id"])["value"]


def assert_matches(ours: pd.Series, reference: dict[str, dict[str, float]], pairs: dict[str, str], run,
                   qrels=None) -> int:
    """Compare on the queries both sides evaluate: pytrec_eval reports a query with an empty ranking as all zeros,
    num_rel included, where ours (trec_eval -c) still counts its relevant passages; those queries are left out
    here and their zeros are tested by hand in test_measures.py. Where trec_eval divides 0 by 0 (11pt_avg and
    iprec_at_recall of a judged-only ranking left empty) it reports NaN: ours is then 0, as for any empty
    ranking. Returns the number of values compared."""
    compared = 0
    for ours_name, key in pairs.items():
        name = str(parse_measure(ours_name))
        for query_id, values in reference.items():
            if not run[query_id]:
                continue
            expected = values[key]
            if math.isnan(expected):
                assert qrels is not None and not any(qrels[query_id].get(doc, -1) >= 0 for doc in run[query_id])
                expected = 0.0
            assert ours[name, query_id] == pytest.approx(expected, abs=1e-12, rel=0), (ours_name, key, query_id)
            compared += 1
    return compared


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "judged_only"])
@pytest.mark.parametrize("level", [None, 1, 2, 3], ids=["default", "rel1", "rel2", "rel3"])
def test_every_family_matches_pytrec_eval(seed, level, judged_only):
    run, qrels = random_case(seed)
    pairs = measure_pairs(level, judged_only)
    ours = ours_three_ways(list(pairs), run, qrels)
    reference = trec_eval(qrels, run, TREC_MEASURES, level, judged_only, tag=f"{seed}{level}{judged_only}:")
    assert set(reference) == set(qrels)
    assert assert_matches(ours, reference, pairs, run, qrels) > 0.9 * len(pairs) * N_QUERIES


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", [None, 2, 3])
def test_bpref_matches_pytrec_eval(seed, level):
    """trec_eval's bpref counts the judged non-relevant passages as rel_levels[0 .. level-1], reading past its
    array when the query's largest label is below level - 1 (garbage, or a crash of the process): those queries
    are left out of its qrels here. They have no relevant passage, so their bpref is 0 (checked on ours)."""
    run, qrels = random_case(seed)
    safe = {q: labels for q, labels in qrels.items() if max(labels.values()) >= (level or 1) - 1}
    unsafe = sorted(set(qrels) - set(safe))
    assert (compute_measures_from_run([f"Bpref{level_params(level, False)}"], run, qrels, queries=unsafe)["value"]
            == 0).all()
    for judged_only in (False, True):
        pairs = {f"Bpref{level_params(level, judged_only)}": "bpref", f"BPref{level_params(level, False)}": "bpref"}
        ours = ours_three_ways(list(pairs), run, safe)
        reference = trec_eval(safe, run, {"bpref"}, level, judged_only, tag=f"b{seed}{level}{judged_only}:")
        assert assert_matches(ours, reference, pairs, run) > 0


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_custom_gains_match_pytrec_eval_on_mapped_qrels(seed):
    """nDCG(gains=...) is trec_eval's ndcg on qrels whose labels are replaced by their gains (ir_measures' own
    way of running it); label 0 gets a gain, so every judged passage counts."""
    run, qrels = random_case(seed)
    gains = {0: 1, 1: 3, 2: 4, 3: 10}
    mapped = {q: {doc: gains.get(label, label) for doc, label in labels.items()} for q, labels in qrels.items()}
    for judged_only in (False, True):
        spelled = "{0:1,1:3,2:4,3:10}" + (",judged_only=True" if judged_only else "")
        pairs = {f"nDCG(gains={spelled})@{k}": f"ndcg_cut_{k}" for k in CUTOFFS} | {f"nDCG(gains={spelled})": "ndcg"}
        ours = ours_three_ways(list(pairs), run, qrels)
        reference = trec_eval(mapped, run, {"ndcg", "ndcg_cut." + ",".join(map(str, CUTOFFS))}, None, judged_only,
                              tag=f"g{seed}{judged_only}:")
        assert assert_matches(ours, reference, pairs, run) > 0


@pytest.mark.parametrize("beta", [0.5, 2.0, 0.25])
def test_set_f_beta_matches_pytrec_eval(beta):
    run, qrels = random_case(7)
    for level in (None, 2):
        pairs = {f"SetF{level_params(level, False, f'beta={beta}')}": "set_F"}
        ours = ours_three_ways(list(pairs), run, qrels)
        reference = trec_eval(qrels, run, {f"set_F.{beta}"}, level, False, tag=f"f{beta}{level}:")
        assert assert_matches(ours, reference, pairs, run) > 0


# ----------------------------------------------------------------------------------------------
# Measures trec_eval (as pytrec_eval ships it) lacks: checked against direct implementations
# ----------------------------------------------------------------------------------------------


def direct_values(run, qrels, query_id: str) -> dict[str, float]:
    """DCG, exponential nDCG, RBP, Judged and F1 of one query, written out rank by rank from their definitions."""
    ranking = rank_by_score({query_id: run.get(query_id, {})})[query_id]
    labels = qrels[query_id]
    graded = [max(labels.get(doc, 0), 0) for doc in ranking]
    relevant = [1.0 if labels.get(doc, 0) >= 1 else 0.0 for doc in ranking]
    n_relevant = sum(1 for label in labels.values() if label >= 1)
    ideal = sorted((label for label in labels.values() if label > 0), reverse=True)

    def dcg(gains, k):
        return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains[:k]))

    values = {}
    for k in (3, 10):
        exp_gains, exp_ideal = [2 ** g - 1 for g in graded], [2 ** g - 1 for g in ideal]
        values[f"DCG@{k}"] = dcg(graded, k)
        values[f"DCG(dcg='exp-log2')@{k}"] = dcg(exp_gains, k)
        values[f"nDCG(dcg='exp-log2')@{k}"] = dcg(exp_gains, k) / dcg(exp_ideal, k) if ideal else 0.0
        values[f"RBP(rel=1)@{k}"] = 0.2 * sum(r * 0.8 ** i for i, r in enumerate(relevant[:k]))
        shown = min(k, len(ranking))
        values[f"Judged@{k}"] = sum(doc in labels for doc in ranking[:k]) / shown if shown else 0.0
        found = sum(relevant[:k])
        p, r = found / k, (found / n_relevant if n_relevant else 0.0)
        values[f"F1@{k}"] = 2 * p * r / (p + r) if p + r else 0.0
    values["DCG"] = dcg(graded, len(graded))
    values["RBP(p=0.5,rel=2)"] = 0.5 * sum((labels.get(d, 0) >= 2) * 0.5 ** i for i, d in enumerate(ranking))
    return values


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_measures_beyond_trec_eval_match_their_definitions(seed):
    run, qrels = random_case(seed)
    names = list(direct_values(run, qrels, "q1"))
    ours = ours_three_ways(names, run, qrels)
    for query_id in qrels:
        for name, expected in direct_values(run, qrels, query_id).items():
            assert ours[str(parse_measure(name)), query_id] == pytest.approx(expected, abs=1e-12), (name, query_id)


def test_infap_equals_ap_on_complete_judgments_up_to_its_epsilon():
    """Every retrieved passage judged (no label -1, none missing): infAP is AP but for trec_eval's 1e-5 smoothing."""
    run, qrels = random_case(11)
    complete = {q: {doc: max(qrels[q].get(doc, 0), 0) for doc in set(qrels[q]) | set(run[q])} for q in qrels}
    values = compute_measures_from_run(["AP", "infAP", "AP(rel=2)", "infAP(rel=2)"], run, complete)
    table = values.pivot(index="query_id", columns="measure", values="value")
    assert (table["AP"] > 0).sum() > 20
    np.testing.assert_allclose(table["infAP"], table["AP"], atol=1e-4)
    np.testing.assert_allclose(table["infAP(rel=2)"], table["AP(rel=2)"], atol=1e-4)
