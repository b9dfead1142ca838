"""Worked examples for the SQuAD text metrics; each expected number is derived in the comment beside it."""

from __future__ import annotations

import pytest

from rageval.text_metrics import accuracy, contains_answer, exact_match, normalize_answer, token_f1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),  # lower-case, article dropped
        ("  U.S.A.  ", "usa"),  # punctuation removed before splitting
        ("an apple, a pear & the plum", "apple pear plum"),  # all three articles and '&' ',' go
        ("Theatre", "theatre"),  # 'the' inside a word is kept (word boundary)
        ("Tab\tand\nnewline", "tab and newline"),  # whitespace collapsed
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_is_max_over_answers():
    # "the Beatles!" normalises to "beatles", equal to the second answer.
    assert exact_match("the Beatles!", ["Rolling Stones", "Beatles"]) == 1.0
    assert exact_match("Beatles band", ["Beatles"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_token_f1_worked_example():
    # pred "the cat sat on mat" -> [cat, sat, on, mat] (4 tokens); gold "a cat on the mat" -> [cat, on, mat] (3).
    # overlap = 3, P = 3/4, R = 3/3 = 1, F1 = 2 * 0.75 * 1 / 1.75 = 6/7.
    assert token_f1("the cat sat on mat", ["a cat on the mat"]) == pytest.approx(6 / 7)


def test_token_f1_counts_repeated_tokens_once_per_match():
    # pred [new, new, york] vs gold [new, york]: multiset overlap = min(2,1) + 1 = 2, P = 2/3, R = 1,
    # F1 = 2 * (2/3) / (5/3) = 0.8.
    assert token_f1("New new York", ["New York"]) == pytest.approx(0.8)


def test_token_f1_takes_max_over_answers_and_handles_empty():
    # vs "Paris": overlap 1, P = 1/2, R = 1 -> 2/3; vs "Paris France": exact -> 1.0; max = 1.0.
    assert token_f1("Paris, France", ["Paris", "Paris France"]) == pytest.approx(1.0)
    assert token_f1("Berlin", ["Paris"]) == 0.0
    assert token_f1("", ["Paris"]) == 0.0
    assert token_f1("the", ["a"]) == 1.0  # both normalise to no tokens
    assert token_f1("Paris", []) == 0.0


def test_accuracy():
    # 2 of the 3 labels agree -> 2/3.
    assert accuracy(["yes", "no", "yes"], ["yes", "no", "no"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="2 predicted labels but 1 gold"):
        accuracy(["yes", "no"], ["yes"])
    with pytest.raises(ValueError, match="no labels"):
        accuracy([], [])


def test_contains_answer_on_token_boundaries():
    passage = "The tower was built in 1889 in Paris, France, by Gustave Eiffel's company."
    assert contains_answer(passage, ["paris"])
    assert contains_answer(passage, ["Gustave Eiffel's"])  # apostrophe dropped on both sides
    assert contains_answer(passage, ["London", "1889"])  # any answer suffices
    assert not contains_answer(passage, ["Pari"])  # substring of a token is not a match
    assert not contains_answer("Parisian cafes", ["Paris"])
    assert not contains_answer(passage, ["the"])  # normalises to empty: never counts
    assert not contains_answer(passage, [])
