"""``rageval report RUN --html OUT``: on a shipped run the file holds the Findings page's 2 x 2 (checked against the
run's raw rankings, gold passages and E2E scores, and against rageval.findings) and its sentences (those
rageval.findings computes for the run); it loads nothing from anywhere (no http(s) URL in any src, href or url());
and text from the run (a passage or a question holding ``<script>``) is escaped, never markup."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rageval import findings
from rageval.cli import main
from rageval.html_report import render_html, write_html_report
from rageval.html_report_data import compute_report, judge_name, method_name
from rageval.paths import REPO_ROOT
from rageval.store import FailureCase, RunReader, Verdict, aggregates, write_run
from rageval.types import Ranking, ScoredPassage
from tests.run_fixtures import INJECTION, INJECTION_ID, build_small_run

SHIPPED_RUNS = REPO_ROOT / "data" / "runs"
SHIPPED = SHIPPED_RUNS / "nq_open-bm25-gemma3_270m.sqlite"
QUESTION_INJECTION = "<script>window.__pwned=3</script>"
REASON_INJECTION = '<img src=x onerror="window.__pwned=4">'


class Parsed(HTMLParser):
    """The parts of the report a test reads: the 2 x 2 cells' counts (by ``data-cell``), the sentences (``#sentences
    li``), every attribute, and the text of the whole document."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.cells: dict[str, int] = {}
        self.sentences: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.text: list[str] = []
        self._cell: str | None = None
        self._in_count = False
        self._in_sentences = False
        self._sentence: list[str] | None = None
        self.feed(document)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        values = dict(attrs)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if "data-cell" in values:
            self._cell = values["data-cell"]
        if values.get("class") == "count":
            self._in_count = True
        if values.get("id") == "sentences":
            self._in_sentences = True
        if tag == "li" and self._in_sentences:
            self._sentence = []

    def handle_endtag(self, tag):
        if tag == "ul":
            self._in_sentences = False
        if tag == "li" and self._sentence is not None:
            self.sentences.append("".join(self._sentence))
            self._sentence = None

    def handle_data(self, data):
        self.text.append(data)
        if self._in_count and self._cell is not None:
            self.cells[self._cell] = int(data.replace(",", ""))
            self._in_count, self._cell = False, None
        if self._sentence is not None:
            self._sentence.append(data)


@pytest.fixture(scope="module")
def shipped_report(tmp_path_factory):
    """``rageval report <shipped run's name> --html OUT`` through the command line, its leaderboard over the shipped
    runs only (an empty user runs folder)."""
    folder = tmp_path_factory.mktemp("report")
    out = folder / "report.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(SHIPPED_RUNS))
        patch.setenv("RAGEVAL_RUNS_DIR", str(folder / "runs"))
        assert main(["report", SHIPPED.stem, "--html", str(out)]) == 0
    document = out.read_text(encoding="utf-8")
    return document, Parsed(document)


def test_two_by_two_counts_the_runs_own_rows(shipped_report):
    """Each cell counted from the raw tables (gold passage ids, the top k of each ranking, the stored E2E score at
    k >= 0.5), and equal to rageval.findings' table."""
    _, parsed = shipped_report
    with RunReader(SHIPPED) as reader:
        k = reader.main_k()
        rankings = {q: r.passage_ids[:k] for q, r in reader.rankings().items()}
        scores = dict(zip(*reader.e2e_scores(k).T.values))
        counts = {"11": 0, "10": 0, "01": 0, "00": 0}
        for query in reader.queries():
            if not query.gold_passage_ids or query.query_id not in scores:
                continue
            retrieved = bool(set(query.gold_passage_ids) & set(rankings.get(query.query_id, ())))
            counts[f"{int(retrieved)}{int(scores[query.query_id] >= 0.5)}"] += 1
        table = findings.compute_gold_answer_table(aggregates.read_gold_retrieval(reader, k), k)
    assert parsed.cells == counts
    assert counts == {f"{int(c.gold_retrieved)}{int(c.answer_right)}": c.count for c in table.cells}
    assert sum(counts.values()) == table.n == 300


