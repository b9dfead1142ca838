"""The explicit registry of measure definitions and the parser of canonical measure strings.

Every measure module registers its definition at import; a name or alias that is already taken is
refused, so two measures can never answer to the same string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from rageval.measures.base import Measure, MeasureDefinition

_DEFINITIONS: dict[str, MeasureDefinition] = {}  # canonical name -> definition
_NAMES: dict[str, str] = {}  # canonical name or alias -> canonical name

_MEASURE_PATTERN = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_]*)(?:@(?P<cutoff>\d+))?$")


def register_measure(definition: MeasureDefinition) -> MeasureDefinition:
    """Add ``definition`` to the registry and return it; refuse a name or alias already taken."""
    for name in (definition.name, *definition.aliases):
        if not _MEASURE_PATTERN.match(name) or "@" in name:
            raise ValueError(f"invalid measure name {name!r}: expected letters and underscores")
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
    """Parse ``"nDCG@10"`` (name, then an optional ``@cutoff``) into a :class:`Measure`.

    Aliases parse to the canonical measure: ``parse_measure("MAP@10") == parse_measure("AP@10")``,
    and ``str(parse_measure(s))`` is the canonical spelling. A Measure is returned unchanged.
    """
    if isinstance(text, Measure):
        return text
    match = _MEASURE_PATTERN.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"cannot parse measure {text!r}: expected NAME or NAME@k, e.g. 'nDCG@10'")
    cutoff = match.group("cutoff")
    return Measure(get_definition(match.group("name")), None if cutoff is None else int(cutoff))
