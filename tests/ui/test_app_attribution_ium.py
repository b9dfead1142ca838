"""AppTest tests of the citations page (attributed-answer runs) and the agents page (IUM runs), read through
``$RAGEVAL_RUNS_DIR/attribution`` and ``$RAGEVAL_RUNS_DIR/ium``.

The attribution run is ``tests/attribution_fixtures.build_hagrid_run`` (4 real HAGRID queries, a fake generator,
the word-containment NLI, BM25; no LLM), with a script tag written into one input passage afterwards. The IUM run
is hand-made (:func:`hand_made_ium_result`: three agents, every kind of method, scores chosen below) and written
with the engine's own ``write_ium_run``; no training. Expected values are read back from the run files, recomputed
from the hand-made tables, or restated from the construction (cited where used).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rageval.attribution.experiment import GOLD_SCENARIO
from rageval.ium.experiment import MAIN_METHODS, IumPlan, IumResult, significance_table, write_ium_run
from rageval.ium.results_section import ium_sections
from rageval.stats.paired import jaccard, top_k_kendall_tau
from rageval.store import list_runs
from rageval.store.attribution import AttributionReader
from rageval.store.ium import read_ium_run
from tests.app_helpers import captions, frame_with, vega_charts
from tests.ui.test_app import HOME, start
from ui.render import escape_markdown, format_label

REPO = Path(__file__).resolve().parents[2]
CITATIONS = str(REPO / "app_pages" / "3_Citations.py")
AGENTS = str(REPO / "app_pages" / "4_Agents_IUM.py")
SCRIPT = "<script>alert(1)</script>"
ATTRIBUTION_RUN = "hagrid-test"
IUM_RUN = "ium-test"


# --- the attribution run ----------------------------------------------------------------------------------

def shown_answer(path: Path) -> tuple[str, int, int]:
    """(query id, statements, passages) of the gold answer ``0`` the tests open: the first whose statement count
    differs from its passage count (both at least 2), so the heatmap's orientation is checked."""
    with AttributionReader(path) as reader:
        statements = reader.frame("statements", "scenario = ? AND answer_id = '0'", (GOLD_SCENARIO,))
        inputs = reader.frame("input_passages", "scenario = ?", (GOLD_SCENARIO,))
    n_statements = statements.groupby("query_id").size()
    n_inputs = inputs.groupby("query_id").size()
    for query_id, n in n_statements.items():
        m = n_inputs.get(query_id, 0)
        if n >= 2 and m >= 2 and n != m:
            return query_id, int(n), int(m)
    raise AssertionError("no gold answer with 2+ statements and 2+ passages of different counts")


@pytest.fixture(scope="module")
def attribution_dir(tmp_path_factory, corpus) -> Path:
    """A runs folder whose ``attribution/`` holds the 4-query HAGRID run, with :data:`SCRIPT` appended to the title
    and text of passage [1] of the gold answer :func:`shown_answer` picks."""
    from rageval.data import HAGRID_FILE, read_hagrid
    from rageval.paths import DATA_DIR
    from tests.attribution_fixtures import build_hagrid_run

    built, _, _ = build_hagrid_run(tmp_path_factory.mktemp("hagrid-build"), corpus,
                                   read_hagrid(DATA_DIR / HAGRID_FILE))
    runs = tmp_path_factory.mktemp("attribution-runs")
    path = runs / "attribution" / f"{ATTRIBUTION_RUN}.sqlite"
    path.parent.mkdir()
    shutil.copyfile(built, path)
    query_id, _, _ = shown_answer(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE input_passages SET title = title || ?, text = text || ? "
                           "WHERE scenario = ? AND query_id = ? AND number = 1",
                           (" " + SCRIPT, " " + SCRIPT, GOLD_SCENARIO, query_id))
    connection.close()
    return runs


@pytest.fixture
def attribution_env(attribution_dir, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(attribution_dir))
    return attribution_dir / "attribution" / f"{ATTRIBUTION_RUN}.sqlite"


