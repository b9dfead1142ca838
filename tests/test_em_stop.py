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
    from tests.test_shared_prefix import PREFIX, PROMPTS

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
