"""The registry of label methods (rageval.labelmethods): every built-in is one object whose properties are the rules
the measures, pages and reports used to derive from its name; a method added by one ``register`` call is listed,
named, coloured and scored by its own properties everywhere; a judge file is checked field by field."""

from __future__ import annotations

import pytest

from rageval import labelmethods
from rageval.erag.measures import compute_measure_values, is_graded_method, is_list_bound_method
from rageval.labelmethods import (
    BINARY,
    GIVEN,
    LEVELS,
    METHOD_ORDER,
    MODEL,
    LabelMethodError,
    MethodKind,
    display_name,
    is_computed,
    judges,
    load_judge_file,
    method_colours,
    method_kind,
    method_order,
    register,
    registered,
    relevant_grade,
    remember_stored_kinds,
)
from rageval.store import Label
from rageval.types import Ranking, ScoredPassage

#: The rules as the code before the registry wrote them by hand (erag/measures.py, store/provenance.py,
#: ui/format.py, ui/theme.py at commit 50561a5): (graded, list-bound, relevant grade, computed, display, colour).
BEFORE = {
    "erag:em": (False, True, None, True, "eRAG EM", "#1f77b4"),
    "erag:accuracy": (False, True, None, True, "eRAG accuracy", "#9467bd"),
    "erag:f1": (True, True, None, True, "eRAG F1", "#17becf"),
    "erag:rougeL": (True, True, None, True, "eRAG ROUGE-L", "#8c564b"),
    "erag:bertscore": (True, True, None, True, "eRAG BERTScore", "#e377c2"),
    "contains_answer": (False, True, None, True, "contains-answer", "#2ca02c"),
    "gold": (False, False, None, False, "gold", "#7f7f7f"),
    "gold_page": (False, True, None, False, "gold page", "#bcbd22"),
    "llm_relevance": (False, True, None, True, "LLM relevance", "#ff7f0e"),
    "umbrela": (False, True, 2, True, "UMBRELA", "#c49c94"),
    "qrels": (False, False, None, False, "qrels", None),
    "human": (False, False, None, False, "human", "#d62728"),
    "my_upload": (False, False, None, False, "my_upload", None),
}


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    """Each test's registrations end with it (the registry is the process's)."""
    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))


@pytest.mark.parametrize("base", sorted(BEFORE))
@pytest.mark.parametrize("model", [None, "gemma-3-270m"])
def test_each_built_in_keeps_the_rules_its_name_used_to_give(base, model):
    name = base if model is None else f"{base}@{model}"
    graded, bound, grade, computed, shown, colour = BEFORE[base]
    assert (is_graded_method(name), is_list_bound_method(name), relevant_grade(name), is_computed(name)) == (
        graded, bound, grade, computed)
    assert display_name(base) == shown and method_colours().get(base) == colour
    assert display_name(name) == (shown if model is None else name)  # a re-scored name is shown as stored


def test_the_display_order_and_the_judges_are_the_registry_s():
    assert METHOD_ORDER == ("erag:em", "erag:accuracy", "erag:f1", "erag:rougeL", "erag:bertscore",
                            "contains_answer", "gold", "gold_page", "llm_relevance", "umbrela")
    assert [k.name for k in judges()][:2] == ["llm_relevance", "umbrela"]
    assert all(k.judge is not None and k.llm_calls == 1 and MODEL in k.needs for k in judges())
    assert method_kind("erag:somethingnew").graded and method_kind("not a@valid@name") is GIVEN
    assert all(k.description for k in registered())


def test_a_method_registered_in_one_place_is_listed_named_coloured_and_scored_by_its_properties():
    kind = register(MethodKind("test_levels_judge", "Test grades", "a test method on 0-4, relevant from 3",
                               "#123456", LEVELS, (0, 1, 2, 3, 4), 3, list_bound=True))
    assert method_order()[-1] == "test_levels_judge" and display_name("test_levels_judge") == "Test grades"
    assert method_colours()["test_levels_judge"] == "#123456" and relevant_grade("test_levels_judge@m") == 3
    assert register(kind) is kind  # the same definition again: a no-op
    with pytest.raises(LabelMethodError, match="already defined"):
        register(MethodKind("test_levels_judge", "Other", "another definition"))
    # Scored by its own rules: nDCG on the grades, P on "grade >= 3", and list-bound (the top c only at c).
    ranking = {"q": Ranking("q", tuple(ScoredPassage(p, 1.0 / (i + 1)) for i, p in enumerate("abc")))}
    labels = [Label("test_levels_judge", "q", p, v) for p, v in zip("abc", (4.0, 3.0, 2.0))]
    values = {v.measure: v.value for v in compute_measure_values(labels, ranking, [1, 3])}
    assert values["P@1"] == 1.0 and values["P@3"] == pytest.approx(2 / 3) and values["R@3"] == 1.0
    assert values["R@1"] == 1.0  # list-bound: at c = 1 only the top passage's label exists (global: 1/2)


