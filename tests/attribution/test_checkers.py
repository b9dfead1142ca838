"""Checker specs and backends (issue 17): every kind loaded through ``load_checker`` from a tiny model built from a
config and saved in that kind's layout (3-way NLI, 2-way named, 2-way LABEL_0/1 + #supported, MiniCheck RoBERTa,
MiniCheck Flan-T5, AlignScore .ckpt); chunking and aggregation checked against scoring the chunks one by one."""

from __future__ import annotations

import re

import pytest

from rageval.attribution import checkers, nli
from rageval.attribution.checkers import load_checker, parse_checker_spec
from rageval.errors import RagevalError
from rageval.generation.base import FakeGenerator
from rageval.retrieval.rerank import minilm_path

LONG_PREMISE = " ".join(f"Sentence number {i} says that the river {i} flows north into lake {i}." for i in range(60))
PAIR = ("Fleming discovered penicillin in 1928.", "Penicillin was discovered.")


def _splitter(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.)\s+", text.strip()) if s]


def _tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)


def _save(directory, model):
    _tokenizer().save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def _bert_classifier(labels: dict[int, str]):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=len(labels), id2label=labels,
                        label2id={v: k for k, v in labels.items()})
    return BertForSequenceClassification(config).eval()


def _classifier_probabilities(model, texts_a, texts_b=None):
    import torch

    tokenizer = _tokenizer()
    inputs = tokenizer(texts_a, texts_b, padding=True, return_tensors="pt") if texts_b else \
        tokenizer(texts_a, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**inputs).logits.softmax(-1)


# ----------------------------------------------------------------------------------------------- specs


@pytest.mark.parametrize(("spec", "kind", "target", "options"), [
    ("ours", "ours", "", ()),
    ("trained", "ours", "", ()),
    ("ours#threshold=0.3", "ours", "", (("threshold", "0.3"),)),
    ("hf:/m/nli", "hf", "/m/nli", ()),
    ("/m/nli", "hf", "/m/nli", ()),
    ("org/model-name", "hf", "org/model-name", ()),
    ("hf:/m/2way#supported=1", "hf", "/m/2way", (("supported", "1"),)),
    ("hf:/m/a#b#supported=0,threshold=0.7", "hf", "/m/a#b", (("supported", "0"), ("threshold", "0.7"))),
    ("minicheck:/m/mc#chunk=200", "minicheck", "/m/mc", (("chunk", "200"),)),
    ("alignscore:/m/a.ckpt#base=/m/roberta", "alignscore", "/m/a.ckpt", (("base", "/m/roberta"),)),
    ("llm", "llm", "", ()),
    ("llm:smollm2-135m-instruct", "llm", "smollm2-135m-instruct", ()),
])
def test_specs_parse_in_one_place(spec, kind, target, options):
    parsed = parse_checker_spec(spec)
    assert (parsed.kind, parsed.target, parsed.options) == (kind, target, options)
    assert parse_checker_spec(str(parsed)) == parsed  # round trip


@pytest.mark.parametrize(("spec", "message"), [
    ("", "got nothing"),
    ("hf:", "expected a model id or path"),
    ("ours:/some/model", "takes no model"),
    ("hf:/m#chunk=3", "option 'chunk' is not one a hf checker takes"),
    ("hf:/m#threshold=1.5", "between 0.0 and 1.0"),
    ("hf:/m#supported=x", "expected an integer"),
    ("minicheck:/m#chunk=2", "at least 8"),
])
def test_bad_specs_are_one_clear_error(spec, message):
    with pytest.raises(RagevalError, match=re.escape(message)):
        parse_checker_spec(spec)


# ------------------------------------------------------------------------------------- Hugging Face NLI


