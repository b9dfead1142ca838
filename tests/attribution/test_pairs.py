"""``rageval nli-score`` and ``rageval nli-eval`` (issue 17): own JSONL files scored by a tiny Hugging Face checker
saved in tmp_path, the output rows, the printed and JSON numbers against sklearn on the same scores, bad lines named
by file and line, the atomic / resumable output, and the report reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

from rageval.attribution import pairs
from rageval.attribution.checker_report import read_checker_report
from rageval.attribution.checkers import load_checker
from rageval.cli import main
from rageval.errors import RagevalError

ROWS = [
    {"id": "a1", "premise": "Fleming discovered penicillin in 1928 in London.", "hypothesis": "Penicillin was found "
     "in 1928.", "label": "entailment", "claim_id": "c1", "source": "wiki"},
    {"id": "a2", "premise": "The Nile flows north.", "hypothesis": "Penicillin was found in 1928.",
     "label": "neutral", "claim_id": "c1", "source": "wiki"},
    {"id": "b1", "premise": "Cats are mammals that purr.", "hypothesis": "Dogs bark loudly.", "label": "contradiction",
     "claim_id": "c2", "source": "wiki", "extra": [1, 2]},
    {"id": "b2", "premise": "Mount Everest is the highest mountain.", "hypothesis": "Everest is the tallest peak.",
     "label": "SUPPORTED", "claim_id": "c3", "source": "news"},
    {"id": "b3", "premise": "Paris is the capital of France.", "hypothesis": "Berlin is in France.", "label": 0,
     "claim_id": "c4", "source": "news"},
    {"id": "b4", "premise": "Water boils at 100 degrees at sea level.", "hypothesis": "Water boils at 100 degrees.",
     "label": True, "claim_id": "c5", "source": "news"},
    {"id": "b5", "premise": "The moon orbits the earth.", "hypothesis": "The earth orbits the moon.",
     "label": "refuted", "claim_id": "c5", "source": "news"},
]


@pytest.fixture(scope="module")
def tiny_checker(tmp_path_factory) -> Path:
    """A 2-layer BERT NLI classifier with random weights (MiniLM's tokenizer), 3-way, entailment = 0."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from rageval.retrieval.rerank import minilm_path

    directory = tmp_path_factory.mktemp("tiny-nli")
    AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True).save_pretrained(directory)
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    torch.manual_seed(7)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    BertForSequenceClassification(config).save_pretrained(directory)
    return directory


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def reference_scores(directory: Path) -> list[float]:
    checker = load_checker(f"hf:{directory}", device="cpu")
    return checker.entailment_probabilities([(r["premise"], r["hypothesis"]) for r in ROWS])


def test_nli_score_writes_every_row_back_in_order(tmp_path, tiny_checker, capsys):
    source = write_jsonl(tmp_path / "pairs.jsonl", [{k: v for k, v in r.items() if k != "label"} for r in ROWS])
    out = tmp_path / "scored.jsonl"
    assert main(["nli-score", str(source), "--out", str(out), "--checker", f"hf:{tiny_checker}", "--batch-size",
                 "3", "--threshold", "0.3", "--checker-device", "cpu"]) == 0
    captured = capsys.readouterr()
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    expected = reference_scores(tiny_checker)
    assert [r["id"] for r in scored] == [r["id"] for r in ROWS]
    assert scored[2]["extra"] == [1, 2] and list(scored[0])[:3] == ["id", "premise", "hypothesis"]
    assert [r["p_supported"] for r in scored] == pytest.approx(expected, abs=1e-6)
    assert [r["supported"] for r in scored] == [p >= 0.3 for p in expected]
    assert {r["checker"] for r in scored} == {f"hf:{tiny_checker}@0.3"}
    assert f"wrote {out}: 7 rows; {sum(p >= 0.3 for p in expected)} supported" in captured.out
    assert "pairs scored" in captured.err  # the progress bar (with its ETA) on stderr
    assert not pairs.partial_path(out).exists()


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line 2: not valid JSON"),
    ('["a", "b"]', "line 2: expected a JSON object, got list"),
    ('{"premise": "p"}', "line 2, field 'hypothesis': missing"),
    ('{"premise": "p", "hypothesis": "  "}', "line 2, field 'hypothesis': empty"),
    ('{"premise": 3, "hypothesis": "h"}', "line 2, field 'premise': expected a non-empty string, got int"),
])
def test_nli_score_names_the_file_and_line_of_a_bad_line(tmp_path, line, message, capsys):
    source = write_jsonl(tmp_path / "bad.jsonl", [ROWS[0], line])
    out = tmp_path / "scored.jsonl"
    assert main(["nli-score", str(source), "--out", str(out), "--checker", "hf:/no/model"]) != 0
    err = capsys.readouterr().err
    assert f"{source}, {message}" in err and "Traceback" not in err
    assert not out.exists() and not pairs.partial_path(out).exists()  # checked before any model loads


