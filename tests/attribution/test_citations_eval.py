"""``rageval evaluate-citations``: a user's attributed answers (JSONL) -> an attribution run file.

The answers are built here from the first shipped HAGRID dev records whose quotes are numbered 1..n: their questions,
their quotes as the passage list, and answers made of sentences copied from a known quote (entailed by it), an
invented sentence (entailed by nothing) and an out-of-range citation. Scoring uses the word-containment NLI of
``tests/attribution_fixtures.py`` (entailed when 80% of the statement's content words are in the premise), so every
entailment decision is checked below against the construction and every expected metric is worked out by hand
from those decisions with the paper's formulas (Djeddal et al., CIKM 2024, Eq. 1-2; ALCE). The CLI path uses a tiny
local Hugging Face NLI classifier whose head always says "entailment" (zero weights, bias on that class), so its
expected values follow from the citations alone.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rageval.attribution.metrics import format_passage
from rageval.attribution.statements import split_sentences, split_statements
from rageval.attribution.user_answers import USER_SCENARIO, evaluate_citations, read_user_answers
from rageval.errors import DataError, StoreError
from rageval.store.attribution import AttributionReader, attribution_summary
from tests.attribution_fixtures import ContainmentNli

INVENTED = "Purple zebras quietly compose symphonies on distant moons."
CITATION_METRICS = ("autoais_cit", "autoais_pssg", "alce_recall", "alce_precision")


@pytest.fixture(scope="module")
def tokenizer(corpus):
    from rageval.attribution.statements import sentence_tokenizer

    return sentence_tokenizer(corpus)


@pytest.fixture(scope="module")
def hagrid_records():
    """The first 3 HAGRID dev records whose quotes are cited as 1..n in list order (n >= 2)."""
    from rageval.attribution.experiment import quote_numbers
    from rageval.data import HAGRID_FILE, read_hagrid
    from rageval.paths import DATA_DIR

    chosen = []
    for record in read_hagrid(DATA_DIR / HAGRID_FILE):
        numbers = quote_numbers(record)
        if len(record.quotes) >= 2 and list(numbers) == list(range(1, len(record.quotes) + 1)):
            chosen.append(record)
        if len(chosen) == 3:
            return chosen
    raise AssertionError("fewer than 3 HAGRID records with quotes numbered 1..n")


def passages_of(record) -> list[dict]:
    return [{"passage_id": f"hagrid:{q.docid}", "title": "", "text": q.text}
            for q in sorted(record.quotes, key=lambda q: q.idx)]


def first_sentence(text: str, tokenizer) -> str:
    """The passage's first sentence without its final period (a citation marker then goes before the period)."""
    return split_sentences(text, tokenizer)[0].rstrip(".")


