"""The explicit registry of measure definitions and the one parser of measure strings.

Every measure module registers its definition at import; a name or alias that is already taken is
refused, so two measures can never answer to the same string.

The grammar is ir_measures' (what IR people type), read once by :func:`parse_measure`::

    measure  := NAME [ "(" param ("," param)* ")" ] [ "@" cutoff ]
    param    := KEY "=" VALUE          VALUE: a Python literal: 2, 0.8, True, 'exp-log2', {0:0,1:1,2:3}
    cutoff   := INTEGER >= 1           a rank, e.g. nDCG@10
              | NUMBER in [0, 1]       a recall level, for IPrec only: IPrec@0.5

e.g. ``P@5``, ``P(rel=2)@5``, ``AP(judged_only=True)``, ``nDCG(dcg='exp-log2')@10``, ``nDCG(gains={0:0,1:1,2:3})``,
``RBP(p=0.9)``, ``IPrec@0.5``. Spaces are allowed around the parts; ``cutoff=`` (``recall=`` for IPrec) may also
be given in the parentheses, and an ``@`` cutoff wins over it, as in ir_measures. ``str(parse_measure(s))`` is the
canonical spelling: the definition's name (aliases resolve to it), the parameters that differ from their defaults
in alphabetical order with canonical values, then the cutoff.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from rageval.measures.base import Measure, MeasureDefinition

_DEFINITIONS: dict[str, MeasureDefinition] = {}  # canonical name -> definition
_NAMES: dict[str, str] = {}  # canonical name or alias -> canonical name

_NAME = r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*"
_NAME_PATTERN = re.compile(rf"^{_NAME}$")
_MEASURE_PATTERN = re.compile(
    rf"^\s*(?P<name>{_NAME})\s*(?:\((?P<params>.*)\))?\s*(?:@\s*(?P<cutoff>[^@\s]+))?\s*$", re.DOTALL
)
_RANK = re.compile(r"^\d+$")
_RECALL = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)$")
EXAMPLES = "'nDCG@10', 'P(rel=2)@5', 'AP(judged_only=True)', \"nDCG(dcg='exp-log2')@10\", 'IPrec@0.5'"



def register_measure(definition: MeasureDefinition) -> MeasureDefinition:
    """Add ``definition`` to the registry and return it; refuse a name or alias already taken."""
    for name in (definition.name, *definition.aliases):
        if not _NAME_PATTERN.match(name):
            raise ValueError(f"invalid measure name {name!r}: expected letters, digits and underscores")
        if name in _NAMES:
            raise ValueError(
                f"measure name {name!r} is already registered (by {_NAMES[name]!r}); "
                "names and aliases must be unique"
            )
    _DEFINITIONS[definition.name] = definition
    for name in (definition.name, *definition.aliases):
        _NAMES[name] = definition.name
    return definition


def registered_measures() -> Mapping[str, MeasureDefinition]:
    """Read-only view of the registered definitions by canonical name."""
    return MappingProxyType(_DEFINITIONS)


def get_definition(name: str) -> MeasureDefinition:
    """The definition registered under ``name`` (canonical name or alias)."""
    try:
        return _DEFINITIONS[_NAMES[name]]
    except KeyError:
        known = ", ".join(sorted(_NAMES))
        raise ValueError(f"unknown measure {name!r}; known measures: {known}") from None


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure string (``"nDCG@10"``, ``"P(rel=2)@5"``; the grammar is in this module's docstring) into
    a :class:`Measure`. A Measure is returned unchanged.

    Aliases parse to the canonical measure: ``parse_measure("MAP@10") == parse_measure("AP@10")``, and
    ``str(parse_measure(s))`` is the canonical spelling. Raises ``ValueError`` saying what is wrong.
    """
    if isinstance(text, Measure):
        return text
    match = _MEASURE_PATTERN.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"cannot parse measure {text!r}: expected NAME, NAME@k or NAME(param=value,...)@k, "
                         f"e.g. {EXAMPLES}")
    definition = get_definition(match.group("name"))
    params = _parse_params(text, match.group("params"))
    at_param = "recall" if definition.cutoff_kind == "recall" else "cutoff"
    cutoff: Any = params.pop(at_param, None)
    if match.group("cutoff") is not None:
        cutoff = _parse_cutoff(text, definition, match.group("cutoff"))
    elif cutoff is not None and definition.cutoff_kind == "rank" and (isinstance(cutoff, bool)
                                                                       or not isinstance(cutoff, int)):
        raise ValueError(f"cannot parse measure {text!r}: cutoff must be an integer >= 1, got {cutoff!r}")
    return Measure(definition, cutoff, tuple(params.items()))


def parse_measure_list(measures: str | Iterable[str | Measure]) -> list[Measure]:
    """Several measures: a string of measure strings separated by commas (commas inside parentheses or braces
    belong to a measure: ``"P(rel=2,judged_only=True)@5, nDCG@10"``), or an iterable of strings or Measures.
    Each is parsed by :func:`parse_measure`; repeats are dropped (first kept), the order is kept."""
    items = split_measure_list(measures) if isinstance(measures, str) else list(measures)
    return list(dict.fromkeys(parse_measure(item) for item in items))


def split_measure_list(text: str) -> list[str]:
    """``"P(rel=2,judged_only=True)@5, nDCG@10"`` -> ``["P(rel=2,judged_only=True)@5", "nDCG@10"]``."""
    parts, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _parse_cutoff(text: str, definition: MeasureDefinition, cutoff: str) -> int | float:
    if definition.cutoff_kind == "recall":
        if not _RECALL.match(cutoff):
            raise ValueError(f"cannot parse measure {text!r}: the recall level after '@' must be a number in "
                             f"[0, 1], e.g. {definition.name}@0.5")
        return float(cutoff)
    if not _RANK.match(cutoff):
        raise ValueError(f"cannot parse measure {text!r}: the cutoff after '@' must be an integer >= 1, "
                         f"e.g. {definition.name}@10")
    return int(cutoff)


def _parse_params(text: str, inside: str | None) -> dict[str, Any]:
    """``rel=2, judged_only=True`` -> ``{"rel": 2, "judged_only": True}``: keyword arguments of Python literals."""
    if inside is None or not inside.strip():
        return {}
    try:
        call = ast.parse(f"f({inside})", mode="eval").body
    except SyntaxError:
        call = None
    if not isinstance(call, ast.Call) or call.args or any(keyword.arg is None for keyword in call.keywords):
        raise ValueError(f"cannot parse the parameters of measure {text!r}: expected name=value pairs separated "
                         f"by commas, e.g. {EXAMPLES}")
    params: dict[str, Any] = {}
    for keyword in call.keywords:
        assert keyword.arg is not None  # checked above
        if keyword.arg in params:
            raise ValueError(f"measure {text!r} gives parameter {keyword.arg!r} twice")
        params[keyword.arg] = _literal(text, keyword.arg, keyword.value)
    return params


def _literal(text: str, name: str, node: ast.expr) -> Any:
    """A parameter value: a Python literal, or a bare word read as a string (``dcg=log2``)."""
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"measure {text!r}: the value of {name!r} must be a number, True/False, a quoted "
                         f"string or a {{label: gain}} mapping, got {ast.unparse(node)!r}") from None