@pytest.mark.model
def test_citations_page_shows_the_metric_table_of_every_scenario(attribution_env):
    app = start(CITATIONS)
    with AttributionReader(attribution_env) as reader:
        means, settings = reader.metric_means(), reader.settings()
    table = frame_with(app, "AutoAIS cit")
    # rageval.attribution.results_section.SCENARIO_ORDER: the gold answers first, then G, RTG-*, GTR.
    assert list(table.index) == ["gold-answer", "G", "RTG-gold", "RTG-vanilla", "RTG-monot5", "RTG-query-gen", "GTR"]
    assert list(table.columns) == ["AutoAIS cit", "AutoAIS pssg", "ALCE P", "ALCE R", "Overlap P", "Overlap R", "BLEU",
                                   "ROUGE-L P", "ROUGE-L R", "ROUGE-L F", "BERTScore P", "BERTScore R", "BERTScore F",
                                   "n"]
    expected = means.set_index(["scenario", "metric"])["value"]
    for scenario in table.index:
        assert table.at[scenario, "n"] == means[means["scenario"] == scenario]["answers"].max()
        for shown, metric, scale in (("AutoAIS cit", "autoais_cit", 100), ("ALCE R", "alce_recall", 100),
                                     ("Overlap P", "overlap_p", 100), ("BLEU", "bleu", 1),
                                     ("BERTScore F", "bertscore_f", 100)):
            if (scenario, metric) in expected.index:  # a column with a gap is shown as text, 1 decimal (ui.format)
                cell = table.at[scenario, shown]
                value = scale * expected[(scenario, metric)]
                assert cell == (f"{value:.1f}" if isinstance(cell, str) else pytest.approx(value))
            else:
                assert table.at[scenario, shown] == "–"  # G has no citation metrics, the gold answers no BLEU
    # tests/attribution/test_attribution.py: RTG-gold copies its first quote and cites it, so AutoAIS_cit is 100%.
    assert table.at["RTG-gold", "AutoAIS cit"] == "100.0"
    assert table.at["gold-answer", "n"] == 1318 and table.at["RTG-gold", "n"] == 4
    text = captions(app)
    assert escape_markdown(f"NLI {settings['nli']}") in text and escape_markdown(settings["generator"]) in text
    assert escape_markdown("1,342 answers") in text  # 1318 gold answers + 6 scenarios x 4 queries


