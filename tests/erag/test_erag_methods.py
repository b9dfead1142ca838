"""Label-method names (rageval.labelmethods): one parser, and the measure rules read from the parsed base, so a
re-scored method (``erag:em@<model>``) is measured exactly as its base method."""

from __future__ import annotations

import pytest

from rageval.erag.measures import compute_measure_values, is_graded_method, is_list_bound_method, measure_names
from rageval.labelmethods import LLM_RELEVANCE, LabelMethod, erag_method, parse_label_method
from rageval.store import Label, Run, RunReader, write_run
from rageval.types import Passage, Query, Ranking, ScoredPassage


@pytest.mark.parametrize(("name", "base", "metric", "model"), [
    ("erag:em", "erag:em", "em", None),
    ("erag:em@gemma-3-270m", "erag:em", "em", "gemma-3-270m"),
    ("erag:rougeL@tiny-gemma3-bfloat16", "erag:rougeL", "rougeL", "tiny-gemma3-bfloat16"),
    ("llm_relevance@smollm2", "llm_relevance", None, "smollm2"),
    ("gold", "gold", None, None),
    ("qrels", "qrels", None, None),
    ("utility", "utility", None, None),
])
def test_parse_label_method_round_trips(name, base, metric, model):
    parsed = parse_label_method(name)
    assert (parsed.base, parsed.metric, parsed.model) == (base, metric, model)
    assert str(parsed) == parsed.name == name
    assert parse_label_method(str(parsed)) == parsed


def test_erag_method_names_the_rescored_labels_too():
    assert erag_method("em") == "erag:em"
    assert erag_method("f1", "gemma-3-270m") == "erag:f1@gemma-3-270m"
    assert str(LabelMethod(LLM_RELEVANCE, "smollm2")) == "llm_relevance@smollm2"


@pytest.mark.parametrize("name", ["", "@gemma", "erag:em@", "erag:@gemma", "erag:", "a@b@c"])
def test_malformed_names_are_refused(name):
    with pytest.raises(ValueError):
        parse_label_method(name)


@pytest.mark.parametrize(("method", "graded"), [
    ("erag:em", False), ("erag:em@gemma", False), ("erag:accuracy@gemma-3-270m", False),
    ("erag:f1", True), ("erag:f1@gemma", True), ("erag:bertscore@smollm2", True),
    ("llm_relevance@gemma", False), ("qrels", False), ("gold", False), ("a@b@c", False)])
def test_graded_follows_the_base_method_whatever_the_model(method, graded):
    assert is_graded_method(method) is graded


@pytest.mark.parametrize(("method", "bound"), [
    ("erag:em", True), ("erag:em@gemma", True), ("llm_relevance", True), ("llm_relevance@gemma", True),
    ("contains_answer", True), ("gold_page", True), ("gold", False), ("qrels", False), ("utility", False),
    ("a@b@c", False)])
def test_list_bound_follows_the_base_method_whatever_the_model(method, bound):
    assert is_list_bound_method(method) is bound


def _ranking(query_id: str, ids: list[str]) -> Ranking:
    return Ranking(query_id, tuple(ScoredPassage(pid, float(-rank)) for rank, pid in enumerate(ids)))


def test_a_rescored_method_gets_its_base_methods_measures_and_values():
    rankings = {"q1": _ranking("q1", ["a", "b", "c"]), "q2": _ranking("q2", ["d", "e", "f"])}
    values = {("q1", "a"): 0.0, ("q1", "b"): 1.0, ("q1", "c"): 0.0, ("q2", "d"): 0.0, ("q2", "e"): 0.0,
              ("q2", "f"): 1.0}
    labels = [Label(method, q, p, v) for method in ("erag:em", "erag:em@gemma", "llm_relevance",
                                                    "llm_relevance@gemma") for (q, p), v in values.items()]
    computed = compute_measure_values(labels, rankings, (1, 3))
    by_method: dict[str, dict[tuple[str, str], float]] = {}
    for v in computed:
        by_method.setdefault(v.method, {})[(v.measure, v.query_id)] = v.value
    assert by_method["erag:em@gemma"] == by_method["erag:em"]
    assert by_method["llm_relevance@gemma"] == by_method["llm_relevance"]
    assert {measure for measure, _ in by_method["erag:em@gemma"]} == set(measure_names((1, 3)))
    # binary and list-bound, as erag:em: R@3 = Hit@3 (eRAG's Table 1); a graded reading would have no R at all.
    assert by_method["erag:em@gemma"][("R@3", "q1")] == by_method["erag:em@gemma"][("Hit@3", "q1")] == 1.0


def _run(settings: dict, labels: list[Label]) -> Run:
    return Run(settings, [Query("q1", "question?", ("yes",))], [Passage(p, "", f"text {p}") for p in "ab"],
               [_ranking("q1", ["a", "b"])], labels=labels)


def test_graded_is_what_the_stored_run_recorded(tmp_path):
    labels = [Label("erag:f1@gemma", "q1", "a", 1.0), Label("erag:f1@gemma", "q1", "b", 0.0),
              Label("erag:em@gemma", "q1", "a", 1.0), Label("utility", "q1", "a", 0.5)]
    recorded = write_run(_run({"graded_label_methods": ["utility", "erag:f1@gemma"]}, labels), tmp_path / "r.sqlite")
    with RunReader(recorded) as reader:
        assert reader.graded_label_methods() == ["erag:f1@gemma", "utility"]
    # A file without the setting (older writers): the methods with a fractional label.
    unrecorded = write_run(_run({}, labels), tmp_path / "old.sqlite")
    with RunReader(unrecorded) as reader:
        assert reader.graded_label_methods() == ["utility"]