def test_resume_keeps_the_partial_rows_and_scores_the_rest(tmp_path, tiny_checker):
    source = write_jsonl(tmp_path / "pairs.jsonl", ROWS)
    out = tmp_path / "scored.jsonl"
    checker = load_checker(f"hf:{tiny_checker}", device="cpu")
    expected = reference_scores(tiny_checker)
    # An interrupted run: 3 rows written (their p set to 0.123 to see that they are kept, not rescored) and half a
    # fourth line.
    kept = [pairs.scored_record(pairs.PairRow(i + 1, r, r["premise"], r["hypothesis"]), 0.123, 0.5, checker.model_id)
            for i, r in enumerate(ROWS[:3])]
    pairs.partial_path(out).write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"premise": "Fle',
                                       encoding="utf-8")
    seen = []
    summary = pairs.score_pairs_file(source, out, checker, batch_size=2, resume=True,
                                     progress=lambda done, total: seen.append((done, total)))
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert summary.resumed == 3 and summary.rows == 7
    assert [r["p_supported"] for r in scored] == pytest.approx([0.123] * 3 + expected[3:], abs=1e-6)
    assert seen[0] == (3, 7) and seen[-1] == (7, 7)
    # A partial output of another checker is refused, not mixed in.
    pairs.partial_path(out).write_text(json.dumps({**kept[0], "checker": "other@0.5"}) + "\n", encoding="utf-8")
    with pytest.raises(RagevalError, match=re.escape("scored by 'other@0.5'")):
        pairs.score_pairs_file(source, out, checker, resume=True)
    # Without --resume it starts over.
    assert pairs.score_pairs_file(source, out, checker).resumed == 0


def _sklearn_numbers(gold, scores, threshold):
    predicted = [int(p >= threshold) for p in scores]
    return (accuracy_score(gold, predicted), balanced_accuracy_score(gold, predicted),
            f1_score(gold, predicted, zero_division=0.0), roc_auc_score(gold, scores))


