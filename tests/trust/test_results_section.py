"""docs/results.md's Trust section on real human labels (issue 41, item 5): the HotpotQA runs' crowd judgements are
the people's labels; the true share is the crowd's share over every retrieved passage (counted here from the run's
own gold labels), coverage is a share of draws, and one draw through ``annotations import`` + ``trust`` equals the
direct computation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval.paths import shipped_runs_dir
from rageval.store.runs import RunReader
from rageval.trust.results_section import RUNS, coverage_table, end_to_end_draw, trust_section

RUNS_DIR = shipped_runs_dir() or Path("data/runs")


def test_the_truth_is_the_crowd_share_of_every_retrieved_passage():
    path = RUNS_DIR / RUNS[0]
    with RunReader(path) as reader:
        retrieved = {(q, p) for q, r in reader.rankings().items() for p in r.passage_ids}
        labels = reader.labels()
    supporting = {(q, p) for q, p, m, v in zip(labels["query_id"], labels["passage_id"], labels["method"],
                                               labels["value"]) if m == "gold" and v >= 0.5}
    rows, checks = coverage_table(RUNS_DIR, sizes=(60,), draws=20)
    real = [r for r in rows if r.run == path.stem]
    assert real and all(r.truth == pytest.approx(len(supporting & retrieved) / len(retrieved)) for r in real)
    assert {r.method for r in real}.isdisjoint({"gold", "gold_page"})
    assert all(0 <= r.coverage <= 1 and r.draws + r.no_interval == 20 for r in real)
    assert checks[path.stem] < 1e-12


def test_one_draw_end_to_end_equals_the_direct_computation():
    assert end_to_end_draw(RUNS_DIR / RUNS[1], 40, seed=3) < 1e-12


def test_the_section_lists_each_method_and_the_simulated_population():
    text = "\n".join(trust_section(RUNS_DIR, sizes=(60,), draws=10))
    assert text.startswith("## Trust: PPI, PPI++ and human labels alone, checked on real human labels")
    assert "| hotpotqa-candidates-gemma3_270m | llm_relevance | 60 |" in text
    assert "| simulated (tests/trust/test_coverage.py) | simulated method | 300 |" in text
