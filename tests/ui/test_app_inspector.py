"""The query inspector's worklists (a list of queries carried in the URL, walked with Prev / Next), its marked
passage text (gold answers and wrong end-to-end answers, corpus text escaped first), the distractor flag and the
judge x k verdict table. AppTest on the fixture run (tests/run_fixtures.py) and on runs built from it; expected
values restated from the fixture's construction."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import pandas as pd
import pytest

from rageval.store import E2EOutput, RunReader, write_run
from tests.run_fixtures import INJECTION, K, build_small_run, make_small_run
from tests.ui.test_app import INSPECTOR, passage_texts, query_box, start
from ui import render_inspector as inspect
from ui import worklist
from ui.render import escape_markdown

RUN_ORDER = [f"nq:{i}" for i in range(6)]  # tests/run_fixtures.py: the first 6 NQ-open questions, in file order
LIST = ["nq:4", "nq:1", "nq:3"]
NAME = "my triage list"


@pytest.fixture
def runs_env(tmp_path, monkeypatch) -> Path:
    path = make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return path


def open_list(query_ids=LIST, name=NAME, **extra):
    return start(INSPECTOR, **{**worklist.worklist_params("fixture", query_ids, RUN_ORDER, name), **extra})


def counter(app) -> str:
    return next(m.value for m in app.markdown if m.value.startswith("Case "))


def warnings(app) -> list[str]:
    return [w.value for w in app.warning]


# --- worklists --------------------------------------------------------------------------------------------

def test_the_fixture_run_order_is_the_one_the_tests_encode_against(runs_env):
    with RunReader(runs_env) as reader:
        assert reader.query_table()["query_id"].tolist() == RUN_ORDER


def test_next_and_prev_walk_the_list_and_the_list_stays_in_the_url(runs_env):
    app = open_list()
    token = app.query_params["list"]
    assert query_box(app).value == "nq:4" and counter(app) == escape_markdown(f"Case 1 of 3 · {NAME}")
    assert query_box(app).options == [o for q in LIST for o in query_box(app).options if o.endswith(f"[{q}]")]
    assert len(query_box(app).options) == 3
    assert app.button(key=inspect.PREV_KEY).disabled
    app.button(key=inspect.NEXT_KEY).click().run()
    # Next goes to the list's second query (nq:1), not to the run's next one (nq:5).
    assert query_box(app).value == "nq:1" and app.query_params["query"] == "nq:1"
    assert app.query_params["list"] == token and app.query_params["list_name"] == NAME
    assert counter(app) == escape_markdown(f"Case 2 of 3 · {NAME}")
    app.button(key=inspect.NEXT_KEY).click().run()
    assert query_box(app).value == "nq:3" and app.button(key=inspect.NEXT_KEY).disabled
    app.button(key=inspect.PREV_KEY).click().run()
    assert query_box(app).value == "nq:1" and counter(app) == escape_markdown(f"Case 2 of 3 · {NAME}")
    assert not warnings(app) and not app.exception


def test_leaving_the_list_keeps_the_query_and_walks_the_whole_run(runs_env):
    app = open_list(query="nq:1")
    app.button(key=inspect.LEAVE_KEY).click().run()
    assert "list" not in app.query_params and "list_name" not in app.query_params
    assert query_box(app).value == "nq:1" and len(query_box(app).options) == 6
    assert not [m for m in app.markdown if m.value.startswith("Case ")]
    app.button(key=inspect.NEXT_KEY).click().run()
    assert query_box(app).value == "nq:2"  # the run's order again


@pytest.mark.parametrize("token, problem", [
    ("not*a*token", "not a worklist token"),
    (worklist.encode_worklist(LIST, list(reversed(RUN_ORDER))), "made for another run"),
    (worklist.encode_positions([2, 40]), "the run has 6 queries"),
])
def test_a_list_that_cannot_be_read_is_named_in_a_warning_and_all_queries_are_walked(runs_env, token, problem):
    app = start(INSPECTOR, run="fixture", query="nq:2", list=token, list_name=NAME)
    assert not app.exception
    shown = warnings(app)
    assert len(shown) == 1 and escape_markdown(repr(NAME)) in shown[0] and escape_markdown(problem) in shown[0]
    assert query_box(app).value == "nq:2" and len(query_box(app).options) == 6
    app.button(key=inspect.LEAVE_KEY).click().run()
    assert "list" not in app.query_params and not warnings(app)


def test_an_unknown_query_gets_a_warning_naming_it_with_or_without_a_list(runs_env):
    app = start(INSPECTOR, query="no-such-query")
    assert any(escape_markdown("'no-such-query'") in w for w in warnings(app))
    assert query_box(app).value == "nq:0"

    app = open_list(query="no-such-query")
    assert any(escape_markdown("'no-such-query'") in w for w in warnings(app))
    assert query_box(app).value == "nq:4" and app.query_params["list"]  # the list's first, the list kept


def test_a_query_of_the_run_outside_the_list_says_so_and_links_to_it(runs_env):
    app = open_list(query="nq:0")
    assert any(escape_markdown("'nq:0'") in w for w in warnings(app))
    assert escape_markdown(f"Query nq:0 is a query of this run but not in the list {NAME!r}.") in \
        [i.value for i in app.info]
    link = next(link.proto for link in app.get("page_link") if link.proto.label == "Open it outside the list")
    assert link.query_string in ("run=fixture&query=nq%3A0", "run=fixture&query=nq:0")


def test_the_keyboard_script_is_one_fixed_iframe_that_presses_the_keyed_buttons(runs_env):
    app = open_list()
    assert len(app.get("iframe")) == 1
    # Streamlit gives a keyed element the CSS class "st-key-" + the key, other characters than [A-Za-z0-9_-] as "-";
    # the script finds ".st-key-inspect-" + "next" / "prev".
    assert [re.sub(r"[^a-zA-Z0-9_-]", "-", key) for key in (inspect.PREV_KEY, inspect.NEXT_KEY)] == \
        ["inspect-prev", "inspect-next"]
    assert '".st-key-inspect-" + key + " button"' in inspect._WALK_KEYS_SCRIPT
    assert '"INPUT", "TEXTAREA"' in inspect._WALK_KEYS_SCRIPT  # keys typed into a field are left alone


# --- marked passage text ------------------------------------------------------------------------------------

TAG = re.compile(r"<[^>]*>")
OUR_TAGS = re.compile(r'^(<div style="[^"<>]*">|</div>|<mark style="[^"<>]*" title="[^"<>]*">|</mark>|<br>)$')


def read_back(marked: str) -> str:
    return html.unescape(TAG.sub("", marked.replace("<br>", "\n")))


def test_highlighting_escapes_corpus_text_and_marks_answers():
    text = (f"Before {INJECTION} after. *Not* [bold](x) :red[no] $x$\n\nThe  U.S.A. and Röntgen, "
            "(Wilhelm Conrad Röntgen).")
    marked = inspect.highlight_html(text, gold=["Wilhelm Conrad Röntgen", "usa"], wrong=["the röntgen"])
    assert all(OUR_TAGS.match(tag) for tag in TAG.findall(marked)), TAG.findall(marked)
    assert "<script" not in marked and "<img" not in marked and "onerror=" in read_back(marked)
    assert not re.search(r"[*\[\]`$:_<>]", TAG.sub("", marked).replace("&#", ""))  # no Markdown/HTML syntax left
    assert read_back(marked) == text and "\n" not in marked  # one line: Markdown keeps it one HTML block
    marks = re.findall(r'<mark style="[^"]*" title="([^"]*)">(.*?)</mark>', marked)
    shown = [(title, html.unescape(inner)) for title, inner in marks]
    # Compared as exact match compares: case, punctuation and articles ignored; the brackets around a match
    # stay outside the mark; gold wins where a wrong answer also matches ("the röntgen" inside the gold name).
    assert shown == [("a gold answer", "U.S.A"), ("a wrong end-to-end answer", "Röntgen"),
                     ("a gold answer", "Wilhelm Conrad Röntgen")]


def test_answer_spans_match_whole_words_only():
    assert inspect.answer_spans("Paris is not Parisian", ["paris"]) == [(0, 5)]
    assert inspect.answer_spans("a b", ["the"]) == []  # an answer that normalises to nothing marks nothing


def test_the_inspector_marks_gold_answers_and_shows_the_injection_passage_as_text(runs_env):
    app = start(INSPECTOR, query="nq:0")
    marked = [m.value for m in app.markdown if m.value.startswith('<div style="white-space')]
    assert len(marked) == K
    assert all(OUR_TAGS.match(tag) for text in marked for tag in TAG.findall(text))
    with RunReader(runs_env) as reader:
        texts = reader.ranking_table("nq:0")["text"].tolist()
    assert passage_texts(app) == texts and any(INJECTION in t for t in passage_texts(app))
    # nq:0's gold answer is in its top passage (tests/run_fixtures.py): marked green there.
    assert '<mark style="background-color: rgba(26, 152, 80' in marked[0] and "Wilhelm Conrad Röntgen</mark>" in \
        marked[0]


# --- distractors ----------------------------------------------------------------------------------------------

def with_wrong_answer(path: Path, query_id: str, answer: str) -> Path:
    """The fixture run with the E2E answer of ``query_id`` replaced by ``answer`` (scored 0: it is not gold)."""
    run = build_small_run()
    e2e = [E2EOutput(o.query_id, o.k, answer, 0.0) if o.query_id == query_id else o for o in run.e2e_outputs]
    return write_run(dataclasses.replace(run, e2e_outputs=e2e), path)


def test_a_passage_whose_own_answer_is_the_wrong_e2e_answer_is_flagged(tmp_path, monkeypatch):
    # nq:0's rank-4 passage is "Geography of Nigeria", whose single-passage answer is its title (the fake reader
    # finds no gold answer in it); make that the end-to-end answer at K.
    path = with_wrong_answer(tmp_path / "fixture.sqlite", "nq:0", "geography of Nigeria.")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(INSPECTOR, query="nq:0")
    with RunReader(path) as reader:
        ranking = reader.ranking_table("nq:0")
    assert ranking["output"].tolist()[3] == "Geography of Nigeria"
    labels = [e.label for e in app.expander if "· score" in e.label]
    assert [f"distractor at k={K}" in label for label in labels] == [False, False, False, True, False]
    assert [e.proto.expanded for e in app.expander if "· score" in e.label] == [True, True, True, True, False]
    assert escape_markdown(f"Distractor at k={K}: the answer from this passage alone, \"Geography of Nigeria\", is "
                           "the wrong end-to-end answer there.") in [m.value.removeprefix(":material/warning: ")
                                                                    for m in app.markdown]


def test_distractor_needs_the_passage_in_the_top_k_and_a_wrong_answer():
    ranking = pd.DataFrame({"passage_id": ["p1", "p2", "p3"], "rank": [1, 2, 3], "output": ["Paris", "Lyon", "lyon"]})
    e2e = pd.DataFrame({"k": [1, 2, 3], "output": ["Paris", "The Lyon", "Lyon"]})
    wrong = inspect.wrong_answers(e2e, gold=["Paris"])
    assert wrong == {2: "The Lyon", 3: "Lyon"}
    assert inspect.distractor_ks(ranking, wrong) == {"p2": [2, 3], "p3": [3]}  # p3 is not in the top 2


def test_no_distractor_when_every_passage_gives_the_same_answer():
    """Issue 42: a model that answers "Lyon" from every passage (the gold one included) was not misled by any one
    of them: before, every passage was flagged "Distractor"."""
    ranking = pd.DataFrame({"passage_id": ["gold", "p2", "p3"], "rank": [1, 2, 3], "output": ["Lyon", "lyon", "Lyon"]})
    wrong = inspect.wrong_answers(pd.DataFrame({"k": [1, 3], "output": ["Lyon", "Lyon"]}), gold=["Paris"])
    assert wrong == {1: "Lyon", 3: "Lyon"}
    assert inspect.distractor_ks(ranking, wrong) == {}
    # One passage that answers otherwise makes the answer depend on the passage: the others are flagged at k=3.
    varied = ranking.assign(output=["Paris", "lyon", "Lyon"])
    assert inspect.distractor_ks(varied, wrong) == {"p2": [3], "p3": [3]}


# --- verdicts -------------------------------------------------------------------------------------------------

def test_verdicts_pivot_to_judges_by_k():
    rows = [(judge, reference, k, (k + len(judge)) % 2 == 0)
            for k in (5, 1) for judge in ("llm", "em") for reference in ("gold_answers", "semi_gold")]
    verdicts = pd.DataFrame(rows, columns=["judge", "reference", "k", "verdict"]).assign(evidence="")
    pivot = inspect.verdict_pivot(verdicts.drop(index=0))  # one verdict missing
    assert pivot.shape == (4, 2) and list(pivot.columns) == ["k=1", "k=5"]
    assert list(pivot.index) == ["exact match vs semi-gold answers", "exact match vs gold answers",
                                 "LLM (few-shot prompt) vs semi-gold answers", "LLM (few-shot prompt) vs gold answers"]
    # verdict = (k + len(judge)) is even: "em" never, "llm" always; the dropped row shows "–".
    assert pivot.iloc[:2].to_numpy().tolist() == [["No", "No"], ["No", "No"]]
    assert pivot.iloc[2:].to_numpy().tolist() == [["Yes", "Yes"], ["Yes", "–"]]


# --- worklist links -----------------------------------------------------------------------------------------------

def test_row_links_name_each_query_once_in_the_list_and_drop_it_past_the_limit():
    from tests.ui.test_app import link_walk

    rows = ["nq:3", "nq:1", "nq:3", "nq:0"]  # a query with two failure cases has two rows
    links = worklist.worklist_links("Query_inspector", "fixture", rows, RUN_ORDER, NAME)
    assert [link_walk(url, RUN_ORDER) for url in links] == [("fixture", q, ["nq:3", "nq:1", "nq:0"], NAME)
                                                            for q in rows]
    plain = worklist.worklist_links("Query_inspector", "fixture", rows, RUN_ORDER, NAME, limit=2)
    assert [link_walk(url, RUN_ORDER) for url in plain] == [("fixture", q, [], "") for q in rows]


def test_a_long_list_is_cut_to_the_first_queries_and_its_name_says_so():
    order = [f"q{i}" for i in range(5_000)]
    ids, name = worklist.capped(order[::-1], "everything")
    assert ids == order[::-1][:worklist.MAX_QUERIES] and name == "everything (first 2,000 of 5,000)"
    assert worklist.capped(["q1", "q1", "q2"], "short") == (["q1", "q2"], "short")


def test_switching_run_with_a_list_in_the_url_warns_instead_of_walking_other_queries(runs_env):
    run = build_small_run()
    write_run(dataclasses.replace(run, queries=list(reversed(run.queries))), runs_env.parent / "reversed.sqlite")
    app = open_list(run="fixture")
    assert counter(app) == escape_markdown(f"Case 1 of 3 · {NAME}")
    app.selectbox(key="app.run.widget").set_value("reversed").run()
    assert not app.exception and app.query_params["run"] == "reversed"
    # The same positions in the reversed run would be other queries (nq:1, nq:4, nq:2): the list is refused.
    assert any(escape_markdown("made for another run") in w for w in warnings(app))
    assert len(query_box(app).options) == 6 and query_box(app).value == "nq:4"


def test_a_scatter_selection_links_walk_the_selected_queries_worst_answer_first():
    from tests.ui.test_app import link_walk
    from ui.render_correlations import points_view

    points = pd.DataFrame({"query_id": ["nq:0", "nq:2", "nq:5"], "question": ["a", "b", "c"],
                           "value": [0.2, 0.9, 0.5], "e2e": [1.0, 0.0, 0.0]})
    view = points_view(points, "fixture", "P@5", "E2E EM@5", RUN_ORDER, "selected: eRAG EM P@5")
    assert view["Query"].tolist() == ["nq:2", "nq:5", "nq:0"]  # wrong answers first, then the higher measure
    assert [link_walk(url, RUN_ORDER) for url in view["Inspect"]] == [
        ("fixture", q, ["nq:2", "nq:5", "nq:0"], "selected: eRAG EM P@5") for q in view["Query"]]


def test_a_long_run_offers_a_window_around_the_query_and_a_search_over_all(runs_env, monkeypatch):
    monkeypatch.setattr(inspect, "SELECT_WINDOW", 3)
    app = start(INSPECTOR, query="nq:4")
    box = query_box(app)
    assert box.value == "nq:4" and [o.rsplit("[", 1)[1][:-1] for o in box.options] == ["nq:3", "nq:4", "nq:5"]
    assert "numbers 4-6 of the 6" in box.label
    app.button(key=inspect.PREV_KEY).click().run()
    app.button(key=inspect.PREV_KEY).click().run()  # out of the first window: the window follows
    assert query_box(app).value == "nq:2" and app.query_params["query"] == "nq:2"
    assert [o.rsplit("[", 1)[1][:-1] for o in query_box(app).options] == ["nq:1", "nq:2", "nq:3"]
    with RunReader(runs_env) as reader:
        questions = dict(zip(*reader.questions().to_dict("list").values()))
    word = questions["nq:5"].split()[-1].strip("?").upper()  # any case
    app.text_input(key=inspect.SEARCH_KEY).input(word).run()
    expected = sorted({*inspect.search_queries(questions, RUN_ORDER, word), "nq:2"}, key=RUN_ORDER.index)
    assert "nq:5" in expected and [o.rsplit("[", 1)[1][:-1] for o in query_box(app).options] == expected
    app.selectbox(key=query_box(app).key).select(f"{questions['nq:5']}  [nq:5]").run()
    assert app.query_params["query"] == "nq:5" and query_box(app).value == "nq:5"
    app.text_input(key=inspect.SEARCH_KEY).input("nq:0").run()  # a query id
    assert [o.rsplit("[", 1)[1][:-1] for o in query_box(app).options] == ["nq:0", "nq:5"]
    assert not warnings(app) and not app.exception


def test_a_long_list_keeps_its_window_and_counter(runs_env, monkeypatch):
    monkeypatch.setattr(inspect, "SELECT_WINDOW", 2)
    app = open_list(query="nq:3")
    assert counter(app) == escape_markdown(f"Case 3 of 3 · {NAME}")
    assert [o.rsplit("[", 1)[1][:-1] for o in query_box(app).options] == ["nq:1", "nq:3"]
    app.button(key=inspect.PREV_KEY).click().run()
    app.button(key=inspect.PREV_KEY).click().run()
    assert query_box(app).value == "nq:4" and counter(app) == escape_markdown(f"Case 1 of 3 · {NAME}")
    assert [o.rsplit("[", 1)[1][:-1] for o in query_box(app).options] == ["nq:4", "nq:1"]
    assert not warnings(app) and not app.exception
