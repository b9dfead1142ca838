"""Exact-match early stopping: end an answer as soon as its exact match against the gold answers is sure to be 0.

An eRAG label under exact match (``erag:em``) needs only whether the answer, normalised the SQuAD way
(:func:`rageval.text_metrics.normalize_answer`: lower-case, ASCII punctuation dropped, the articles a/an/the
dropped, whitespace collapsed), equals a normalised gold answer. Most answers of a small model are wrong, and most
are wrong from their first word or two: "Alexander Fleming" against the gold "Marie Curie" is decided once the
text reads "Alexander Fleming" (no continuation can turn it into "marie curie"), while the model would go on to
its newline or ``max_new_tokens``. Stopping there gives the same label, fewer decode steps.

**The rule.** Let ``U`` be the text generated so far (leading whitespace dropped, as :func:`apply_stop` does) and
the answer be ``U + C`` cut at its first stop string, for a continuation ``C`` not yet known. Split ``U`` after its
last whitespace character into ``U_done`` and ``U_tail`` (no whitespace). Normalisation is *concatenative at a
whitespace character*: lower-casing (Python's only context rule, the final sigma, does not look across
whitespace), dropping punctuation, dropping articles (``\\b(a|an|the)\\b``: every whitespace character is a
non-word character, so no match spans it and word boundaries next to it are the same in the part as in the whole)
and splitting on whitespace all act on each side alone, so the normalised words of ``U + C`` are
``words(U_done)`` followed by ``words(U_tail + C)``. Hence ``U + C`` can equal a gold answer G only if G's words
start with ``words(U_done)``. When ``U_tail`` is ASCII and, lower-cased without punctuation, a non-empty run of
letters and digits ``t`` that is not the start of an article (``a``, ``an``, ``t``, ``th``, ``the``), the next
word of ``U + C`` exists and starts with ``t`` (no article match can touch ``t``'s characters, and ASCII
lower-casing acts character by character), so G also needs a next word starting with ``t``. A stop string could
also begin inside ``U`` and end in ``C``; the answer then is ``U`` cut where it begins, which is checked too.
When no gold answer fits, exact match is 0 for every continuation: the row stops.

**Which text.** ``U`` must be a prefix of the text the full decode would give. The tokens so far are decoded the
way the final answer is; trailing U+FFFD characters (the bytes of a character not complete yet, which a byte
fallback decodes as replacement characters) are dropped. With a tokenizer that cleans up spaces on decoding
(``clean_up_tokenization_spaces``: " ." becomes "." once the "." arrives) nothing is stopped (the full decode,
the same labels). Each row's text must also extend its previous text; a row where it does not is never stopped.

**What is stored.** A stopped row's answer is its text so far followed by :data:`STOPPED_MARK`, so it is never
taken for the model's answer; its exact match is 0, as the full answer's. Other metrics (token F1, ROUGE-L,
BERTScore, answer accuracy) need the full answer: early stopping is only for runs whose every label metric is
exact match.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from rageval.generation.base import DecodingSettings
from rageval.text_metrics import normalize_answer

#: Appended to a stopped row's text so far: the stored answer says it was cut (its exact match is 0, as the full
#: answer's). Starts with a space, so it never joins the last word.
STOPPED_MARK = " [stopped early: can no longer equal a gold answer]"
_ARTICLE_STARTS = frozenset({"a", "an", "t", "th", "the"})
_PUNCTUATION = frozenset(string.punctuation)
_ALNUM = frozenset(string.ascii_lowercase + string.digits)


def is_stopped(answer: str) -> bool:
    """Whether ``answer`` is a stopped row's (it ends with :data:`STOPPED_MARK`)."""
    return answer.endswith(STOPPED_MARK)


def stopped_answer(text: str) -> str:
    """The stored answer of a row stopped at ``text``: the text so far, stripped, and :data:`STOPPED_MARK`."""
    return text.strip() + STOPPED_MARK


class ExactMatchStop:
    """Whether a partial answer can still reach exact match 1 against ``gold_answers`` (see the module docstring).

    ``stop``: the decoding's stop strings (the answer is cut at the first one).
    """

    def __init__(self, gold_answers: Sequence[str], stop: Sequence[str]):
        self.gold_answers = tuple(gold_answers)
        self.normalized = {normalize_answer(gold) for gold in gold_answers}
        self.golds = [gold.split() for gold in self.normalized]
        self.stop = tuple(stop)

    def cannot_match(self, text: str) -> bool:
        """True when every answer starting with ``text`` (a prefix of the raw generated text) has exact match 0."""
        if not self.golds:
            return True  # exact match is 0 without gold answers, whatever the answer
        done = text.lstrip()
        if any(s in done for s in self.stop):
            return False  # the answer is complete: the caller ends the row as usual
        # A stop string begun inside the text and completed later cuts the answer inside the text.
        for s in self.stop:
            for j in range(max(0, len(done) - len(s) + 1), len(done)):
                if s.startswith(done[j:]) and normalize_answer(done[:j]) in self.normalized:
                    return False
        cut = max((i + 1 for i, ch in enumerate(done) if ch.isspace()), default=0)
        words = normalize_answer(done[:cut]).split()
        tail = _tail_word_start(done[cut:])
        n = len(words)
        for gold in self.golds:
            if gold[:n] == words and (tail is None or (len(gold) > n and gold[n].startswith(tail))):
                return False
        return True


def _tail_word_start(tail: str) -> str | None:
    """What the next normalised word surely starts with, given the whitespace-free ``tail`` the text ends with;
    ``None`` when nothing is sure (empty, not ASCII, only punctuation, or possibly an article)."""
    if not tail.isascii():
        return None
    start = "".join(ch for ch in tail.lower() if ch not in _PUNCTUATION)
    if not start or start in _ARTICLE_STARTS or not set(start) <= _ALNUM:
        return None
    return start


def tokenizer_allows(tokenizer) -> bool:
    """Whether a token prefix's decoding (trailing U+FFFD dropped) is a prefix of the whole's: not for a tokenizer
    that cleans up spaces when decoding (" ." becomes "." once the "." arrives)."""
    return not getattr(tokenizer, "clean_up_tokenization_spaces", False)


def generate_stopping_early(generator: Any, prompts: Sequence[str], settings: DecodingSettings,
                            em_targets: Sequence[Sequence[str]]) -> list[str]:
    """``generator``'s answers with exact-match early stopping against ``em_targets[i]`` (prompt i's gold answers)
    where it supports it (``supports_em_early_stop``), else its full answers: the same exact match either way."""
    if getattr(generator, "supports_em_early_stop", False):
        return generator.generate(prompts, settings, em_targets=em_targets)
    return generator.generate(prompts, settings)
