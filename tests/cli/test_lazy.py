"""Packages that load their public names on first use (rageval.lazy, PEP 562): rageval.erag, rageval.generation and
rageval.jobs import nothing heavy until a name is asked for, then give the very objects their submodules define."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("rageval.erag", "rageval.generation", "rageval.jobs")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_lazy_name_is_its_submodules_object(package):
    module = importlib.import_module(package)
    for name, submodule in module._LAZY.items():
        assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{submodule}"), name), name
        assert name in dir(module)
    if hasattr(module, "__all__"):  # what a star import promises is what loads lazily
        assert sorted(module.__all__) == sorted(module._LAZY)


@pytest.mark.parametrize("package", PACKAGES)
def test_an_unknown_name_is_an_attribute_error_and_a_submodule_still_loads(package):
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    submodule = next(iter(module._LAZY.values()))
    assert getattr(module, submodule).__name__ == f"{package}.{submodule}"


def test_importing_the_packages_imports_no_submodule():
    code = ("import sys, rageval.erag, rageval.generation, rageval.jobs\n"
            f"print(sorted(m for m in sys.modules if m.startswith({PACKAGES!r}) and m not in {PACKAGES!r}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