def test_three_way_nli_reads_its_entailment_label_and_scores_a_pair(tmp_path):
    model = _bert_classifier({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"})
    directory = _save(tmp_path / "nli3", model)
    checker = load_checker(f"hf:{directory}", device="cpu")
    assert checker.entailment_index == 2 and checker.threshold == 0.5
    assert checker.model_id == f"hf:{directory}@0.5"
    [p] = checker.entailment_probabilities([PAIR])
    assert p == pytest.approx(_classifier_probabilities(model, [PAIR[0]], [PAIR[1]])[0, 2].item(), abs=1e-5)
    bare = load_checker(str(directory), device="cpu", threshold=0.8)  # a bare path is hf:, --threshold wins
    assert bare.model_id == f"hf:{directory}@0.8"
    assert nli.entailment_decisions(bare, [PAIR]) == [int(p >= 0.8)]


@pytest.mark.parametrize("labels", [{0: "not_entailment", 1: "entailment"}, {0: "REFUTED", 1: "SUPPORTED"},
                                    {0: "supported", 1: "unsupported"}])
def test_two_way_models_with_named_labels(tmp_path, labels):
    model = _bert_classifier(labels)
    directory = _save(tmp_path / "nli2", model)
    checker = load_checker(f"hf:{directory}", device="cpu")
    expected = next(i for i, name in labels.items() if name.lower() in ("entailment", "supported"))
    assert checker.entailment_index == expected
    [p] = checker.entailment_probabilities([PAIR])
    assert p == pytest.approx(_classifier_probabilities(model, [PAIR[0]], [PAIR[1]])[0, expected].item(), abs=1e-5)


def test_generic_labels_need_the_supported_index(tmp_path):
    model = _bert_classifier({0: "LABEL_0", 1: "LABEL_1"})
    directory = _save(tmp_path / "generic", model)
    with pytest.raises(RagevalError, match=re.escape(f"'hf:{directory}#supported=1'")):
        load_checker(f"hf:{directory}", device="cpu")
    checker = load_checker(f"hf:{directory}#supported=0", device="cpu")
    assert checker.entailment_index == 0 and checker.model_id == f"hf:{directory}#supported=0@0.5"
    [p] = checker.entailment_probabilities([PAIR])
    assert p == pytest.approx(_classifier_probabilities(model, [PAIR[0]], [PAIR[1]])[0, 0].item(), abs=1e-5)
    with pytest.raises(RagevalError, match="names no class"):
        load_checker(f"hf:{directory}#supported=2", device="cpu")


# ---------------------------------------------------------------------------------------------- MiniCheck


@pytest.fixture(scope="module")
def minicheck_roberta(tmp_path_factory):
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(1)
    config = RobertaConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=514, num_labels=2, pad_token_id=0)
    model = RobertaForSequenceClassification(config).eval()
    return model, _save(tmp_path_factory.mktemp("mc") / "minicheck-roberta", model)


@pytest.fixture(scope="module")
def minicheck_deberta(tmp_path_factory):
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(4)
    config = DebertaV2Config(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=512, num_labels=2, pad_token_id=0)
    model = DebertaV2ForSequenceClassification(config).eval()
    return model, _save(tmp_path_factory.mktemp("mc") / "minicheck-deberta", model)


@pytest.mark.parametrize("layout", ["minicheck_roberta", "minicheck_deberta"])
def test_minicheck_classifier_scores_chunk_sep_claim_with_class_one(layout, request):
    model, directory = request.getfixturevalue(layout)
    checker = load_checker(f"minicheck:{directory}", device="cpu")
    assert not checker.seq2seq and checker.chunk == 400
    [p] = checker.entailment_probabilities([PAIR])
    # MiniCheck's input: one text, document <sep> claim (the BERT tokenizer's [SEP]: it has no eos token).
    expected = _classifier_probabilities(model, [f"{PAIR[0]}[SEP]{PAIR[1]}"])[0, 1].item()
    assert p == pytest.approx(expected, abs=1e-5)
    assert checker.model_id == f"minicheck:{directory}@0.5"


def test_minicheck_classifier_takes_the_max_over_overlapping_token_chunks(minicheck_roberta):
    _, directory = minicheck_roberta
    checker = load_checker(f"minicheck:{directory}#chunk=60", device="cpu")
    claim = "The river 30 flows north."
    [whole] = checker.entailment_probabilities([(LONG_PREMISE, claim)])
    chunks = checker.chunks(LONG_PREMISE, claim)
    assert checker.last_window_counts == [len(chunks)] and len(chunks) > 5
    assert all(c in LONG_PREMISE for c in chunks)
    assert LONG_PREMISE.index(chunks[1]) < len(chunks[0])  # overlapping by half
    one_by_one = checker.score_chunks([(c, claim) for c in chunks])
    assert whole == pytest.approx(max(one_by_one), abs=1e-6)


def test_minicheck_flan_t5_reads_the_first_token_of_one_against_zero(tmp_path):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(2)
    config = T5Config(vocab_size=30522, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0)
    model = T5ForConditionalGeneration(config).eval()
    directory = _save(tmp_path / "minicheck-t5", model)
    checker = load_checker(f"minicheck:{directory}#chunk=40", device="cpu")
    assert checker.seq2seq and checker.chunk == 40
    tokenizer = _tokenizer()
    one = tokenizer("1", add_special_tokens=False)["input_ids"][0]
    zero = tokenizer("0", add_special_tokens=False)["input_ids"][0]
    [p] = checker.entailment_probabilities([PAIR])
    inputs = tokenizer([f"predict: {PAIR[0]}[SEP]{PAIR[1]}"], return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0]
    assert p == pytest.approx(torch.stack([logits[zero], logits[one]]).softmax(0)[1].item(), abs=1e-5)
    # A long document: word windows of 40 overlapping by 20, p the max over them.
    claim = "Lake 12 is fed by river 12."
    [whole] = checker.entailment_probabilities([(LONG_PREMISE, claim)])
    chunks = checker.chunks(LONG_PREMISE, claim)
    words = LONG_PREMISE.split()
    assert chunks[0] == " ".join(words[:40]) and chunks[1] == " ".join(words[20:60])
    assert len(chunks) == checker.last_window_counts[0] == (len(words) - 40 + 19) // 20 + 1
    assert whole == pytest.approx(max(checker.score_chunks([(c, claim) for c in chunks])), abs=1e-6)


def test_minicheck_refuses_a_three_way_model(tmp_path):
    directory = _save(tmp_path / "nli3", _bert_classifier({0: "entailment", 1: "neutral", 2: "contradiction"}))
    with pytest.raises(RagevalError, match="has 2 classes"):
        load_checker(f"minicheck:{directory}", device="cpu")


# ---------------------------------------------------------------------------------------------- AlignScore


def _alignscore_checkpoint(directory, seed=3):
    """A tiny AlignScore-layout Lightning checkpoint: encoder under base_model., MLM head and the three heads."""
    import torch
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(seed)
    config = RobertaConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=514, pad_token_id=0)
    encoder = RobertaModel(config)
    tri, binary, reg = torch.nn.Linear(32, 3), torch.nn.Linear(32, 2), torch.nn.Linear(32, 1)
    state = {f"base_model.{k}": v for k, v in encoder.state_dict().items()}
    state.update({f"mlm_head.dense.{k}": v for k, v in torch.nn.Linear(32, 32).state_dict().items()})
    for name, layer in (("tri_layer", tri), ("bin_layer", binary), ("reg_layer", reg)):
        state.update({f"{name}.{k}": v for k, v in layer.state_dict().items()})
    directory.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(directory)
    _tokenizer().save_pretrained(directory)
    path = directory / "AlignScore-tiny.ckpt"
    torch.save({"epoch": 2, "global_step": 10, "state_dict": state,
                "hyper_parameters": {"model": "roberta-base", "using_pretrained": False}}, path)
    return path, encoder.eval(), tri.eval()


