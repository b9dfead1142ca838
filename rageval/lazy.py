"""Packages whose public names load on first use (PEP 562), so that importing the package is cheap.

A package lists ``name -> submodule`` and installs the pair this module makes::

    __getattr__, __dir__ = lazy_names(__name__, {"compute_e2e": "e2e"}, globals())

(with the same names imported under ``TYPE_CHECKING`` for type checkers). A name is imported from its submodule
the first time it is asked for and then kept in the package's namespace; any other attribute is tried as a
submodule (``package.sub``), as eager imports used to make them attributes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str], namespace: dict[str, Any]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for its lazily imported ``names``."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