@pytest.mark.model
def test_citations_page_shows_an_answer_with_statements_heatmap_and_literal_passages(attribution_env):
    query_id, n_statements, n_passages = shown_answer(attribution_env)
    app = start(CITATIONS, scenario=GOLD_SCENARIO, query=query_id, answer="0")
    assert app.selectbox(key="citations.scenario.widget").value == GOLD_SCENARIO
    assert app.selectbox(key="citations.query_id.widget").value == query_id
    assert dict(app.query_params) == {"run": ATTRIBUTION_RUN, "scenario": GOLD_SCENARIO, "query": query_id,
                                      "answer": "0"}
    with AttributionReader(attribution_env) as reader:
        where = ("scenario = ? AND query_id = ? AND answer_id = '0'", (GOLD_SCENARIO, query_id))
        answer = reader.frame("answers", *where).iloc[0]
        statements = reader.frame("statements", *where).sort_values("statement")
        inputs = reader.frame("input_passages", "scenario = ? AND query_id = ?", where[1]).sort_values("number")
        matrix = reader.entailment_matrix(GOLD_SCENARIO, query_id, "0")

    texts = [t.value for t in app.text]
    assert texts[0] == answer["text"]
    shown = frame_with(app, "Statement")
    assert list(shown["Statement"]) == list(statements["text"])
    assert list(shown["Cites"]) == [" ".join(f"[{n}]" for n in json.loads(c)) or "none"
                                    for c in statements["citations"]]
    # A statement citing nothing is not judged ("–", as the legend says), whatever the run stores for it (0).
    assert list(shown["NLI: a citation supports it (AutoAIS)"]) == [
        format_label(v) if c != "[]" else "–" for v, c in zip(statements["supported"], statements["citations"])]
    assert list(shown["Human: attributable"]) == list(statements["human_attributable"].map(format_label))

    # The heatmap (Vega-Lite): one data row per statement x passage cell, the stored p(entail), S1 on top.
    [(heatmap, cells)] = vega_charts(app)
    assert len(cells) == n_statements * n_passages == matrix.size
    grid = cells.pivot(index="statement", columns="passage", values="p_entail")
    rows, columns = [f"S{i}" for i in range(1, n_statements + 1)], [f"[{n}]" for n in inputs["number"]]
    assert np.allclose(grid.loc[rows, columns].to_numpy(), matrix.to_numpy())
    x, y = heatmap["encoding"]["x"], heatmap["encoding"]["y"]
    assert (x["field"], x["sort"], y["field"], y["sort"]) == ("passage", columns, "statement", rows)
    assert heatmap["title"] and x["title"] and y["title"]
    [colour] = [layer["encoding"]["color"] for layer in heatmap["layer"] if layer["mark"]["type"] == "rect"]
    assert colour["field"] == "p_entail" and colour["scale"] == {"scheme": "blues", "domain": [0.0, 1.0]}
    assert "p(passage entails statement)" in [t["title"] for t in heatmap["encoding"]["tooltip"]]
    numbers = set(inputs["number"])
    cited = sorted((f"S{s + 1}", f"[{n}]") for s, c in zip(statements["statement"], statements["citations"])
                   for n in set(json.loads(c)) if n in numbers)
    assert cited and sorted(cells[cells["cited"] == "yes"][["statement", "passage"]].itertuples(index=False,
                                                                                                  name=None)) == cited
    [circles] = [layer for layer in heatmap["layer"] if layer["mark"]["type"] == "point"]
    assert circles["transform"][0] == {"filter": "datum.cited === 'yes'"}  # a circle on each cited cell only

    # Passage text (with its script tag) is shown verbatim as text; the title, in Markdown, is escaped.
    assert texts[1:] == list(inputs["text"]) and any(SCRIPT in t for t in texts[1:])
    headers = [m.value for m in app.markdown if m.value.startswith("**\\[1\\]")]
    assert headers and escape_markdown(SCRIPT) in headers[0]
    assert not any(SCRIPT in m.value for m in app.markdown) and not any(SCRIPT in c.value for c in app.caption)


@pytest.mark.model
def test_choosing_scenario_query_and_answer_updates_the_url(attribution_env):
    app = start(CITATIONS)
    with AttributionReader(attribution_env) as reader:
        generated = reader.frame("answers", "scenario = 'RTG-vanilla'")
        questions = dict(zip(reader.frame("queries")["query_id"], reader.frame("queries")["text"]))
    assert app.query_params["scenario"] == GOLD_SCENARIO  # the first scenario of the table
    app.selectbox(key="citations.scenario.widget").select("RTG-vanilla").run()
    assert app.query_params["scenario"] == "RTG-vanilla"
    assert app.selectbox(key="citations.query_id.widget").options == [f"{questions[q]}  [{q}]"
                                                                        for q in generated["query_id"]]
    last = generated["query_id"].iloc[-1]
    app.selectbox(key="citations.query_id.widget").select(last).run()
    assert not app.exception and app.query_params["query"] == last and app.query_params["answer"] == "0"
    assert app.text[0].value == generated["text"].iloc[-1]
    assert app.markdown[0].value == f"**{escape_markdown(questions[last])}**"
    assert len(app.text) == 1 + 2  # the answer, then RTG-vanilla's k = 2 input passages

    # A bad value in the URL falls back to the first option; the closed-book scenario has no heatmap.
    app = start(CITATIONS, scenario="G", query="no-such-query")
    assert app.query_params["query"] == generated["query_id"].iloc[0]
    assert not app.get("vega_lite_chart") and "closed-book" in captions(app)