def test_nli_eval_prints_and_writes_the_numbers_sklearn_gives(tmp_path, tiny_checker, capsys):
    source = write_jsonl(tmp_path / "labelled.jsonl", ROWS)
    report_path = tmp_path / "runs" / "nli" / "mine.json"
    threshold = 0.33
    assert main(["nli-eval", str(source), "--checker", f"hf:{tiny_checker}#threshold={threshold}",
                 "--claim-field", "claim_id", "--resamples", "200", "--json", str(report_path),
                 "--checker-device", "cpu"]) == 0
    out = capsys.readouterr().out
    checker_id = f"hf:{tiny_checker}@{threshold}"
    assert f"checker {checker_id} (supported at p >= {threshold})" in out
    scores = reference_scores(tiny_checker)
    gold = [1, 0, 0, 1, 0, 1, 0]
    report = read_checker_report(report_path)
    assert set(report.checkers) == {checker_id}
    assert report.checkers[checker_id]["spec"] == f"hf:{tiny_checker}#threshold={threshold}"
    entries = {(e.data, e.evaluation.level): e for e in report.evaluations}
    assert set(entries) == {(f"labelled.jsonl [{s}]", level) for s in ("news", "wiki") for level in
                            ("pair", "claim")} | {("labelled.jsonl", "pair"), ("labelled.jsonl", "claim")}
    overall = entries[("labelled.jsonl", "pair")].evaluation
    accuracy, bacc, f1, auc = _sklearn_numbers(gold, scores, threshold)
    assert (overall.n, overall.positives) == (7, 3)
    assert (overall.accuracy, overall.balanced_accuracy, overall.f1, overall.roc_auc) == \
        pytest.approx((accuracy, bacc, f1, auc))
    # Claim level: c1 = max(rows 0, 1), c2 = row 2, c3 = row 3, c4 = row 4, c5 = max(rows 5, 6); gold = any row's.
    claim_scores = [max(scores[0], scores[1]), scores[2], scores[3], scores[4], max(scores[5], scores[6])]
    claim = entries[("labelled.jsonl", "claim")].evaluation
    assert claim.n == 5 and claim.positives == 3
    assert (claim.accuracy, claim.balanced_accuracy, claim.f1, claim.roc_auc) == \
        pytest.approx(_sklearn_numbers([1, 0, 1, 0, 1], claim_scores, threshold))
    news = entries[("labelled.jsonl [news]", "pair")].evaluation
    assert news.roc_auc == pytest.approx(roc_auc_score(gold[3:], scores[3:]))
    # The printed table holds the same numbers (3 decimals), one line per evaluation.
    line = next(t for t in out.splitlines() if re.match(r"labelled\.jsonl\s+pair", t))
    assert f"{bacc:.3f} [" in line and f"{auc:.3f} [" in line and f"{f1:.3f}" in line and f"{accuracy:.3f}" in line
    assert len([t for t in out.splitlines() if t.startswith("labelled.jsonl")]) == 6


@pytest.mark.parametrize(("record", "message"), [
    ({"premise": "p", "hypothesis": "h", "label": "maybe"}, "line 2, field 'label': 'maybe': expected"),
    ({"premise": "p", "hypothesis": "h"}, "line 2, field 'label': missing"),
    ({"premise": "p", "hypothesis": "h", "label": 2}, "line 2, field 'label': 2: expected"),
])
def test_nli_eval_refuses_an_unknown_label(tmp_path, record, message, capsys):
    source = write_jsonl(tmp_path / "labelled.jsonl", [ROWS[0], record])
    assert main(["nli-eval", str(source), "--checker", "hf:/no/model"]) != 0
    assert f"{source}, {message}" in capsys.readouterr().err


def test_claim_field_must_be_on_every_row(tmp_path):
    source = write_jsonl(tmp_path / "labelled.jsonl", [ROWS[0], {k: v for k, v in ROWS[1].items() if k != "claim_id"}])
    with pytest.raises(RagevalError, match=r"line 2, field 'claim_id': expected a claim id"):
        pairs.read_labelled_pairs(source, claim_field="claim_id")


def test_labels_accepted():
    for value in ("entailment", "Supported", "TRUE", "1", 1, True, "yes"):
        assert pairs.parse_label(value) == 1
    for value in ("neutral", "contradiction", "not_entailment", "NOT ENTAILMENT", "refuted", "false", "0", 0, False):
        assert pairs.parse_label(value) == 0
    for value in ("maybe", 2, None, 0.5, ["entailment"]):
        assert pairs.parse_label(value) is None


def test_report_reader_refuses_other_files(tmp_path):
    from rageval.attribution.checker_report import CheckerReport, write_checker_report
    from rageval.errors import DataError

    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"model_id": "nli-x", "test": {}}))
    with pytest.raises(DataError, match="not a rageval NLI report"):
        read_checker_report(wrong)
    wrong.write_text("not json")
    with pytest.raises(DataError, match="not JSON"):
        read_checker_report(wrong)
    wrong.write_text(json.dumps({"format": "rageval-nli-report", "version": 1}))
    with pytest.raises(DataError, match="version 1"):
        read_checker_report(wrong)
    wrong.write_text(json.dumps({"format": "rageval-nli-report", "version": 2, "checkers": {"a@0.5": {}},
                                 "evaluations": [{"checker": "b@0.5", "level": "pair"}]}))
    with pytest.raises(DataError, match=re.escape("evaluation 1: checker 'b@0.5' is not one")):
        read_checker_report(wrong)
    wrong.write_text(json.dumps({"format": "rageval-nli-report", "version": 2, "checkers": {"a@0.5": {}},
                                 "evaluations": [{"checker": "a@0.5", "level": "pair"}]}))
    with pytest.raises(DataError, match="evaluation 1: expected the metric fields"):
        read_checker_report(wrong)
    empty = write_checker_report(tmp_path / "empty.json", CheckerReport())
    assert read_checker_report(empty) == CheckerReport()


