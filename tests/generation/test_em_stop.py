"""Exact-match early stopping (:mod:`rageval.generation.em_stop`): the rule never stops an answer whose exact match
could still be 1 (checked against :func:`rageval.text_metrics.exact_match` over many continuations, tricky
normalisation included), it does stop answers that are already wrong, and on a tiny model the exact-match labels
are the full decode's while stopped answers say so."""

from __future__ import annotations

import random

import pytest

from rageval.generation.base import DecodingSettings, apply_stop
from rageval.generation.em_stop import STOPPED_MARK, ExactMatchStop, is_stopped
from rageval.text_metrics import exact_match

# Units that stress the SQuAD normalisation: articles and their starts, ASCII and non-ASCII punctuation, the final
# sigma, a character whose lower case is two, whitespace of several kinds, the stop string.
UNITS = ["a", "an", "the", "t", "th", "he", "x", "T", "The", "A", "AN", " ", "  ", ".", ",", "'", "-", "’", "–",
         "Σ", "ΑΣ", "σ", "ς", "İ", "1", "é", "_", "\t", "\n", "Curie", "Marie", "cur"]
GOLD_WORDS = ["the", "an", "a", "Σας", "ας", "x-e", "Tha", "A.N.", "tea", "1", "Marie", "Curie", "x", "é", "he",
              "t’he", "İx", "ix"]


def _random_text(rng: random.Random, max_units: int) -> str:
    return "".join(rng.choice(UNITS) for _ in range(rng.randint(0, max_units)))


def _continuations(rng: random.Random, golds: list[str]) -> list[str]:
    """Every suffix of every gold answer (the continuations likeliest to reach a match), each also after a space,
    plus random ones."""
    out = [""]
    for gold in golds:
        for i in range(len(gold) + 1):
            out += [gold[i:], " " + gold[i:], gold[i:] + "\n", " " + gold[i:] + "."]
    out += [_random_text(rng, 4) for _ in range(40)]
    return out