def test_sentences_are_those_findings_computes(shipped_report):
    _, parsed = shipped_report
    with RunReader(SHIPPED) as reader:
        k = reader.main_k()
        table = findings.compute_gold_answer_table(aggregates.read_gold_retrieval(reader, k), k)
        expected = [
            findings.correlation_finding(reader.correlations(k), k, method_name),
            findings.two_by_two_finding(table),
            findings.label_share_finding("llm_relevance", *aggregates.read_label_share(reader, "llm_relevance"),
                                         name=method_name),
            findings.failure_finding(aggregates.read_failure_counts(reader), k, judge_name),
        ]
    assert all(f is not None for f in expected)
    assert parsed.sentences == [f.text for f in expected if f is not None]
    assert any("[" in s and "]" in s for s in parsed.sentences)  # the intervals are there


def test_chart_and_leaderboard_say_what_produced_them(shipped_report):
    document, parsed = shipped_report
    text = " ".join(parsed.text)
    with RunReader(SHIPPED) as reader:
        settings, k = reader.settings(), reader.main_k()
        methods = set(reader.correlations(k)["method"])
    for setting in ("model_id", "dataset", "retriever"):
        assert str(settings[setting]) in text
    assert f"k={k}" in text and "300 queries" in text
    drawn = set(re.findall(r"data-method='([^']+)'", document))
    assert drawn == methods  # one row per label method with a defined tau
    rows = re.search(r"<table class='data' id='leaderboard'>.*?</table>", document, re.S).group(0)
    # issue 39 item 9: the report goes to outsiders; by default it holds the run asked for, no other run's name
    assert rows.count("<tr") == 2 and f"{SHIPPED.stem} (this report)" in rows
    others = {p.stem for p in SHIPPED_RUNS.rglob("*.sqlite") if p.stem != SHIPPED.stem}
    assert others and not [name for name in others if name in document]


def test_other_runs_only_when_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(SHIPPED_RUNS))
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    small = injection_run(tmp_path / "small.sqlite")
    out = tmp_path / "with.html"
    assert main(["report", str(small), "--html", str(out), "--with-runs", SHIPPED.stem]) == 0
    rows = re.search(r"<table class='data' id='leaderboard'>.*?</table>", out.read_text(), re.S).group(0)
    assert rows.count("<tr") == 3 and SHIPPED.stem in rows and "small (this report)" in rows
    assert main(["report", str(small), "--html", str(out), "--all-runs"]) == 0
    rows = re.search(r"<table class='data' id='leaderboard'>.*?</table>", out.read_text(), re.S).group(0)
    shipped = {p.stem for p in SHIPPED_RUNS.rglob("*.sqlite") if p.parent.name not in ("attribution", "ium")}
    assert all(name in rows for name in shipped)


def test_bottom_line_k_sweep_and_glossary(shipped_report):
    """The bottom line's numbers are the report's own (E2E share at k, the best method's tau); the k sweep draws
    each label method's best family at every k with the taus k_sweep_from_frames computes from the raw tables."""
    from rageval.correlations import k_sweep_from_frames

    document, _ = shipped_report
    line = re.search(r"<p class='bottom-line' id='bottom-line'>(.*?)</p>", document, re.S).group(1)
    assert document.index("id='bottom-line'") < document.index("id='findings'")  # at the top
    with RunReader(SHIPPED) as reader:
        k = reader.main_k()
        mean, n = reader.e2e_mean(k)
        names = reader.measure_names()
        measures = reader.measures_of(list(zip(names["method"], names["measure"])))
        e2e = reader.e2e_table()[["query_id", "k", "score"]]
    assert line.startswith("Bottom line: ") and f"{mean:.0%}" in line and f"on {n:,} questions" in line
    sweep = k_sweep_from_frames(measures, e2e, k)
    assert sweep["k"].nunique() > 1
    svg = re.search(r"<svg class='chart sweep' id='k-sweep'.*?</svg>", document, re.S).group(0)
    assert svg.count("<polyline") == sweep["method"].nunique()
    for method, family in set(zip(sweep["method"], sweep["family"])):
        assert f"{method_name(method)} ({family})</text>" in svg
    assert "<dl class='glossary' id='glossary'>" in document and "Kendall&#x27;s tau-b" in document


