"""``dtype="auto"``: bfloat16 on the CPU only where a one-time check finds float32's eRAG labels and a faster run
(:mod:`rageval.generation.dtype_check`), cached per model, recorded in the run; ``--dtype`` overrides it."""

from __future__ import annotations

import json

import pytest

from rageval.generation import dtype_check
from rageval.generation.factory import ModelSettings, expected_model_id, load_generator
from rageval.generation.transformers_backend import TransformersGenerator


@pytest.fixture
def checking(monkeypatch, tmp_path):
    """The check on, its cache in a fresh folder, and bfloat16 made to look faster: each timed run of the check
    takes 10 s of 'CPU time' in float32 and 4 s in bfloat16 (the tiny model's real timings are noise)."""
    monkeypatch.delenv(dtype_check.CHECK_SWITCH, raising=False)
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    # cpu_seconds() is read at the start and end of the float32 run, then of the bfloat16 run
    monkeypatch.setattr(dtype_check, "cpu_seconds", iter([0.0, 10.0, 100.0, 104.0]).__next__)
    return tmp_path / "cache"


def _generator(model_dir, dtype="auto"):
    return TransformersGenerator(model_dir, device="cpu", batch_size=8, dtype=dtype)


def test_check_sample_has_golds_and_distractors():
    prompts, answers, described = dtype_check.check_sample()
    assert len(prompts) == len(answers) == 2 * dtype_check.SAMPLE_QUESTIONS
    assert prompts[0] != prompts[1] and answers[0] == answers[1]  # one question, its passage and the next one's
    assert "first 15 questions" in described


def test_auto_checks_once_caches_and_switches_to_bfloat16(tiny_model_dir, checking, monkeypatch):
    calls = []
    original = dtype_check.measure_precision
    monkeypatch.setattr("rageval.generation.transformers_backend.measure_precision",
                        lambda generator, key: calls.append(key) or original(generator, key))
    first = _generator(tiny_model_dir)
    check = first.precision_check
    # The tiny model's answers are noise, so every exact-match label is 0 in both precisions: they agree.
    assert check is not None and check.labels == 30 and check.labels_agreeing == 30
    assert check.dtype == "bfloat16" and check.speedup == pytest.approx(2.5)
    assert first.dtype == "bfloat16" and first.model_id == f"{tiny_model_dir} [bfloat16]"
    assert str(next(first.model.parameters()).dtype) == "torch.bfloat16"
    saved = json.loads(dtype_check.check_path(str(tiny_model_dir)).read_text())
    assert saved["dtype"] == "bfloat16" and saved["torch_version"] and saved["speedup"] == 2.5
    # Loaded again: the cached verdict, no second check; the dry run's id agrees without loading.
    second = _generator(tiny_model_dir)
    assert len(calls) == 1 and second.dtype == "bfloat16" and second.precision_check == check
    assert expected_model_id(ModelSettings(model=str(tiny_model_dir), device="cpu")) == second.model_id
    assert dtype_check.precision_of(second)["dtype"] == "bfloat16"


def test_disagreeing_labels_keep_float32(tiny_model_dir, checking, monkeypatch):
    """A bfloat16 run whose answers score differently: the check keeps float32 and says why."""
    original = TransformersGenerator.generate

    def generate(self, prompts, settings):
        answers = original(self, prompts, settings)
        if str(next(self.model.parameters()).dtype) == "torch.bfloat16" and len(prompts) > 1:
            _, golds, _ = dtype_check.check_sample()
            answers[0] = golds[0][0]  # bfloat16 gets the first question right, float32 does not
        return answers

    monkeypatch.setattr(TransformersGenerator, "generate", generate)
    generator = _generator(tiny_model_dir)
    check = generator.precision_check
    assert check.dtype == "float32" and check.labels_agreeing == 29
    assert generator.dtype == "float32" and generator.model_id == str(tiny_model_dir)
    assert str(next(generator.model.parameters()).dtype) == "torch.float32"
    assert expected_model_id(ModelSettings(model=str(tiny_model_dir), device="cpu")) == str(tiny_model_dir)


def test_slower_bfloat16_keeps_float32(tiny_model_dir, checking, monkeypatch):
    monkeypatch.setattr(dtype_check, "cpu_seconds", iter([0.0, 1.0, 10.0, 15.0]).__next__)
    generator = _generator(tiny_model_dir)
    assert generator.precision_check.dtype == "float32" and generator.precision_check.speedup == pytest.approx(0.2)
    assert generator.dtype == "float32"


def test_dtype_overrides_and_the_switch(tiny_model_dir, checking, monkeypatch):
    monkeypatch.setattr(dtype_check, "measure_precision", lambda *a: pytest.fail("checked"))
    monkeypatch.setattr("rageval.generation.transformers_backend.measure_precision",
                        lambda *a: pytest.fail("checked"))
    for dtype in ("float32", "bfloat16"):
        generator = load_generator(ModelSettings(model=str(tiny_model_dir), device="cpu", dtype=dtype))
        assert generator.dtype == dtype and generator.precision_check is None
        assert generator.model_id == f"{tiny_model_dir} [{dtype}]"
        assert dtype_check.precision_of(generator) is None
    monkeypatch.setenv(dtype_check.CHECK_SWITCH, "off")  # auto without a check: the device default
    generator = load_generator(ModelSettings(model=str(tiny_model_dir), device="cpu"))
    assert generator.dtype == "float32" and generator.model_id == str(tiny_model_dir)
    assert not dtype_check.check_path(str(tiny_model_dir)).exists()


def test_the_verdict_is_recorded_in_the_run(tiny_model_dir, checking, tmp_path, monkeypatch):
    """``rageval evaluate`` with the default precision: the run's settings hold the verdict."""
    from rageval.cli import main
    from rageval.store import RunReader

    questions, corpus, ranked = tmp_path / "q.jsonl", tmp_path / "c.jsonl", tmp_path / "run.trec"
    questions.write_text(json.dumps({"query_id": "q1", "text": "capital of Peru?", "answers": ["Lima"],
                                     "gold_passage_ids": ["p0"]}) + "\n")
    corpus.write_text("".join(json.dumps({"passage_id": f"p{i}", "title": "Peru", "text": f"Lima is the capital {i}."})
                              + "\n" for i in range(3)))
    ranked.write_text("".join(f"q1 Q0 p{i} {i + 1} {10 - i} mine\n" for i in range(3)))
    run = tmp_path / "out.sqlite"
    assert main(["evaluate", "--queries", str(questions), "--corpus", str(corpus), "--run", str(ranked),
                 "--model", str(tiny_model_dir), "--device", "cpu", "--methods", "erag", "--k", "1,2",
                 "--cache", str(tmp_path / "llm.sqlite"), "--out", str(run)]) == 0
    with RunReader(run) as reader:
        settings = reader.settings()
    assert settings["precision"]["dtype"] == "bfloat16" and settings["precision"]["labels"] == 30
    assert settings["model_id"].endswith("[bfloat16]") and settings["config"]["dtype"] == "auto"