def _aligned(encoder, tri, chunk: str, sentence: str) -> float:
    import torch

    inputs = _tokenizer()([chunk], [sentence], return_tensors="pt")
    with torch.no_grad():
        return tri(encoder(**inputs).pooler_output).softmax(-1)[0, 0].item()


def test_alignscore_checkpoint_scores_mean_over_claim_sentences_of_max_over_chunks(tmp_path):
    path, encoder, tri = _alignscore_checkpoint(tmp_path / "alignscore")
    checker = load_checker(f"alignscore:{path}#chunk=100", device="cpu", sentence_splitter=_splitter)
    assert checker.model_id == f"alignscore:{path}#chunk=100@0.5"
    [p] = checker.entailment_probabilities([PAIR])
    assert p == pytest.approx(_aligned(encoder, tri, *PAIR), abs=1e-5)
    # 60 sentences of 13 words, 780 words: 780 // 100 + 1 = 8 chunks wanted, so 60 // 8 = 7 sentences a chunk:
    # 9 chunks (the last of 4 sentences).
    claim = "River 3 flows north. Lake 40 is the last one."
    sentences = _splitter(LONG_PREMISE)
    assert len(sentences) == 60 and len(LONG_PREMISE.split()) == 780
    chunks = checkers.alignscore_chunks(sentences, 780, 100)
    assert len(chunks) == 9 and chunks[0] == " ".join(sentences[:7]) and chunks[-1] == " ".join(sentences[56:])
    [whole] = checker.entailment_probabilities([(LONG_PREMISE, claim)])
    assert checker.last_window_counts == [9]
    by_sentence = [max(_aligned(encoder, tri, c, s) for c in chunks) for s in _splitter(claim)]
    assert whole == pytest.approx(sum(by_sentence) / 2, abs=1e-5)
    # The folder holding the checkpoint works too; its config and tokenizer are read from it.
    assert load_checker(f"alignscore:{tmp_path / 'alignscore'}", device="cpu",
                        sentence_splitter=_splitter).entailment_probabilities([PAIR]) == pytest.approx([p], abs=1e-6)