@pytest.mark.model
def test_citations_page_shows_the_human_agreement_table(attribution_env):
    app = start(CITATIONS)
    with AttributionReader(attribution_env) as reader:
        agreement = reader.frame("agreement")
    shown = frame_with(app, "Spearman")
    assert list(shown["Level"]) == list(agreement["level"]) and list(shown["n"]) == list(agreement["n"])
    assert list(shown["Pearson"]) == pytest.approx(list(agreement["pearson"]))
    assert list(shown["Spearman"]) == pytest.approx(list(agreement["spearman"]))
    assert list(shown["Accuracy %"]) == pytest.approx(list(100 * agreement["accuracy"]))
    assert "AutoAIS cit" in set(shown["Automatic score"])


@pytest.mark.model
def test_an_attribution_run_is_not_an_erag_run(attribution_env, monkeypatch):
    """The home page lists only eRAG runs: a runs folder holding only an attribution run is empty there."""
    assert list_runs(attribution_env.parent.parent) == []
    assert "No run files" in start(HOME).info[0].value


# --- the IUM run ------------------------------------------------------------------------------------------

AGENT_SPECS = (("nq/a/em", "nq_open", 2), ("nq/b/f1", "nq_open", 2), ("hotpotqa/a/em", "hotpotqa", 2))
TEST_QUERIES = {"nq_open": ("nq:1", "nq:2", "nq:3"), "hotpotqa": ("hp:1", "hp:2")}
ITERATION_METHODS = [f"{label}@t{t}" for label in ("offline-IUM", "offline-IUM-nonpersonalised") for t in (0, 1, 2)]
ONLINE_METHODS = ["online-IUM@b5", "online-IUM@b15"]
METHODS = [*MAIN_METHODS, *ITERATION_METHODS, *ONLINE_METHODS]
PERSONALISED = ("offline-IUM", "offline-IUM-nonpersonalised@t1", "uRAG")


def hand_score(method: int, agent: int, query: int) -> float:
    """Agent 1 (token F1) gets graded scores, the others 0/1; the pattern differs per method, agent and query."""
    value = (3 * method + 5 * agent + 7 * query) % 4
    return value / 4 if agent == 1 else float(value >= 2)


def hand_made_ium_result() -> IumResult:
    """An IUM run with three agents (two NQ agents sharing 3 test queries, one HotpotQA agent with 2, so the macro
    average differs from the mean over all answers), every method of :data:`METHODS`, :func:`hand_score` scores and
    2-passage lists; significance and personalisation computed from them with the engine's own functions."""
    agents = pd.DataFrame([{"name": name, "dataset": dataset, "task_id": dataset.split("_")[0], "model_id": "m",
                            "k": k, "utility": name.rsplit("/", 1)[1], "generator": f"fake:{name}"}
                           for name, dataset, k in AGENT_SPECS])
    queries = pd.DataFrame([(name, "test", qid, f"Question {qid}?", f"answer {qid}") for name, dataset, _ in AGENT_SPECS
                            for qid in TEST_QUERIES[dataset]] + [(AGENT_SPECS[0][0], "train", "nq:100", "Q?", "a")],
                           columns=["agent", "split", "query_id", "text", "answers"])
    served, outcomes = [], []
    for m, method in enumerate(METHODS):
        for a, (name, dataset, k) in enumerate(AGENT_SPECS):
            for q, qid in enumerate(TEST_QUERIES[dataset]):
                ids = [f"p{(m + q) % 5}", f"p{5 + (m * a + q) % 4}"][:k]
                served += [(method, name, qid, rank, pid) for rank, pid in enumerate(ids, start=1)]
                outcomes.append((method, name, qid, f"answer of {name} to {qid} under {method}",
                                 hand_score(m, a, q)))
    served = pd.DataFrame(served, columns=["method", "agent", "query_id", "rank", "passage_id"])
    outcomes = pd.DataFrame(outcomes, columns=["method", "agent", "query_id", "output", "score"])
    lists = served.groupby(["method", "agent", "query_id"])["passage_id"].apply(list)
    personalisation = pd.DataFrame(
        [(method, "nq/a/em", "nq/b/f1", qid, top_k_kendall_tau(lists[method, "nq/a/em", qid],
                                                               lists[method, "nq/b/f1", qid]),
          jaccard(lists[method, "nq/a/em", qid], lists[method, "nq/b/f1", qid]))
         for method in PERSONALISED for qid in TEST_QUERIES["nq_open"]],
        columns=["method", "agent_a", "agent_b", "query_id", "kendall_tau", "jaccard"])
    plan = IumPlan(num_train=1, num_test=3)
    settings = {"kind": "ium", "plan": {**dataclasses.asdict(plan), "agents": agents.to_dict("records")},
                "generators": dict(zip(agents["name"], agents["generator"])), "command": "hand-made (tests)",
                "first_stage": "BM25 top 30 (hand-made)", "dense": None, "online_default_batch_size": 5,
                "seconds": 0.0}
    return IumResult(settings=settings, agents=agents, queries=queries, served=served, outcomes=outcomes,
                     feedback=pd.DataFrame(columns=["phase", "agent", "query_id", "passage_id", "utility"]),
                     online_trained_on=pd.DataFrame(columns=["method", "agent", "query_id", "trained_on"]),
                     significance=significance_table(outcomes), personalisation=personalisation)