def test_nli_eval_calibrates_the_threshold_on_a_dev_file(tmp_path, tiny_checker, capsys):
    """``--calibrate DEV``: the threshold maximising balanced accuracy on DEV (checked by brute force over every
    midpoint with sklearn) is the one the evaluation uses and the report stores."""
    import itertools

    dev = write_jsonl(tmp_path / "dev.jsonl", ROWS)
    test = write_jsonl(tmp_path / "test.jsonl", ROWS[::-1])
    out = tmp_path / "report.json"
    assert main(["nli-eval", str(test), "--checker", f"hf:{tiny_checker}", "--calibrate", str(dev),
                 "--resamples", "50", "--json", str(out), "--source-field", ""]) == 0
    printed = capsys.readouterr().out
    scores = reference_scores(tiny_checker)
    gold = [1, 0, 0, 1, 0, 1, 0]
    cuts = [(a + b) / 2 for a, b in itertools.pairwise(sorted(set(scores)))]
    best = max(balanced_accuracy_score(gold, [int(p >= t) for p in scores]) for t in cuts)
    report = read_checker_report(out)
    [(checker_id, about)] = report.checkers.items()
    threshold = about["threshold"]
    assert any(threshold == pytest.approx(c) for c in cuts) and checker_id == f"hf:{tiny_checker}@{threshold:g}"
    assert "calibrated on dev.jsonl" in about["description"]
    [entry] = report.evaluations
    assert entry.evaluation.balanced_accuracy == pytest.approx(best)  # the same rows, reversed
    assert f"calibrated on {dev}" in printed
    assert main(["nli-eval", str(test), "--checker", f"hf:{tiny_checker}", "--calibrate", str(dev),
                 "--threshold", "0.4"]) != 0
    assert "not both" in capsys.readouterr().err


def test_a_calibrated_evaluation_reports_progress_as_one_job(tmp_path, tiny_checker):
    """Dev rows then labelled rows count up one total (one bar, one ETA), never restarting from 0."""
    dev = write_jsonl(tmp_path / "dev.jsonl", ROWS)
    test = write_jsonl(tmp_path / "test.jsonl", ROWS[:5])
    reports: list[tuple[int, int]] = []
    pairs.evaluate_pairs_file(test, load_checker(f"hf:{tiny_checker}"), calibrate=dev, source_field=None,
                              batch_size=2, resamples=20, progress=lambda done, total: reports.append((done, total)))
    assert {total for _, total in reports} == {len(ROWS) + 5}
    done = [d for d, _ in reports]
    assert done[0] == 0 and done[-1] == len(ROWS) + 5 and done == sorted(done)


def test_a_checker_description_is_plain_text(tmp_path, tiny_checker):
    """The description stored in a report (and shown on the Citations page) is a plain sentence: no Sphinx role or
    literal markup from the class docstring, and a calibration note joined without a doubled stop."""
    from rageval.attribution.checkers import checker_description

    model = load_checker(f"hf:{tiny_checker}")
    text = checker_description(model)
    assert text and ":class:" not in text and "`" not in text
    dev = write_jsonl(tmp_path / "dev.jsonl", ROWS)
    test = write_jsonl(tmp_path / "test.jsonl", ROWS[:5])
    result = pairs.evaluate_pairs_file(test, model, calibrate=dev, source_field=None, resamples=20)
    [about] = pairs.pairs_report(result, "hf").checkers.values()
    assert ".;" not in about["description"] and about["description"].endswith("(maximum balanced accuracy)")
