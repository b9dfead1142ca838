"""The command line starts light: ``rageval --help`` and ``rageval info RUN`` import no pandas, numpy or torch
(checked in a fresh process), the table of commands matches what the command modules define, and the summary
``rageval info`` prints without pandas is the one pandas printed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from rageval.cli import COMMANDS, build_parser, command_name
from rageval.cli.runs import measure_means_table
from rageval.paths import REPO_ROOT
from rageval.store import RunReader
from tests.run_fixtures import make_small_run

HEAVY = ("pandas", "numpy", "torch", "transformers", "pyarrow", "faiss", "httpx", "tqdm")

CHECK_IMPORTS = """
import json, sys
from rageval.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
print(json.dumps({{"code": code, "heavy": heavy}}))
"""


def imports_of(*args: str) -> dict:
    """Run the CLI with ``args`` in a fresh interpreter; its exit code and the heavy modules it imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", CHECK_IMPORTS.format(heavy=set(HEAVY)), *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("startup") / "small.sqlite"
    make_small_run(path)
    return path


def test_help_imports_no_heavy_library():
    result = imports_of("--help")
    assert result == {"code": 0, "heavy": []}


@pytest.mark.parametrize("flags", [[], ["--json"]])
def test_info_imports_no_heavy_library(small_run, flags):
    result = imports_of("info", str(small_run), *flags)
    assert result == {"code": 0, "heavy": []}


def test_info_words_a_judge_s_unread_answers_without_pandas():
    """The shipped NQ run has unread judge answers (an older rageval stored them as No): their sentences are
    printed, and wording them imports no pandas (it cost 0.6 s of CPU, 26x starting Python; issue 42)."""
    shipped = REPO_ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
    with RunReader(shipped) as reader:
        assert reader.counted_as_no()  # what makes this run the case
    assert imports_of("info", str(shipped)) == {"code": 0, "heavy": []}
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-m", "rageval", "info", str(shipped)], env=env, capture_output=True,
                         text=True, timeout=120, cwd=REPO_ROOT, check=True).stdout
    assert "27 of 3,000 answers of the judge" in out and "stored them as No" in out


def test_a_command_defines_only_its_own_module_s_commands():
    sub = next(a for a in build_parser("info")._actions if a.dest == "command")
    defined = {name for name, command in sub.choices.items() if command._actions}
    assert defined == {"info", "export"}  # the two commands of rageval.cli.runs; the others are help lines only


def test_the_command_table_is_what_the_modules_define():
    parser = build_parser("*")
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)
    help_lines = {action.dest: action.help for action in sub._choices_actions}
    assert help_lines == {name: entry.help for name, entry in COMMANDS.items()}
    for name, entry in COMMANDS.items():
        handler = sub.choices[name].get_default("handler")
        if name not in ("rescore", "annotations", "queue"):  # handlers on their actions (start, import, ...)
            assert handler is not None and handler.__module__ == entry.module, name


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_prints_its_help(command, capsys):
    from rageval.cli import main

    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: rageval {command} ")


def test_every_command_module_is_under_rageval_cli():
    assert {entry.module.rsplit(".", 1)[0] for entry in COMMANDS.values()} == {"rageval.cli"}


def test_python_m_rageval_command_help_runs():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "rageval", "rescore", "start", "--help"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: rageval rescore start ")


def test_command_name_is_the_first_argument_that_is_no_option():
    assert command_name(["--version"]) is None
    assert command_name(["info", "x.sqlite", "--json"]) == "info"
    assert command_name(["-h"]) is None


def test_info_prints_the_measure_table_pandas_printed(small_run, capsys):
    from rageval.cli import main

    assert main(["info", str(small_run)]) == 0
    out = capsys.readouterr().out
    with RunReader(small_run) as reader:
        table = reader.measure_table()
        labels = reader.labels()
    wide = table.groupby(["method", "measure"])["value"].mean().unstack("measure")
    assert wide.round(3).to_string() in out
    for method, group in labels.groupby("method"):
        assert f"share of labels = 1 ({method}): {group['value'].mean():.3f} over {len(group)} labels" in out


@pytest.mark.parametrize("seed", range(5))
def test_measure_means_table_lays_out_as_pandas(seed):
    import random

    draw = random.Random(seed)
    specials = [float("nan"), float("inf"), -float("inf"), 1.0, 0.5, -0.0004, 12.3456, 0.0]
    rows = []
    for method in ("erag:em", "gold", "a-much-longer-method-name", "x"):
        for measure in ("P@1", "nDCG@10", "R@5", "Rprec", "AP@100"):
            if draw.random() < 0.8:
                scale = 10 ** draw.randint(-4, 2)
                value = draw.choice(specials) if draw.random() < 0.3 else draw.uniform(-1, 2) * scale
                rows.append((method, measure, None if isinstance(value, float) and math.isnan(value) else value))
    frame = pd.DataFrame([(m, x, float("nan") if v is None else v) for m, x, v in rows],
                         columns=["method", "measure", "value"])
    expected = frame.groupby(["method", "measure"])["value"].mean().unstack("measure").round(3).to_string()
    assert measure_means_table(rows) == expected
