"""NLI backends (issue 5): premise windowing, the trained cross-encoder's training/caching, any Hugging Face NLI
model (tested on tiny models built from a config), and the LLM judge."""

from __future__ import annotations

import math

import pytest

from rageval.attribution import nli
from rageval.attribution.checkers import load_checker
from rageval.generation.base import FakeGenerator
from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings, minilm_path

LONG_PREMISE = " ".join(f"Sentence number {i} says that the river {i} flows north into lake {i}." for i in range(60))


@pytest.fixture(scope="module")
def untrained_nli():
    settings = CrossEncoderSettings(max_length=64, max_a_tokens=24)
    return nli.CrossEncoderNli(CrossEncoder.from_encoder(minilm_path(), settings, model_id="test-nli", seed=0))


def test_premise_windows_cover_the_premise_in_overlapping_substrings(untrained_nli):
    tokenizer = untrained_nli.cross_encoder.tokenizer
    assert nli.premise_windows(tokenizer, "A short premise.", 40) == ["A short premise."]
    windows = nli.premise_windows(tokenizer, LONG_PREMISE, 40)
    assert len(windows) > 2
    assert all(w in LONG_PREMISE for w in windows)
    assert all(len(tokenizer(w, add_special_tokens=False)["input_ids"]) <= 40 for w in windows)
    assert LONG_PREMISE.startswith(windows[0]) and LONG_PREMISE.endswith(windows[-1])
    # Half overlap: the second window starts inside the first.
    assert LONG_PREMISE.index(windows[1]) < len(windows[0])


def test_long_premise_scores_the_max_over_its_windows(untrained_nli):
    hypothesis = "The river 30 flows north."
    [whole] = untrained_nli.entailment_probabilities([(LONG_PREMISE, hypothesis)])
    windows_used = untrained_nli.last_window_counts[0]
    assert windows_used > 1
    budget = 64 - len(untrained_nli.cross_encoder.tokenizer(hypothesis, add_special_tokens=False)["input_ids"]) - 3
    windows = nli.premise_windows(untrained_nli.cross_encoder.tokenizer, LONG_PREMISE, budget)
    assert len(windows) == windows_used
    separately = untrained_nli.entailment_probabilities([(w, hypothesis) for w in windows])
    assert whole == pytest.approx(max(separately), abs=1e-5)
    assert 0.0 < whole < 1.0


def test_decisions_threshold_probabilities():
    class Fixed:
        model_id = "fixed"

        def entailment_probabilities(self, pairs):
            return [0.2, 0.5, 0.9][:len(pairs)]

    assert nli.entailment_decisions(Fixed(), [("p", "h")] * 3) == [0, 1, 1]


def _tiny_dir(tmp_path, model):
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True).save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    return tmp_path


def test_hugging_face_sequence_classifier_reads_its_entailment_label(tmp_path):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=3,
                        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
                        label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2})
    directory = _tiny_dir(tmp_path / "bert-nli", BertForSequenceClassification(config))
    model = nli.HuggingFaceNli(str(directory), device="cpu")
    assert model.entailment_index == 2
    pairs = [("Fleming discovered penicillin in 1928.", "Penicillin was discovered."), ("A cat.", "A dog.")]
    probabilities = model.entailment_probabilities(pairs)
    inputs = model.tokenizer([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = model.model(**inputs).logits.softmax(-1)[:, 2].tolist()
    assert probabilities == pytest.approx(expected, abs=1e-5)
    assert load_checker(str(directory), device="cpu").model_id == f"hf:{directory}@0.5"


def test_hugging_face_model_without_entailment_label_is_refused(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification

    from rageval.errors import RagevalError

    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=2, id2label={0: "negative", 1: "positive"},
                        label2id={"negative": 0, "positive": 1})
    directory = _tiny_dir(tmp_path / "sentiment", BertForSequenceClassification(config))
    with pytest.raises(RagevalError, match="no single entailment label"):
        nli.HuggingFaceNli(str(directory), device="cpu")
    with pytest.raises(RagevalError, match="cannot load"):
        nli.HuggingFaceNli(str(tmp_path / "missing"), device="cpu")


def test_true_style_seq2seq_model_scores_the_first_token(tmp_path):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=30522, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0)
    directory = _tiny_dir(tmp_path / "t5-true", T5ForConditionalGeneration(config))
    model = nli.HuggingFaceNli(str(directory), device="cpu")
    assert model.seq2seq
    [p] = model.entailment_probabilities([("Fleming discovered penicillin.", "Penicillin was discovered.")])
    inputs = model.tokenizer(["premise: Fleming discovered penicillin. hypothesis: Penicillin was discovered."],
                             return_tensors="pt")
    with torch.no_grad():
        logits = model.model(**inputs, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0]
    one, zero = model.answer_ids
    assert p == pytest.approx(math.exp(logits[one]) / (math.exp(logits[one]) + math.exp(logits[zero])), abs=1e-5)


def test_llm_judge_reads_yes_no():
    generator = FakeGenerator(rule=lambda prompt: "Yes" if "1928" in prompt.split("\n\n")[-1] else "No, it does not")
    judge = load_checker("llm", generator=generator)
    probabilities = judge.entailment_probabilities([("Fleming found it in 1928.", "It was found in 1928."),
                                                    ("Fleming found it.", "It was found in 1930.")])
    assert probabilities == [1.0, 0.0]
    assert judge.last_replies[1].startswith("No")
    assert "nli-yesno@1" in judge.model_id
    from rageval.errors import RagevalError

    with pytest.raises(RagevalError, match="no such local folder"):  # built by the generator factory
        load_checker("llm:/no/such/model")
