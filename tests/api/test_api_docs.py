"""docs/api.md runs as written: its ``python`` code blocks, in order, in one fresh interpreter (as a notebook runs
them), with a runs folder and a cache of the test's own; then what they made is checked against the files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import pytrec_eval

from rageval.paths import REPO_ROOT
from rageval.store import RunReader

DOC = REPO_ROOT / "docs" / "api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

#: Appended to the document's code: what the blocks made, for the test to check against the run files.
FACTS = """
import json as _json
_json.dump({"shipped": str(run.path), "shipped_k": k, "p_at_k": {m: float(v) for m, v in p_at_k["mean"].items()},
            "best": best[["method", "measure", "tau"]].values.tolist(), "cases": int(len(cases)),
            "mine": str(mine.path), "mine_measures": mine.measures().values.tolist()},
           open(FACTS_FILE, "w"))
"""


def code_blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_the_document_has_the_two_examples():
    blocks = code_blocks()
    assert len(blocks) == 3  # the shipped run, the tiny model, the in-memory evaluation
    assert "rageval.open(" in blocks[0] and "rageval.evaluate(" in blocks[2]


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    """Run every block of docs/api.md in one fresh interpreter; the facts it leaves (:data:`FACTS`)."""
    folder = tmp_path_factory.mktemp("api_docs")
    script = folder / "api_doc.py"
    script.write_text("\n\n".join(code_blocks()) + FACTS.replace("FACTS_FILE", repr(str(folder / "facts.json"))),
                      encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAGEVAL_RUNS_DIR": str(folder / "runs"),
           "RAGEVAL_CACHE_DIR": str(folder / "cache"), "OMP_NUM_THREADS": "1", "RAGEVAL_DTYPE_CHECK": "off"}
    env.pop("RAGEVAL_SHIPPED_RUNS_DIR", None)  # the document opens a shipped run by name
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=folder, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads((folder / "facts.json").read_text()), "runs": folder / "runs", "stdout": done.stdout}


def test_shipped_example_reads_the_shipped_run(facts):
    assert facts["shipped"] == str(REPO_ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite")
    with RunReader(facts["shipped"]) as reader:
        assert facts["shipped_k"] == reader.main_k()
        measures = reader.measure_table()
        correlations = reader.correlations(facts["shipped_k"])
        judged = reader.failure_case_table("em", 5)
    at_k = measures[measures["measure"] == f"P@{facts['shipped_k']}"]
    means = at_k.groupby("method")["value"].mean()
    assert facts["p_at_k"] == pytest.approx(means.to_dict())
    top = correlations[correlations["measure"].str.endswith(f"@{facts['shipped_k']}")]["tau"].max()
    assert facts["best"][0][2] == pytest.approx(top)
    assert facts["cases"] == len(judged) > 0


def test_in_memory_example_writes_a_run_in_the_runs_folder(facts):
    mine = facts["mine"]
    assert os.path.dirname(mine) == str(facts["runs"])
    with RunReader(mine) as reader:
        assert reader.query_ids() == ["q1", "q2", "q3"]
        assert reader.e2e_ks() == [1, 2]
        rankings = {q: list(r.passage_ids) for q, r in reader.rankings().items()}
        settings = reader.settings()
    assert rankings == {"q1": ["p1", "p3"], "q2": ["p3", "p2"], "q3": ["p4", "p1"]}  # the dict's scores, descending
    assert settings["command"].startswith("rageval.evaluate(queries=<DataFrame of 3 in memory>")
    assert "erag:em" in {row[0] for row in facts["mine_measures"]}


def test_in_memory_qrels_measures_equal_pytrec_eval(facts):
    """The document's qrels and candidates, scored by trec_eval's implementation, give the measures the run holds
    for the ``qrels`` label method."""
    qrels = {"q1": {"p1": 1}, "q2": {"p2": 1}, "q3": {"p4": 1}}
    candidates = {"q1": {"p1": 12.0, "p3": 4.0}, "q2": {"p3": 9.5, "p2": 9.0}, "q3": {"p4": 7.0, "p1": 1.0}}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"P_1", "P_2", "recip_rank", "ndcg_cut_2"}).evaluate(candidates)
    ours = {(m, q): v for method, m, q, v in facts["mine_measures"] if method == "qrels"}
    for name, theirs in (("P@1", "P_1"), ("P@2", "P_2"), ("RR@2", "recip_rank"), ("nDCG@2", "ndcg_cut_2")):
        for query in qrels:
            assert ours[name, query] == pytest.approx(reference[query][theirs]), (name, query)
