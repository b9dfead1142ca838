"""The parameters a measure string may carry (``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``, ``RBP(p=0.9)``).

Each :class:`Param` checks and normalises a value (the literal the user wrote) and spells it back in the one
canonical form, so that ``str(parse_measure(s))`` does not depend on how ``s`` was written: ``rel=2.0`` reads as
``rel=2``, ``gains={2: 3, 1: 1}`` as ``gains={2:3}`` (a label mapped to itself is the default). Names and
meanings follow ir_measures (``rel``, ``judged_only``, ``gains``, ``dcg``, ``p``, ``beta``, ``relative``) and
trec_eval (``-l``, ``-J``, ``Rprec_mult``).

*View* parameters change the labels every kernel reads (:mod:`rageval.measures.views`), so any measure can take them
without code of its own; *kernel* parameters are passed to the measure's kernel as keyword arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """One measure parameter: its name, default, how a value is checked and normalised, and what it means.

    ``normalise(value)`` returns the canonical value (hashable) or raises ``ValueError`` saying what is expected;
    ``spell(value)`` writes a canonical value as it appears in the canonical measure string. A parameter equal to
    its default is left out of the measure (and of its string). ``applies_to`` is ``"view"`` for the label
    transforms of :mod:`rageval.measures.views`, ``"kernel"`` for a keyword argument of the kernel.
    """

    name: str
    default: Any
    normalise: Callable[[Any], Any]
    spell: Callable[[Any], str]
    summary: str
    applies_to: str = "kernel"


def format_number(value: float) -> str:
    """``2`` for 2.0, ``0.8`` for 0.8: integral numbers without a decimal point, others as ``repr`` writes them."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _positive(name: str) -> Callable[[Any], float]:
    def normalise(value: Any) -> float:
        number = _number(value, name)
        if number <= 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
        return number
    return normalise


def _persistence(value: Any) -> float:
    number = _number(value, "p")
    if not 0 < number < 1:
        raise ValueError(f"p (persistence) must be strictly between 0 and 1, got {value!r}")
    return number


def _flag(name: str) -> Callable[[Any], bool]:
    def normalise(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")
        return value
    return normalise


def _choice(name: str, choices: tuple[str, ...]) -> Callable[[Any], str]:
    def normalise(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    return normalise


def _gains(value: Any) -> tuple[tuple[float, float], ...]:
    """``{label: gain}`` -> sorted ``((label, gain), ...)`` without the labels mapped to themselves."""
    if not isinstance(value, Mapping):
        raise ValueError(f"gains must be a mapping {{label: gain}}, e.g. {{0:0,1:1,2:3}}, got {value!r}")
    pairs = []
    for label, gain in value.items():
        level = _number(label, "a gains label")
        if level < 0:
            raise ValueError(f"gains: labels must be >= 0 (a negative label never has a gain), got {label!r}")
        pairs.append((level, _number(gain, f"the gain of label {format_number(level)}")))
    return tuple(sorted((label, gain) for label, gain in pairs if label != gain))


def _spell_gains(pairs: tuple[tuple[float, float], ...]) -> str:
    return "{" + ",".join(f"{format_number(label)}:{format_number(gain)}" for label, gain in pairs) + "}"


REL = Param(
    "rel", None, _positive("rel"), format_number,
    "minimum label counted as relevant (trec_eval -l); without it a label counts as clip(label, 0, 1)",
    applies_to="view",
)
JUDGED_ONLY = Param(
    "judged_only", False, _flag("judged_only"), repr,
    "drop the passages without a judgment (label >= 0) from the ranking first (trec_eval -J)",
    applies_to="view",
)
GAINS = Param(
    "gains", (), _gains, _spell_gains,
    "gain of each label, e.g. {0:0,1:1,2:3}; a label not listed is its own gain (trec_eval ndcg's rel=gain)",
    applies_to="view",
)
DCG = Param(
    "dcg", "log2", _choice("dcg", ("log2", "exp-log2")), repr,
    "'log2': gain g (Jarvelin & Kekalainen); 'exp-log2': gain 2^g - 1 (Burges et al., ICML 2005)",
    applies_to="view",
)
PERSISTENCE = Param("p", 0.8, _persistence, format_number, "persistence of the RBP user, 0 < p < 1")
BETA = Param("beta", 1.0, _positive("beta"), format_number,
             "relative importance of recall to precision: (1 + beta) P R / (beta P + R), trec_eval's set_F")
RELATIVE = Param("relative", False, _flag("relative"), repr,
                 "divide by min(retrieved, relevant) rather than by retrieved (trec_eval's set_relative_P)")
MULT = Param("mult", 1.0, _positive("mult"), format_number,
             "precision at rank floor(mult * R + 0.9) rather than at R (trec_eval's Rprec_mult)")

#: The parameters every measure reading a ranking takes: a relevance level and judged-only rankings.
LEVEL_PARAMS = (REL, JUDGED_ONLY)