@pytest.fixture(scope="module")
def answers_case(hagrid_records, tokenizer):
    """The answers (lines of the JSONL file) and, per answer, the statements and citations they were built with.

    A (record 0): s0 copies passage 1 and cites [1]; s1 copies passage 2, cites [2]; s2 is invented, cites [1];
    s3 copies passage 1 but cites [n + 5], a passage that does not exist. A second answer to A's query is empty.
    B (record 1): s0 copies passage 2 and cites [1][2]; s1 is invented and cites nothing.
    C (record 2): s0 copies passage 1 [1], s1 copies passage 2 [2]; its gold answers are its own text (without
    markers) and an unrelated sentence, so ROUGE-L and BLEU are perfect.
    """
    a, b, c = hagrid_records
    pa, pb, pc = passages_of(a), passages_of(b), passages_of(c)
    s = {name: [first_sentence(p["text"], tokenizer) for p in passages] for name, passages in
         (("a", pa), ("b", pb), ("c", pc))}
    out_of_range = len(pa) + 5
    answer_a = f"{s['a'][0]} [1]. {s['a'][1]} [2]. {INVENTED[:-1]} [1]. {s['a'][0]} [{out_of_range}]."
    answer_b = f"{s['b'][1]} [1][2]. {INVENTED}"
    answer_c = f"{s['c'][0]} [1]. {s['c'][1]} [2]."
    plain_c = f"{s['c'][0]}. {s['c'][1]}."
    lines = [
        {"query_id": a.query_id, "answer_id": "full", "question": a.query, "answer": answer_a, "passages": pa},
        {"query_id": a.query_id, "answer_id": "empty", "question": a.query, "answer": "", "passages": pa},
        {"query_id": b.query_id, "question": b.query, "answer": answer_b, "passages": pb},
        {"query_id": c.query_id, "question": c.query, "answer": answer_c, "passages": pc,
         "gold_answers": [plain_c, "Nothing in common here at all."]},
    ]
    built = {  # (query id, answer id) -> [(statement text, citations, index of the passage it copies or None)]
        (a.query_id, "full"): [(s["a"][0] + ".", (1,), 0), (s["a"][1] + ".", (2,), 1), (INVENTED, (1,), None),
                               (s["a"][0] + ".", (out_of_range,), 0)],
        (a.query_id, "empty"): [],
        (b.query_id, "0"): [(s["b"][1] + ".", (1, 2), 1), (INVENTED, (), None)],
        (c.query_id, "0"): [(s["c"][0] + ".", (1,), 0), (s["c"][1] + ".", (2,), 1)],
    }
    passages = {(a.query_id, "full"): pa, (a.query_id, "empty"): pa, (b.query_id, "0"): pb, (c.query_id, "0"): pc}
    return lines, built, passages