def test_no_external_url_anywhere(shipped_report):
    document, parsed = shipped_report
    for tag, name, value in parsed.attributes:
        if name in ("src", "href", "srcset", "action", "data", "poster", "xlink:href"):
            pytest.fail(f"<{tag} {name}={value!r}>: the report has no reference to load")
        assert not re.search(r"https?:|//", value) or name == "content", (tag, name, value)
    assert not re.search(r"url\(", document)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert "default-src 'none'" in document  # the Content-Security-Policy refuses anything that slipped in


def injection_run(path: Path) -> Path:
    """The small fixture run with LLM-retEval failure cases, its first query's question and a failure reason
    holding markup, and the passage holding ``<script>`` ranked first for that query."""
    run = build_small_run()
    first = run.queries[0]
    queries = [replace(first, text=f"{QUESTION_INJECTION} {first.text}"), *run.queries[1:]]
    ranking = run.rankings[0]
    rankings = [Ranking(ranking.query_id, (ScoredPassage(INJECTION_ID, 99.0), *ranking.passages[:-1])),
                *run.rankings[1:]]
    k = run.settings["k"]
    verdicts = [Verdict("em", "semi_gold", q.query_id, k, False, "") for q in run.queries]
    cases = [FailureCase("em", first.query_id, k, "C", f"distracted by {REASON_INJECTION}")]
    return write_run(replace(run, queries=queries, rankings=rankings, verdicts=verdicts, failure_cases=cases), path)


def test_corpus_text_is_escaped(tmp_path):
    path = injection_run(tmp_path / "injection.sqlite")
    out = write_html_report(path, tmp_path / "injection.html", others=[])
    document = out.read_text(encoding="utf-8")
    assert "<script" not in document.lower() and "<img" not in document.lower()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in document  # the passage, ranked first, as text
    assert "&lt;script&gt;window.__pwned=3&lt;/script&gt;" in document  # the question
    assert "&lt;img src=x onerror=&quot;window.__pwned=4&quot;&gt;" in document  # the reason
    parsed = Parsed(document)
    assert INJECTION in " ".join(parsed.text)  # read back as text, the passage is whole
    assert not {"script", "img"} & set(parsed.tags)


def test_report_of_a_small_run_says_its_intervals_are_missing(tmp_path):
    """6 queries: too few for a correlation interval; the sentence and the chart say so rather than draw one."""
    path = injection_run(tmp_path / "small.sqlite")
    report = compute_report(path, others=[])
    assert report.correlations_source == "computed"
    document = render_html(report)
    assert "too few queries for an interval (n = 6 &lt; 20)" in document or "no interval: n &lt; 20" in document
    assert "class='whisker'" not in document


def test_unknown_run_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    assert main(["report", "no-such-run", "--html", str(tmp_path / "x.html")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("rageval: error: no-such-run: no such run file") and "\n" not in error
    assert not (tmp_path / "x.html").exists()


def test_a_folder_as_the_html_file_is_refused(tmp_path, capsys):
    assert main(["report", str(SHIPPED), "--html", str(tmp_path)]) == 2
    expected = f"rageval: error: --html {tmp_path}: is a folder; expected an .html file name"
    assert capsys.readouterr().err.strip() == expected


def test_leaderboard_names_the_runs_it_cannot_read(tmp_path, monkeypatch):
    """A dangling link and a file that is not SQLite in the runs folder: the report of a good run there is still
    written, its leaderboard lists the good run and names each bad file with what is wrong."""
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    good = injection_run(runs / "good.sqlite")
    (runs / "gone.sqlite").symlink_to(tmp_path / "nowhere.sqlite")
    (runs / "notes.sqlite").write_text("not a database\n")
    report = compute_report("good", all_runs=True)  # by name, from the runs folder
    assert report.path == good
    assert [row.run for row in report.leaderboard] == ["good"]
    assert len(report.unreadable) == 2
    assert any("gone.sqlite" in problem and "does not exist" in problem for problem in report.unreadable)
    assert any("notes.sqlite" in problem for problem in report.unreadable)
    assert "2 run file(s) could not be read and are left out" in render_html(report)