def test_alignscore_wrong_layouts_are_one_clear_error(tmp_path):
    import torch

    path, _, _ = _alignscore_checkpoint(tmp_path / "ok")
    stored = torch.load(path, weights_only=True)
    no_head = tmp_path / "ok" / "no-head.ckpt"
    torch.save({"state_dict": {k: v for k, v in stored["state_dict"].items() if not k.startswith("tri_layer")}},
               no_head)
    with pytest.raises(RagevalError, match=r"not an AlignScore checkpoint.*tri_layer"):
        load_checker(f"alignscore:{no_head}", device="cpu")
    not_torch = tmp_path / "text.ckpt"
    not_torch.write_text("hello")
    with pytest.raises(RagevalError, match="not a PyTorch checkpoint"):
        load_checker(f"alignscore:{not_torch}", device="cpu")
    with pytest.raises(RagevalError, match="no such AlignScore checkpoint"):
        load_checker(f"alignscore:{tmp_path / 'missing.ckpt'}", device="cpu")
    with pytest.raises(RagevalError, match=r"expected one AlignScore \.ckpt"):
        load_checker(f"alignscore:{tmp_path / 'ok'}", device="cpu")  # two .ckpt files there now
    # An encoder that does not match the config: the heads fit, the encoder's shapes do not.
    bigger = tmp_path / "bigger"
    bigger.mkdir()
    from transformers import RobertaConfig

    RobertaConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=514).save_pretrained(bigger)
    _tokenizer().save_pretrained(bigger)
    with pytest.raises(RagevalError, match=r"does not (fit|match) the config"):
        load_checker(f"alignscore:{path}#base={bigger}", device="cpu")


# ---------------------------------------------------------------------------------------------- LLM judge


def test_llm_judge_through_load_checker_reads_yes_no():
    generator = FakeGenerator(rule=lambda prompt: "Yes" if "1928" in prompt.split("\n\n")[-1] else "No")
    judge = load_checker("llm#threshold=0.5", generator=generator)
    assert judge.entailment_probabilities([PAIR, ("Fleming found it.", "It was found in 1930.")]) == [1.0, 0.0]
    assert judge.model_id == f"llm:{generator.model_id}:nli-yesno@1@0.5"


def test_llm_judge_builds_its_generator_through_the_factory(monkeypatch, tmp_path):
    from rageval.generation import factory

    seen = []

    def fake_load_generator(settings):
        seen.append(settings)
        return FakeGenerator(rule=lambda prompt: "Yes", model_id=f"fake:{settings.model}")

    monkeypatch.setattr(factory, "load_generator", fake_load_generator)
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))
    settings = factory.ModelSettings(backend="openai", base_url="http://127.0.0.1:9/v1")
    judge = load_checker("llm:served-model", model_settings=settings)
    assert seen[0].model == "served-model" and seen[0].backend == "openai" and seen[0].base_url == settings.base_url
    assert judge.model_id.startswith("llm:fake:served-model:nli-yesno")
