"""Shared-prefix reuse: pick the token prefix many prompts share, so its key/value cache is computed once.

Every eRAG prompt of one model starts with the same instruction and few-shot examples (see
:func:`rageval.prompts.build_qa_prompt`); only the final block (passage, question, ``Answer:``) differs. A causal
LM's keys and values for a token depend only on the tokens before it, so the prefix's cache can be computed once
and each prompt then pays only for its suffix (the idea behind vLLM's automatic prefix caching, Kwon et al.,
SOSP 2023).

Everything works on token ids, never on strings: a prompt uses a prefix only when its own full tokenisation
starts with the prefix's ids, so the model always sees exactly the tokens the plain path would feed it. The
functions here are pure; the key/value caches themselves live in :class:`PrefixCacheStore`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any


def common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of ``sequences`` (0 for no sequences)."""
    if not sequences:
        return 0
    first = sequences[0]
    length = min(len(s) for s in sequences)
    for s in sequences[1:]:
        i = 0
        while i < length and s[i] == first[i]:
            i += 1
        length = i
    return length


def cut_at_line_end(ids: Sequence[int], length: int, ends_line: Callable[[int], bool]) -> int:
    """The largest ``k <= length`` such that token ``ids[k - 1]`` ends a line; ``length`` if none does.

    Cutting the shared prefix at a line end makes it the same across calls (the few-shot block always ends with
    a blank line, while what follows it, a title, may happen to start alike in one batch and not in the next),
    so one cached prefix serves every call.
    """
    for k in range(length, 0, -1):
        if ends_line(ids[k - 1]):
            return k
    return length


def starts_with(ids: Sequence[int], prefix: Sequence[int]) -> bool:
    """Whether ``ids`` begins with ``prefix`` and has at least one token after it (the prefix's cache gives no
    logits, so at least one prompt token must be run through the model)."""
    return len(ids) > len(prefix) and tuple(ids[: len(prefix)]) == tuple(prefix)


def choose_prefix(
    token_lists: Sequence[Sequence[int]],
    cached: Sequence[tuple[int, ...]],
    min_tokens: int,
    ends_line: Callable[[int], bool],
) -> tuple[int, ...] | None:
    """The prefix to reuse for one batch of prompts (given as token ids), or ``None`` to use the plain path.

    Candidates: the longest already ``cached`` prefix that every prompt starts with, and (for two prompts or more)
    the prompts' longest common token prefix cut back to a line end by :func:`cut_at_line_end`. The longer one
    wins; it must have at least ``min_tokens`` tokens and leave every prompt at least one token of its own.
    """
    if not token_lists:
        return None
    best: tuple[int, ...] = ()
    for prefix in cached:
        if len(prefix) > len(best) and all(starts_with(ids, prefix) for ids in token_lists):
            best = prefix
    if len(token_lists) > 1:
        length = common_prefix_length(token_lists)
        length = min(cut_at_line_end(token_lists[0], length, ends_line), min(len(ids) for ids in token_lists) - 1)
        if length > len(best):
            best = tuple(token_lists[0][:length])
    return best if len(best) >= min_tokens else None


class PrefixCacheStore:
    """A small least-recently-used map from a prefix's token ids to its computed key/value cache.

    The stored caches are never handed out: callers get them through ``compute`` once and must copy them
    before use (``generate`` extends a cache in place).
    """

    def __init__(self, max_entries: int = 4):
        if max_entries < 1:
            raise ValueError(f"PrefixCacheStore.max_entries: expected >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.computed = 0  # how many prefix caches were computed (tests and benchmarks read it)

    def prefixes(self) -> list[tuple[int, ...]]:
        return list(self._entries)

    def get(self, prefix: tuple[int, ...], compute: Callable[[tuple[int, ...]], Any]) -> Any:
        """The cache of ``prefix``, computed with ``compute(prefix)`` on first use."""
        if prefix in self._entries:
            self._entries.move_to_end(prefix)
            return self._entries[prefix]
        value = compute(prefix)
        self.computed += 1
        self._entries[prefix] = value
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()