def test_a_kind_stored_in_a_run_is_known_to_a_process_that_never_read_its_file():
    remember_stored_kinds({"stored_judge": {"display": "Stored", "description": "from a run", "scale": BINARY,
                                            "list_bound": True, "computed": True}, "bad": "not a table"})
    kind = method_kind("stored_judge@model")
    assert kind.name == "stored_judge" and kind.list_bound and kind.judge is None and kind.origin["stored"]
    assert method_kind("bad") is GIVEN


JUDGE = '''name = "{name}"
description = "does the passage hold one of the gold answers?"
prompt = """Question: {{question}}
Gold answers: {{answers}}
Passage ({{title}}): {{passage}}
Does the passage contain an answer? Reply Yes or No.
Answer:"""
[parse]
pattern = '^\\s*(yes|no)\\b'
labels = {{yes = 1, no = 0}}
'''


@pytest.mark.parametrize(("text", "message"), [
    ("name = 'x'", r"judge\.toml: field 'description' is missing"),
    (JUDGE.format(name="gold"), r"field 'name' 'gold'.*not a built-in method's name"),
    (JUDGE.format(name="ok").replace("{passage}", "{text}"), r"field 'prompt': expected the placeholders"),
    (JUDGE.format(name="ok").replace("(yes|no)", "(yes|no"), r"\[parse\]: field 'pattern' .*not a regular exp"),
    (JUDGE.format(name="ok").replace("labels = {yes = 1, no = 0}", ""), r"either 'labels'.*or 'levels'"),
    (JUDGE.format(name="ok").replace("yes = 1", "yes = 5"), r"field 'labels': expected a table"),
    (JUDGE.format(name="ok").replace("labels = {yes = 1, no = 0}", "levels = [0, 1]\nrelevant_from = 2"),
     r"field 'relevant_from' 2: expected one of the levels \[0, 1\]"),
    (JUDGE.format(name="ok") + "colour = 1\n", r"\[parse\]: unknown field\(s\) colour"),
    ("name = ", r"judge\.toml: not valid TOML"),
])
def test_a_bad_judge_file_is_named_with_its_field(tmp_path, text, message):
    path = tmp_path / "judge.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LabelMethodError, match=message):
        load_judge_file(path)


def test_a_judge_file_fills_its_prompt_and_reads_replies(tmp_path):
    from rageval.types import Passage, Query

    path = tmp_path / "judge.toml"
    path.write_text(JUDGE.format(name="test_file_judge"), encoding="utf-8")
    kind = load_judge_file(path)
    assert kind.scale == BINARY and kind.list_bound and kind.judge is not None
    prompt = kind.judge.build_prompt(Query("q", "who wrote {it}?", ("Ann", "Bo"), (), "t"),
                                     Passage("p", "Books", "Ann wrote {it}.", "t"))
    assert prompt == ("Question: who wrote {it}?\nGold answers: Ann; Bo\nPassage (Books): Ann wrote {it}.\n"
                      "Does the passage contain an answer? Reply Yes or No.\nAnswer:")
    assert [kind.judge.parse(r) for r in (" Yes.", "no", "Maybe", "The answer is yes")] == [1.0, 0.0, None, None]
    identifier = kind.judge.template.identifier
    assert identifier.startswith("judge-test_file_judge@1#") and load_judge_file(path) == kind
    path.write_text(JUDGE.format(name="test_file_judge").replace("Reply Yes", "Answer Yes"), encoding="utf-8")
    assert load_judge_file(path).judge.template.identifier != identifier  # the same file edited: replaced


def test_an_installed_package_registers_its_method_through_the_entry_point_group(tmp_path, monkeypatch):
    """A package (here a bare .dist-info and module on sys.path, as pip would install them) that names a MethodKind
    under ``rageval.label_methods`` is in the registry without any change to rageval."""
    (tmp_path / "team_judges.py").write_text(
        "from rageval.labelmethods import MethodKind\n"
        "KIND = MethodKind('team_method', 'Team method', 'our own labels', '#010203', list_bound=True)\n")
    info = tmp_path / "team_judges-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-judges\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rageval.label_methods]\nteam = team_judges:KIND\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(labelmethods, "_entry_points_loaded", False)
    kind = method_kind("team_method@some-model")
    assert (kind.display, kind.source, kind.list_bound) == ("Team method", "entry point team_judges:KIND", True)
    assert display_name("team_method") == "Team method" and method_order()[-1] == "team_method"


def test_a_broken_package_loses_only_its_own_methods(tmp_path, monkeypatch):
    (tmp_path / "broken_judges.py").write_text("raise ImportError('needs a library that is not installed')\n")
    info = tmp_path / "broken_judges-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-judges\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rageval.label_methods]\nbroken = broken_judges:KIND\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(labelmethods, "_entry_points_loaded", False)
    monkeypatch.setattr(labelmethods, "ENTRY_POINT_ERRORS", [])
    with pytest.warns(UserWarning, match=r"entry point broken \(broken_judges:KIND\).*left out: needs a library"):
        names = [kind.name for kind in registered()]
    assert names[:len(METHOD_ORDER)] == list(METHOD_ORDER) and len(labelmethods.ENTRY_POINT_ERRORS) == 1