def write_jsonl(path: Path, lines) -> Path:
    path.write_text("".join((json.dumps(line) if isinstance(line, dict) else line) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def decision(premise: str, statement: str) -> int:
    [p] = ContainmentNli().entailment_probabilities([(premise, statement)])
    return int(p >= 0.5)


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory, answers_case, tokenizer):
    lines, _, _ = answers_case
    folder = tmp_path_factory.mktemp("user-answers")
    messages: list[str] = []
    path = evaluate_citations(write_jsonl(folder / "answers.jsonl", lines), folder / "run.sqlite", ContainmentNli(),
                              tokenizer=tokenizer, bertscore=False, command="test", log=messages.append)
    return path, messages


def test_the_answers_are_split_into_the_statements_they_were_built_from(answers_case, tokenizer):
    lines, built, _ = answers_case
    for line in lines:
        expected = built[(line["query_id"], line.get("answer_id", "0"))]
        assert [(st.text, st.citations) for st in split_statements(line["answer"], tokenizer)] == \
            [(text, cited) for text, cited, _ in expected]


def test_statement_and_pair_counts(scored_run, answers_case):
    path, _ = scored_run
    _, built, passages = answers_case
    n_statements = sum(len(statements) for statements in built.values())  # 4 + 0 + 2 + 2
    n_pairs = sum(len(statements) * len(passages[key]) for key, statements in built.items())
    assert n_statements == 8
    summary = attribution_summary(path)
    assert (summary["answers"], summary["statements"], summary["pairs"]) == (4, n_statements, n_pairs)
    with AttributionReader(path) as reader:
        assert set(reader.frame("answers")["scenario"]) == {USER_SCENARIO}
        assert len(reader.frame("statements")) == n_statements and len(reader.frame("entailment")) == n_pairs
        # A query's passages are stored once, however many answers it has (A has two).
        per_query = {query_id: len(p) for (query_id, _), p in passages.items()}
        assert len(reader.frame("input_passages")) == sum(per_query.values())


def expected_citation_metrics(statements, premises) -> dict[str, float]:
    """AutoAIS_cit / _pssg and ALCE recall / precision of one answer, from the containment decisions (by hand).

    ``statements``: (text, citations, copied passage) as built; ``premises``: the answer's passages by number.
    """
    rows = [{n: decision(premise, text) for n, premise in premises.items()} for text, _, _ in statements]
    supported, best, recalls, precise, total = [], [], [], 0, 0
    for (text, cited, _), row in zip(statements, rows):
        valid = [n for n in cited if n in premises]
        supported.append(max((row[n] for n in valid), default=0))  # Eq. 1: an invalid citation supports nothing
        best.append(max(row.values()))  # Eq. 2
        if not cited or len(valid) < len(cited):
            recall = 0  # ALCE: uncited, or citing a passage that was not given
        elif len(cited) == 1:
            recall = row[cited[0]]
        else:
            recall = decision("\n".join(premises[n] for n in cited), text)
        recalls.append(recall)
        total += len(cited) if cited and len(valid) == len(cited) else 0  # ALCE: an out-of-range statement adds 0
        if recall and len(cited) == 1:
            precise += 1
        elif recall:  # two citations: one is imprecise when it alone fails and the other alone entails
            first, second = cited
            precise += not (row[first] == 0 and row[second] == 1)
            precise += not (row[second] == 0 and row[first] == 1)
    count = len(statements)
    return {"autoais_cit": sum(supported) / count, "autoais_pssg": sum(best) / count,
            "alce_recall": sum(recalls) / count, "alce_precision": precise / total}


def test_citation_metrics_equal_the_hand_computed_values(scored_run, answers_case):
    path, _ = scored_run
    _, built, passages = answers_case
    with AttributionReader(path) as reader:
        stored = reader.frame("answer_metrics").set_index(["query_id", "answer_id", "metric"])["value"]
        statements = reader.frame("statements")
    for key, plan in built.items():
        premises = {n: format_passage(p["title"], p["text"]) for n, p in enumerate(passages[key], start=1)}
        # The construction: a copied sentence is entailed by its passage, the invented one by none.
        for text, _, source in plan:
            if source is None:
                assert not any(decision(premise, text) for premise in premises.values())
            else:
                assert decision(premises[source + 1], text) == 1
        expected = expected_citation_metrics(plan, premises) if plan else dict.fromkeys(CITATION_METRICS, 0.0)
        for metric, value in expected.items():
            assert stored[(*key, metric)] == pytest.approx(value), (key, metric)
        of_answer = statements[(statements["query_id"] == key[0]) & (statements["answer_id"] == key[1])]
        assert list(of_answer["text"]) == [text for text, _, _ in plan]
    # Answer A, restated from its construction: s0, s1 supported by their citation, s2 (invented) and s3 (copied
    # but citing a passage that does not exist) not; every statement but s2 is entailed by some passage. Precision:
    # 2 precise of the 3 citations ALCE counts (s3's out-of-range citation is not counted).
    a_full = next(k for k in built if k[1] == "full")
    assert [stored[(*a_full, m)] for m in CITATION_METRICS] == pytest.approx([2 / 4, 3 / 4, 2 / 4, 2 / 3])
    assert stored[(*a_full, "invalid_citations")] == 1 and stored[(*a_full, "citations")] == 3


def test_correctness_against_gold_answers_only_where_given(scored_run, answers_case):
    path, _ = scored_run
    _, built, _ = answers_case
    with AttributionReader(path) as reader:
        metrics = reader.frame("answer_metrics")
    c_key = list(built)[-1]
    of_c = metrics[(metrics["query_id"] == c_key[0])].set_index("metric")["value"]
    # C's first gold answer is its own text without markers: ROUGE-L 1 and BLEU 100 (the best over the references).
    assert of_c["rougeL_f"] == pytest.approx(1.0) and of_c["bleu"] == pytest.approx(100.0)
    assert "bertscore_f" not in of_c.index  # bertscore=False
    others = metrics[metrics["query_id"] != c_key[0]]
    assert not others["metric"].isin(["bleu", "rougeL_f"]).any()  # no gold answers given for A and B


def test_out_of_range_citations_are_reported_and_not_counted(scored_run, answers_case):
    path, messages = scored_run
    lines, _, _ = answers_case
    out_of_range = len(lines[0]["passages"]) + 5
    warnings = [m for m in messages if m.startswith("warning:")]
    assert any("line 1" in m and f"[{out_of_range}]" in m and f"({len(lines[0]['passages'])} given" in m
               for m in warnings)
    with AttributionReader(path) as reader:
        settings = reader.settings()
        statements = reader.frame("statements", "answer_id = 'full'").sort_values("statement")
    assert settings["invalid_citations"]["citations"] == 1 and settings["invalid_citations"]["answers"] == 1
    assert settings["invalid_citations"]["first"][0]["line"] == 1
    assert attribution_summary(path)["invalid_citations"] == 1
    # s3 copies passage 1, which entails it, but cites only the missing passage: not supported, ALCE recall 0.
    assert json.loads(statements["citations"].iloc[3]) == [out_of_range]
    assert (statements["supported"].iloc[3], statements["alce_recall"].iloc[3]) == (0, 0)


def test_settings_say_what_produced_the_numbers(scored_run, answers_case):
    path, _ = scored_run
    with AttributionReader(path) as reader:
        settings = reader.settings()
    assert settings["nli"] == ContainmentNli.model_id and settings["answers"] == 4 and settings["queries"] == 3
    assert settings["input"].endswith("answers.jsonl") and settings["command"] == "test"
    assert settings["source"] == "user-answers" and settings["scenario"] == USER_SCENARIO
    assert len(settings["input_sha256"]) == 64


def test_attribution_summary_keys_and_means(scored_run):
    path, _ = scored_run
    summary = attribution_summary(path)
    assert {"statements", "pairs", "answers", "metrics"} <= set(summary)
    with AttributionReader(path) as reader:
        values = reader.frame("answer_metrics")
    for metric in CITATION_METRICS:
        per_answer = values[values["metric"] == metric]["value"]
        assert len(per_answer) == 4 and summary["metrics"][metric] == pytest.approx(per_answer.mean())


def test_attribution_summary_refuses_foreign_files(tmp_path):
    from rageval.store import ATTRIBUTION_APPLICATION_ID

    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all " * 20)
    empty_kind = tmp_path / "tables-missing.sqlite"
    with sqlite3.connect(empty_kind) as connection:
        connection.execute(f"PRAGMA application_id = {ATTRIBUTION_APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
    connection.close()
    other = tmp_path / "plain.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    for path in (text, empty_kind, other, tmp_path / "missing.sqlite"):
        with pytest.raises(StoreError, match=path.name):
            attribution_summary(path)


# --- bad input ---------------------------------------------------------------------------------------------

GOOD = {"query_id": "q1", "question": "Who?", "answer": "Someone [1].", "passages": [{"text": "Someone did."}]}
BAD_INPUTS = {  # kind -> (lines, the line and field the error must name)
    "invalid-json": ([GOOD, '{"query_id": "q2", "question": '], 2, None),
    "missing-answer": ([GOOD, {k: v for k, v in GOOD.items() if k != "answer"} | {"query_id": "q2"}], 2, "answer"),
    "passages-not-a-list": ([GOOD | {"passages": "Someone did."}], 1, "passages"),
    "passage-without-text": ([GOOD | {"passages": [{"text": "Someone did."}, {"title": "T"}]}], 1,
                             "passages[1].text"),
    "duplicate-query-id": ([GOOD, GOOD], 2, "query_id"),
    "duplicate-answer-id": ([GOOD | {"answer_id": "a"}, GOOD | {"answer_id": "b"}, GOOD | {"answer_id": "a"}], 3,
                            "answer_id"),
}


@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_input_names_file_line_and_field_and_writes_nothing(kind, tmp_path):
    lines, line, field = BAD_INPUTS[kind]
    answers = write_jsonl(tmp_path / "answers.jsonl", lines)
    with pytest.raises(DataError) as raised:
        evaluate_citations(answers, tmp_path / "run.sqlite", ContainmentNli(), tokenizer=object())
    error = raised.value
    assert (error.path, error.line, error.field) == (str(answers), line, field)
    assert str(error).startswith(f"{answers}, line {line}" + (f", field '{field}'" if field else ""))
    assert "\n" not in str(error)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.jsonl"]  # no run file, no temporary


def test_cli_bad_input_exits_2_with_one_line_and_no_output(tmp_path, capsys):
    from rageval.cli import main

    answers = write_jsonl(tmp_path / "answers.jsonl", BAD_INPUTS["missing-answer"][0])
    assert main(["evaluate-citations", str(answers), "--out", str(tmp_path / "run.sqlite")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"rageval: error: {answers}, line 2, field 'answer': missing (required)"
    assert not (tmp_path / "run.sqlite").exists()


def test_answers_of_one_query_must_share_its_passages(tmp_path):
    answers = write_jsonl(tmp_path / "a.jsonl", [GOOD | {"answer_id": "a"},
                                                 GOOD | {"answer_id": "b", "passages": [{"text": "Other."}]}])
    with pytest.raises(DataError, match=r"line 2, field 'passages': differs from the answer .* on line 1"):
        read_user_answers(answers)


# --- the command line with a local Hugging Face NLI classifier -----------------------------------------------

@pytest.fixture(scope="module")
def always_entails_dir(tmp_path_factory) -> Path:
    """A 1-layer BERT NLI classifier (MiniLM's tokenizer) whose head ignores its input: logits (5, 0, 0) for
    (entailment, neutral, contradiction), so p(entail) = e^5 / (e^5 + 2) ≈ 0.99 for every pair."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from rageval.retrieval.rerank import minilm_path

    directory = tmp_path_factory.mktemp("always-entails")
    tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    tokenizer.save_pretrained(directory)
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([5.0, 0.0, 0.0]))
    model.save_pretrained(directory)
    return directory


def test_cli_scores_with_a_local_nli_classifier(tmp_path, answers_case, always_entails_dir, capsys):
    from rageval.cli import main

    lines, built, _ = answers_case
    answers = write_jsonl(tmp_path / "answers.jsonl", lines)
    out = tmp_path / "run.sqlite"
    assert main(["evaluate-citations", str(answers), "--out", str(out), "--nli", str(always_entails_dir),
                 "--no-bertscore"]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and f"wrote {out}" in captured.out
    with AttributionReader(out) as reader:
        settings = reader.settings()
        stored = reader.frame("answer_metrics").set_index(["query_id", "answer_id", "metric"])["value"]
        probabilities = reader.frame("entailment")["probability"]
    assert settings["nli"] == f"hf:{always_entails_dir}@0.5" and "evaluate-citations" in settings["command"]
    assert (probabilities > 0.5).all()
    assert_everything_entailed(stored, lines, built)


def test_the_llm_judge_checks_citations_too(tmp_path, answers_case, tokenizer):
    """``--nli llm``'s backend with a fake LLM that always answers Yes: the same values as an always-entailing model."""
    from rageval.attribution.nli import LlmNli
    from rageval.generation.base import FakeGenerator

    lines, built, _ = answers_case
    judge = LlmNli(FakeGenerator(rule=lambda prompt: "Yes", model_id="fake:yes"))
    out = evaluate_citations(write_jsonl(tmp_path / "answers.jsonl", lines), tmp_path / "run.sqlite", judge,
                             tokenizer=tokenizer, bertscore=False, log=lambda message: None)
    with AttributionReader(out) as reader:
        assert reader.settings()["nli"] == judge.model_id
        stored = reader.frame("answer_metrics").set_index(["query_id", "answer_id", "metric"])["value"]
    assert judge.last_replies and set(judge.last_replies) == {"Yes"}
    assert_everything_entailed(stored, lines, built)


def assert_everything_entailed(stored, lines, built) -> None:
    """Every pair is entailed, so a statement is supported iff it has a valid citation (Eq. 1), every statement is
    entailed by some passage (Eq. 2), ALCE recall is 1 iff all its citations are valid and there is one, and every
    citation of such a statement is precise (none can be removed: the others would have to entail *and* it not);
    ALCE counts only the citations of such statements, so precision is 1 wherever one is counted."""
    for key, plan in built.items():
        if not plan:
            continue
        n_passages = len(next(line for line in lines
                              if (line["query_id"], line.get("answer_id", "0")) == key)["passages"])
        valid = [all(1 <= c <= n_passages for c in cited) and bool(cited) for _, cited, _ in plan]
        total = sum(len(cited) for (_, cited, _), ok in zip(plan, valid) if ok)
        expected = {"autoais_cit": sum(any(1 <= c <= n_passages for c in cited) for _, cited, _ in plan) / len(plan),
                    "autoais_pssg": 1.0, "alce_recall": sum(valid) / len(plan),
                    "alce_precision": 1.0 if total else 0.0}
        for metric, value in expected.items():
            assert stored[(*key, metric)] == pytest.approx(value), (key, metric)


# --- the dashboard ----------------------------------------------------------------------------------------

def test_citations_page_opens_on_a_user_run(scored_run, tmp_path, monkeypatch):
    import shutil

    from tests.app_helpers import captions, frame_with
    from tests.ui.test_app import start
    from ui.render import escape_markdown

    path, _ = scored_run
    runs = tmp_path / "runs"
    (runs / "attribution").mkdir(parents=True)
    shutil.copyfile(path, runs / "attribution" / "mine.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    repo = Path(__file__).resolve().parents[2]
    app = start(str(repo / "app_pages" / "3_Citations.py"))  # asserts no exception
    assert app.title[0].value == "Citations · attributed answers from answers.jsonl"
    assert not any("HAGRID" in t.value for t in app.title)
    table = frame_with(app, "AutoAIS cit")
    summary = attribution_summary(path)
    assert list(table.index) == [USER_SCENARIO] and table.at[USER_SCENARIO, "n"] == 4
    assert table.at[USER_SCENARIO, "AutoAIS cit"] == pytest.approx(100 * summary["metrics"]["autoais_cit"])
    assert "Overlap P" not in table.columns and "BERTScore F" not in table.columns  # no value in this run
    assert "Human: attributable" not in frame_with(app, "Statement").columns
    assert any(escape_markdown("1 citation(s) in 1 answer(s) name no passage") in w.value
               and escape_markdown("(input line 1)") in w.value
               for w in app.warning)
    assert "this run has none" in captions(app)
    assert not any("Spearman" in df.value.columns for df in app.dataframe)

    # The empty answer: no statements and no heatmap, still no error.
    with AttributionReader(path) as reader:
        [query_id] = reader.frame("answers", "answer_id = 'empty'")["query_id"]
    app = start(str(repo / "app_pages" / "3_Citations.py"), scenario=USER_SCENARIO, query=query_id, answer="empty")
    assert app.selectbox(key="citations.answer_id.widget").value == "empty"
    assert "(empty answer)" in [t.value for t in app.text] and not app.get("vega_lite_chart")


def test_the_earliest_error_is_reported_with_a_count_of_the_rest(tmp_path):
    """Lines are parsed as JSON before fields are checked; the error reported is still the earliest line's."""
    answers = write_jsonl(tmp_path / "a.jsonl", [GOOD, GOOD, '{"query_id": '])
    with pytest.raises(DataError) as raised:
        read_user_answers(answers)
    assert (raised.value.line, raised.value.field) == (2, "query_id")
    assert str(raised.value).endswith("(1 more error(s) after it)")


def test_cli_checker_spec_and_threshold_are_stored_with_the_scores(tmp_path, answers_case, always_entails_dir):
    """``--checker hf:DIR --threshold T``: the run's settings name the checker with its threshold, and the decisions
    use it: p(entail) ≈ 0.993 (the always-entailing head) is below 0.999, so no statement is supported."""
    from rageval.cli import main

    lines, _, _ = answers_case
    answers = write_jsonl(tmp_path / "answers.jsonl", lines)
    out = tmp_path / "run.sqlite"
    assert main(["evaluate-citations", str(answers), "--out", str(out), "--checker", f"hf:{always_entails_dir}",
                 "--threshold", "0.999", "--no-bertscore"]) == 0
    with AttributionReader(out) as reader:
        settings = reader.settings()
        metrics = reader.frame("answer_metrics")
    assert settings["nli"] == f"hf:{always_entails_dir}@0.999" and settings["nli_threshold"] == 0.999
    assert "--checker" in settings["command"] and "--threshold 0.999" in settings["command"]
    assert metrics.loc[metrics["metric"] == "alce_recall", "value"].eq(0.0).all()
    assert (metrics["metric"] == "alce_recall").any()


def test_citations_page_shows_checker_quality_reports(scored_run, tmp_path, monkeypatch):
    """A report written as ``nli-eval --json`` writes it, in ``<runs folder>/nli/``: one table per checker with
    its numbers, the run's own checker (``test:containment``) named as evaluated; a wrong file named, not fatal."""
    import shutil

    from rageval.attribution.checker_report import CheckerReport, ReportEntry, write_checker_report
    from rageval.attribution.nli_eval import evaluate_checker_scores
    from tests.app_helpers import captions, frame_with
    from tests.ui.test_app import start
    from ui.render import escape_markdown

    path, _ = scored_run
    runs = tmp_path / "runs"
    (runs / "attribution").mkdir(parents=True)
    shutil.copyfile(path, runs / "attribution" / "mine.sqlite")
    gold, scores = [1, 0, 1, 1, 0, 0, 1, 0], [0.9, 0.2, 0.7, 0.4, 0.6, 0.1, 0.8, 0.3]
    pair = evaluate_checker_scores(gold, scores, 0.5, resamples=200)
    claim = evaluate_checker_scores(gold, scores, 0.5, groups=list("aabbccdd"), resamples=200)
    other = evaluate_checker_scores(gold, [1 - p for p in scores], 0.5, resamples=200)
    report = CheckerReport(
        {"test:containment@0.5": {"spec": "test", "threshold": 0.5, "description": "word containment"},
         "hf:/m/other@0.5": {"spec": "hf:/m/other", "threshold": 0.5, "description": ""}},
        (ReportEntry("test:containment@0.5", "mine.jsonl", None, "pair: each row", pair),
         ReportEntry("test:containment@0.5", "mine.jsonl", "test", "claim: max over rows", claim),
         ReportEntry("hf:/m/other@0.5", "mine.jsonl", None, "pair: each row", other)))
    write_checker_report(runs / "nli" / "mine.json", report)
    (runs / "nli" / "broken.json").write_text("{}", encoding="utf-8")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    app = start(str(Path(__file__).resolve().parents[2] / "app_pages" / "3_Citations.py"))
    assert "Checker quality" in [h.value for h in app.subheader]
    tables = [df.value for df in app.dataframe if "Balanced accuracy" in df.value.columns]
    assert len(tables) == 2
    ours = frame_with(app, "Balanced accuracy")  # the first table: the run's checker
    assert list(ours["Level"]) == ["pair", "claim"] and list(ours["n"]) == [8, 4]
    low, high = pair.balanced_accuracy_interval
    assert ours["Balanced accuracy"].iloc[0] == f"{pair.balanced_accuracy:.3f} [{low:.2f}, {high:.2f}]"
    low, high = pair.roc_auc_interval
    assert ours["ROC-AUC"].iloc[0] == f"{pair.roc_auc:.3f} [{low:.2f}, {high:.2f}]"
    assert list(ours["Split"]) == ["–", "test"] and list(ours["Threshold"]) == ["0.5", "0.5"]
    assert tables[1]["ROC-AUC"].iloc[0].startswith(f"{other.roc_auc:.3f}")
    text = captions(app)
    assert escape_markdown("The selected run was scored by test:containment") in text
    assert escape_markdown("evaluated above as test:containment@0.5") in text
    assert escape_markdown("broken.json: not a rageval NLI report") in text