@pytest.fixture(scope="module")
def ium_dir(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("ium-runs")
    write_ium_run(hand_made_ium_result(), runs / "ium" / f"{IUM_RUN}.sqlite")
    return runs


@pytest.fixture
def ium_env(ium_dir, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(ium_dir))
    return ium_dir / "ium" / f"{IUM_RUN}.sqlite"


def agent_means(outcomes: pd.DataFrame, method: str) -> dict[str, float]:
    rows = outcomes[outcomes["method"] == method]
    return rows.groupby("agent")["score"].mean().to_dict()


def test_agents_page_shows_scores_per_agent_and_the_macro_average(ium_env):
    app = start(AGENTS)
    outcomes = read_ium_run(ium_env)[1]["outcomes"]
    table = frame_with(app, "offline-IUM")
    assert list(table.index) == [name for name, _, _ in sorted(AGENT_SPECS)] + ["macro average"]
    assert list(table.columns) == [*MAIN_METHODS, "n"]
    assert list(table["n"]) == [2, 3, 3, 3]  # test queries per agent (TEST_QUERIES); 3 agents on the macro row
    for method in MAIN_METHODS:
        means = agent_means(outcomes, method)
        for agent, mean in means.items():
            assert table.at[agent, method] == pytest.approx(100 * mean)
        macro = sum(means.values()) / len(means)
        assert table.at["macro average", method] == pytest.approx(100 * macro)
        assert table.at["macro average", method] == pytest.approx(table[method].iloc[:3].mean())
    # With 2 HotpotQA and 3 NQ test queries, the macro average is not the mean over all answers for some method.
    assert any(table.at["macro average", m] != pytest.approx(100 * outcomes[outcomes["method"] == m]["score"].mean())
               for m in MAIN_METHODS)

    # The grouped bars (Vega-Lite): one data row per agent x method, the table's numbers; the axis starts at 0.
    bars, drawn = next((spec, rows) for spec, rows in vega_charts(app) if spec["mark"]["type"] == "bar")
    encoding = bars["encoding"]
    assert encoding["color"]["sort"] == encoding["xOffset"]["sort"] == list(table.index)  # a bar per agent, grouped
    assert encoding["x"]["sort"] == list(MAIN_METHODS)
    assert len(drawn) == len(table.index) * len(MAIN_METHODS)
    for row in drawn.itertuples():
        assert row.score == pytest.approx(table.at[row.agent, row.method])
    assert bars["title"] and encoding["y"]["title"] == "downstream score (%)" and encoding["y"]["scale"]["zero"]
    assert {"field": "score", "type": "quantitative", "format": ".1f", "title": "downstream score (%)"} in \
        encoding["tooltip"]
    assert escape_markdown("fake:nq/a/em") in captions(app)  # the generators that produced the scores


def test_agents_page_shows_the_iteration_and_batch_size_curves(ium_env):
    app = start(AGENTS)
    outcomes = read_ium_run(ium_env)[1]["outcomes"]
    charts = {spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"]: (spec, rows)
              for spec, rows in vega_charts(app)}
    iterations, points = next(chart for title, chart in charts.items() if title.startswith("Offline IUM"))
    assert iterations["mark"]["type"] == "line" and iterations["encoding"]["color"]["field"] == "engine"
    assert set(points["engine"]) == {"personalised", "non-personalised"}
    for name, label in (("personalised", "offline-IUM"), ("non-personalised", "offline-IUM-nonpersonalised")):
        line = points[points["engine"] == name].sort_values("t")
        assert list(line["t"]) == [0, 1, 2]
        expected = [100 * pd.Series(agent_means(outcomes, f"{label}@t{t}")).mean() for t in line["t"]]
        assert list(line["score"]) == pytest.approx(expected)
    batches, line = next(chart for title, chart in charts.items() if title.startswith("Online IUM"))
    assert list(line["b"]) == [5, 15]
    assert list(line["score"]) == pytest.approx(
        [100 * pd.Series(agent_means(outcomes, m)).mean() for m in ONLINE_METHODS])
    assert batches["encoding"]["x"]["title"].startswith("online batch size")
    for spec in (iterations, batches):  # scores on an axis from 0, ticks at the iterations / batch sizes drawn
        assert spec["encoding"]["y"]["scale"]["zero"] is True
    assert iterations["encoding"]["x"]["axis"]["values"] == [0, 1, 2] and batches["encoding"]["x"]["axis"][
        "values"] == [5, 15]

    # The results document (rageval.ium.results_section) reads the same curves from the same engine functions.
    document = "\n".join(ium_sections(ium_env))
    t2 = 100 * pd.Series(agent_means(outcomes, "offline-IUM@t2")).mean()
    t2_plain = 100 * pd.Series(agent_means(outcomes, "offline-IUM-nonpersonalised@t2")).mean()
    assert f"| 2 | {t2:.1f} | {t2_plain:.1f} |" in document
    assert f"| 15 | {100 * pd.Series(agent_means(outcomes, 'online-IUM@b15')).mean():.1f} |" in document


def test_agents_page_shows_mcnemar_and_personalisation(ium_env):
    app = start(AGENTS)
    _, tables = read_ium_run(ium_env)
    expected = significance_table(tables["outcomes"])
    pooled = expected[expected["agent"] == "all agents"]
    shown = frame_with(app, "Only A right")
    assert list(zip(shown["Method A"], shown["Method B"])) == list(zip(pooled["method_a"], pooled["method_b"]))
    assert list(shown["Only A right"]) == list(pooled["only_a"]) and list(shown["p-value"]) == list(pooled["p_value"])
    assert set(shown["n"]) == {8}  # 3 + 3 + 2 test queries pooled
    app.selectbox(key="ium.significance_agent").select("hotpotqa/a/em").run()
    assert set(frame_with(app, "Only A right")["n"]) == {2}

    personalisation = frame_with(app, "Jaccard")
    rows = tables["personalisation"].groupby("method")[["kendall_tau", "jaccard"]].mean()
    assert sorted(personalisation["Engine"]) == sorted(PERSONALISED)
    for row in personalisation.to_dict("records"):
        assert row["Jaccard"] == pytest.approx(rows.at[row["Engine"], "jaccard"]) and row["n"] == 3
        assert row["Kendall's tau"] == pytest.approx(rows.at[row["Engine"], "kendall_tau"], nan_ok=True)
    heatmaps = [(spec, cells) for spec, cells in vega_charts(app) if "layer" in spec]
    assert len(heatmaps) == 2
    for (spec, cells), statistic, scale in zip(heatmaps, ("kendall_tau", "jaccard"),
                                               ({"scheme": "redblue", "domain": [-1.0, 1.0]},
                                                {"scheme": "blues", "domain": [0.0, 1.0]})):
        assert spec["encoding"]["y"]["sort"] == ["nq/a/em ↔ nq/b/f1"]
        assert sorted(spec["encoding"]["x"]["sort"]) == sorted(PERSONALISED)
        assert spec["layer"][0]["encoding"]["color"]["scale"] == scale
        defined = rows[statistic].dropna()  # a pair whose tau is undefined on an engine has no cell there
        assert sorted(cells["engine"]) == sorted(defined.index)
        for cell in cells.itertuples():
            assert cell.pair == "nq/a/em ↔ nq/b/f1" and cell.value == pytest.approx(defined[cell.engine])


def test_agents_page_shows_the_lists_each_method_served(ium_env):
    app = start(AGENTS, agent="nq/b/f1", query="nq:2")
    assert app.query_params["agent"] == "nq/b/f1" and app.query_params["query"] == "nq:2"
    _, tables = read_ium_run(ium_env)
    served = frame_with(app, "Served passages (rank order)")
    assert list(served["Method"][:len(MAIN_METHODS)]) == list(MAIN_METHODS)
    assert set(served["Method"]) == set(METHODS)
    lists = tables["served"].query("agent == 'nq/b/f1' and query_id == 'nq:2'").sort_values("rank")
    outcomes = tables["outcomes"].query("agent == 'nq/b/f1' and query_id == 'nq:2'").set_index("method")
    for row in served.to_dict("records"):
        assert row["Served passages (rank order)"] == " · ".join(lists[lists["method"] == row["Method"]]["passage_id"])
        assert row["Answer"] == outcomes.at[row["Method"], "output"]
        assert row["Score %"] == pytest.approx(100 * outcomes.at[row["Method"], "score"])
    assert app.markdown[-1].value == f"**{escape_markdown('Question nq:2?')}**"

    app.selectbox(key="ium.agent.widget").select("hotpotqa/a/em").run()
    assert not app.exception
    assert app.query_params["agent"] == "hotpotqa/a/em" and app.query_params["query"] == "hp:1"  # its first query
    assert app.selectbox(key="ium.query_id.widget").options == ["Question hp:1?  [hp:1]", "Question hp:2?  [hp:2]"]


# --- empty states -------------------------------------------------------------------------------------------

def test_empty_folders_explain_how_to_build_each_kind_of_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    (tmp_path / "attribution").mkdir()
    (tmp_path / "attribution" / "stray.sqlite").write_bytes(b"not SQLite")  # not listed: not an attribution run
    citations = (f"rageval evaluate-citations ANSWERS.jsonl --out {tmp_path / 'attribution' / 'my-answers.sqlite'}"
                 "   # docs/citations_format.md")
    for script, kind, command in ((CITATIONS, "attribution", citations),
                                  (AGENTS, "IUM", "rageval ium --help")):
        app = start(script)
        assert escape_markdown(f"No {kind} run files") in app.info[0].value
        assert app.code[0].value == command
        assert not app.dataframe and not app.get("vega_lite_chart")


def test_an_unreadable_attribution_run_shows_an_error_naming_the_file(tmp_path, monkeypatch):
    from rageval.store import ATTRIBUTION_APPLICATION_ID

    (tmp_path / "attribution").mkdir()
    with sqlite3.connect(tmp_path / "attribution" / "future.sqlite") as connection:
        connection.execute(f"PRAGMA application_id = {ATTRIBUTION_APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 99")  # a schema this rageval does not read
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.close()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(CITATIONS)
    shown = app.error[0].value.replace("\\", "")  # the message is escaped for Markdown
    assert "future.sqlite" in shown and "schema version 99" in shown
    assert not app.dataframe


def provenance_repeats(app) -> int:
    """How many captions repeat the page's provenance line (the caption under the heading: ``Run NAME · ...``)."""
    line = next(c.value for c in app.caption if c.value.startswith(escape_markdown("Run ")))
    marker = line.split(" · ", 1)[1][:30]
    return sum(marker in c.value for c in app.caption)


def test_citations_and_agents_say_the_provenance_once(attribution_env, ium_dir, monkeypatch):
    """Issue 42: Citations repeated the provenance line in 4 captions and Agents in 7; now once, under the heading."""
    query_id, _, _ = shown_answer(attribution_env)
    assert provenance_repeats(start(CITATIONS, scenario=GOLD_SCENARIO, query=query_id, answer="0")) == 1
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(ium_dir))
    assert provenance_repeats(start(AGENTS)) == 1
