"""Heavy modules load only where they are used: a dashboard page with a "what this run lacks" panel imports no job
runner, command line, measures or model backend (each name is imported from the submodule that defines it, and the
job actions import theirs inside the functions that run them); the packages re-export nothing, so importing one
imports none of its submodules."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from rageval.paths import REPO_ROOT

PACKAGES = ("rageval.erag", "rageval.generation", "rageval.jobs", "rageval.upload")

#: What a lacks-panel page must not load: the job CLI, worker and writers, the measures, the model backends.
NOT_ON_A_LACKS_PAGE = ("rageval.cli.rescore", "rageval.jobs.worker", "rageval.jobs.control", "rageval.jobs.labelling",
                       "rageval.jobs.run_file", "rageval.measures", "rageval.generation.transformers_backend",
                       "rageval.generation.openai_backend", "torch", "transformers")


def fresh_imports(modules: list[str]) -> list[str]:
    """Every module loaded in a fresh interpreter that imports ``modules``."""
    code = (f"import importlib, json, sys\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def page_imports(page) -> set[str]:
    """The modules a page script imports (``from ui import data`` counts as ``ui.data``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(page.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            if node.module in ("ui", "rageval"):
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_a_page_with_a_lacks_panel_imports_no_job_runner_measures_or_model():
    pages = [page for page in sorted((REPO_ROOT / "app_pages").glob("*.py")) if "ui.render_lacks" in page_imports(page)]
    assert pages, "no page shows the lacks panel any more: this test checks nothing"
    modules = sorted(set().union(*map(page_imports, pages)))
    loaded = fresh_imports(modules)
    assert "ui.render_lacks" in loaded
    heavy = [m for m in loaded if m in NOT_ON_A_LACKS_PAGE or m.startswith(tuple(f"{h}." for h in NOT_ON_A_LACKS_PAGE))]
    assert heavy == []


def test_importing_a_package_imports_none_of_its_submodules():
    loaded = fresh_imports(list(PACKAGES))
    assert [m for m in loaded if m.startswith(tuple(f"{p}." for p in PACKAGES))] == []