@pytest.mark.parametrize("stop", [("\n",), ("\n", "##", "Q:")])
def test_a_stopped_prefix_never_reaches_exact_match_whatever_follows(stop):
    rng = random.Random(7)
    stops = checked = 0
    for _ in range(1500):
        golds = [" ".join(rng.choice(GOLD_WORDS) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
        rule = ExactMatchStop(golds, stop)
        # Texts near a gold answer (a gold's prefix, perturbed) as well as random ones.
        gold = rng.choice(golds)
        text = rng.choice([_random_text(rng, 5), gold[:rng.randint(0, len(gold))],
                           gold[:rng.randint(0, len(gold))] + rng.choice(UNITS)])
        if any(s in text.lstrip() for s in stop):
            continue
        checked += 1
        if not rule.cannot_match(text):
            continue
        stops += 1
        for rest in _continuations(rng, golds):
            answer = apply_stop(text + rest, stop)
            assert exact_match(answer, golds) == 0.0, (text, rest, golds)
        assert exact_match(text.strip() + STOPPED_MARK, golds) == 0.0
    assert checked > 1000 and stops > checked // 10  # the rule does stop answers, it is not vacuous


@pytest.mark.parametrize("text, golds, expected", [
    ("Alexander Fleming", ["Marie Curie"], True),     # decided at the first word already (ASCII, no article)
    ("Alexander", ["Marie Curie"], True),
    ("Marie", ["Marie Curie"], False),
    ("Marie Cu", ["Marie Curie"], False),
    ("Marie Cx", ["Marie Curie"], True),
    ("The Marie", ["Marie Curie"], False),            # the article is dropped by the normalisation
    ("Th", ["Marie Curie"], False),                   # may become the article "the"
    ("an", ["Marie Curie"], False),
    ("Mari.", ["Marie Curie"], False),                # punctuation is dropped: "Mari.e" is "marie"
    ("Marie-", ["Marie Curie"], False),
    ("Skłod", ["Marie Curie"], False),                # not ASCII: the last word is left undecided
    ("Skłodowska ", ["Marie Curie"], True),
    ("  \t", ["Marie Curie"], False),
    ("anything", [], True),                           # no gold answer: exact match is 0 whatever follows
    ("1,000", ["1000"], False),
    ("1,001", ["1000"], True),
])
def test_the_rule_on_examples(text, golds, expected):
    assert ExactMatchStop(golds, ("\n",)).cannot_match(text) is expected


def test_a_stop_string_begun_inside_the_text_is_considered():
    # "Paris #" may become "Paris ##..." and be cut to "Paris", a gold answer.
    rule = ExactMatchStop(["Paris"], ("##",))
    assert not rule.cannot_match("Paris #")
    assert rule.cannot_match("Pariz #")


def test_tiny_model_same_exact_match_labels_and_marked_stops(tiny_model_dir):
    from rageval.generation.transformers_backend import TransformersGenerator
    from tests.generation.test_shared_prefix import PREFIX, PROMPTS

    settings = DecodingSettings(max_new_tokens=12)
    generator = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=6, prefix=PREFIX, min_prefix_tokens=8)
    full = generator.generate(PROMPTS, settings)
    # Gold answers around each full answer: itself, itself re-cased with an article and punctuation, its first
    # half (a prefix: the full answer goes on past it), another row's answer, a made-up one, none.
    for shift in range(6):
        targets = []
        for i, answer in enumerate(full):
            kind = (i + shift) % 6
            golds = {0: [answer], 1: [f"The {answer.upper()}!"], 2: [answer[:len(answer) // 2]],
                     3: [full[(i + 1) % len(full)]], 4: ["zzzz qqqq"], 5: []}[kind]
            targets.append(golds)
        stopped_before = generator.em_rows_stopped
        early = generator.generate(PROMPTS, settings, em_targets=targets)
        assert [exact_match(a, g) for a, g in zip(early, targets)] == [exact_match(a, g) for a, g in zip(full, targets)]
        for answer, stopped_answer, golds in zip(full, early, targets):
            if is_stopped(stopped_answer):
                assert exact_match(answer, golds) == 0.0
            else:
                assert stopped_answer == answer  # a row not stopped is the model's full answer
        assert generator.em_rows_stopped - stopped_before == sum(map(is_stopped, early))
    assert generator.em_rows_stopped > 0
    # A tokenizer that cleans up spaces when decoding: a prefix's text may change later, so nothing is stopped.
    generator.tokenizer.clean_up_tokenization_spaces = True
    assert not generator.supports_em_early_stop
    assert generator.generate(PROMPTS, settings, em_targets=[["zzzz qqqq"]] * len(PROMPTS)) == full


class _StoppingFake:
    """A generator that supports early stopping: its full answer is the prompt's last word; stopped against gold
    answers its first letter can no longer reach, it answers that letter, marked."""

    supports_em_early_stop = True
    model_id = "fake:last-word-stopping/v1"

    def __init__(self):
        self.prompts_seen = 0

    def generate(self, prompts, settings, *, em_targets=None):
        from rageval.generation.em_stop import stopped_answer

        self.prompts_seen += len(prompts)
        answers = []
        for i, prompt in enumerate(prompts):
            full = prompt.split()[-1]
            if em_targets is not None and ExactMatchStop(em_targets[i], settings.stop).cannot_match(full[0]):
                answers.append(stopped_answer(full[0]))
            else:
                answers.append(full)
        return answers


def test_the_cache_keeps_stopped_answers_apart_from_full_ones(tmp_path):
    from rageval.generation.cache import CachedGenerator, LLMCache

    settings = DecodingSettings()
    prompts = ["q: Paris", "q: Lyon"]
    targets = [["Paris"], ["Paris"]]  # the second prompt's answer "Lyon" is stopped at "L"
    with LLMCache(tmp_path / "cache.sqlite") as cache:
        fake = _StoppingFake()
        cached = CachedGenerator(fake, cache)
        assert cached.supports_em_early_stop
        first = cached.generate(prompts, settings, em_targets=targets)
        assert first[0] == "Paris" and is_stopped(first[1]) and first[1].startswith("L ")
        assert cached.generate(prompts, settings, em_targets=targets) == first and fake.prompts_seen == 2
        # Without early stopping the stopped answer is never served: the prompt is generated in full.
        assert cached.generate(prompts, settings) == ["Paris", "Lyon"] and fake.prompts_seen == 3
        # Other gold answers for the same prompt: a call of its own.
        assert cached.generate(["q: Rome"], settings, em_targets=[["Paris"]]) != ["Rome"]
        assert cached.generate(["q: Rome"], settings, em_targets=[["Rome"]]) == ["Rome"]
        assert fake.prompts_seen == 5
        # The same prompt twice in one call with different gold answers: each gets its own.
        twice = cached.generate(["q: Nice", "q: Nice"], settings, em_targets=[["Nice"], ["Oslo"]])
        assert twice[0] == "Nice" and is_stopped(twice[1])
        # A dry run finds full and stopped answers alike; a prompt asked against other answers is a new call.
        from rageval.pipeline.evaluate import DryRunGenerator

        dry = DryRunGenerator(fake.model_id, cache)
        assert dry.generate(prompts, settings, em_targets=targets) == ["Paris", "Lyon"]  # full answers serve
        assert (dry.hits, dry.misses) == (2, 0)
        cached.generate(["q: Oslo"], settings, em_targets=[["Paris"]])  # only a stopped answer is cached
        assert is_stopped(dry.generate(["q: Oslo"], settings, em_targets=[["Paris"]])[0])
        assert dry.generate(["q: Oslo"], settings)[0].startswith("(not generated yet")  # never the stopped one
        dry.generate(["q: Lyon", "q: Lyon"], settings, em_targets=[["Oslo"], ["Oslo"]])
        assert (dry.hits, dry.misses) == (5, 1)  # the full answer of "q: Lyon" is cached: it serves any answers
        dry.generate(["q: Bern", "q: Bern"], settings, em_targets=[["Oslo"], ["Bern"]])
        assert (dry.hits, dry.misses) == (5, 3)


def test_evaluate_with_em_early_stop_gives_the_same_labels(tiny_model_dir, tmp_path, capsys, monkeypatch):
    from rageval.store import read_run
    from tests.pipeline.test_pipeline import PASSAGES, QUESTIONS, run_cli, write_jsonl

    folder = tmp_path / "data"
    folder.mkdir()
    queries = write_jsonl(folder / "q.jsonl", [{"query_id": q, "text": t, "answers": a, "gold_passage_ids": g}
                                               for q, t, a, g, _ in QUESTIONS])
    corpus = write_jsonl(folder / "c.jsonl", [{"passage_id": p, "title": t, "text": x}
                                              for p, (t, x) in PASSAGES.items()])
    run = folder / "run.trec"
    run.write_text("".join(f"{q} Q0 {p} {r} {20 - r} x\n" for q, _, _, _, ranked in QUESTIONS
                           for r, p in enumerate(ranked, start=1)))
    base = ["evaluate", "--queries", queries, "--corpus", corpus, "--run", run, "--model", tiny_model_dir,
            "--k", "3", "--methods", "erag", "--max-new-tokens", 8, "--label-metrics", "em"]
    labels, outputs = {}, {}
    for name, extra in (("full", []), ("early", ["--em-early-stop"])):
        out = tmp_path / f"{name}.sqlite"
        code, _, err = run_cli(base + extra + ["--out", out], capsys, monkeypatch, tmp_path / f"cache-{name}")
        assert code == 0, err
        stored = read_run(out)
        labels[name] = {(x.query_id, x.passage_id): x.value for x in stored.labels if x.method == "erag:em"}
        outputs[name] = {(x.query_id, x.passage_id): x.output for x in stored.doc_outputs}
        assert stored.settings.get("em_early_stop", False) is (name == "early")
    assert labels["early"] == labels["full"] and len(labels["full"]) == len(QUESTIONS) * 3
    for key, output in outputs["early"].items():
        assert output == outputs["full"][key] or (is_stopped(output) and labels["full"][key] == 0.0)
    assert any(map(is_stopped, outputs["early"].values()))

    code, _, err = run_cli(base[:-1] + ["em,f1", "--em-early-stop", "--out", tmp_path / "x.sqlite"], capsys,
                           monkeypatch, tmp_path / "cache-x")
    assert code != 0 and "exact-match early stopping" in err and "Traceback" not in err


def test_the_cost_configuration_with_early_stopping_keeps_the_labels(tiny_model_dir, monkeypatch):
    import sys
    import types

    from rageval.erag.cost import measure_configuration
    from tests.generation.test_shared_prefix import PREFIX, QUESTIONS

    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # see test_report's cost test
    erag_prompts = [[PREFIX + q for q in QUESTIONS[:3]], [PREFIX + q for q in QUESTIONS[3:]]]
    e2e_prompts = [PREFIX + QUESTIONS[0], PREFIX + QUESTIONS[3]]
    with pytest.raises(ValueError, match="gold answers"):
        measure_configuration("erag-query-em", erag_prompts, e2e_prompts, model=tiny_model_dir)
    answers = [["zz"], [""]]  # the tiny model's answers are random bytes: no label is 1, rows stop early
    full = measure_configuration("erag-query", erag_prompts, e2e_prompts, model=tiny_model_dir, threads=1,
                                 answers=answers)
    early = measure_configuration("erag-query-em", erag_prompts, e2e_prompts, model=tiny_model_dir, threads=1,
                                  answers=answers)
    assert full.em_labels is not None and early.em_labels == full.em_labels and len(full.em_labels) == 6
