"""Readers of what an AppTest page rendered, shared by the page tests: chart specs, captions, a table by column."""

from __future__ import annotations

import json

import pandas as pd


def vega_charts(app) -> list[tuple[dict, pd.DataFrame]]:
    """The Vega-Lite charts of the page in page order, each as (spec, its data): the spec as JSON and the rows the
    browser gets (Arrow IPC, an empty frame when the spec holds its data inline)."""
    import pyarrow as pa

    charts = []
    for chart in app.get("vega_lite_chart"):
        proto = chart.proto
        data = (pa.ipc.open_stream(proto.data.data).read_all().to_pandas() if proto.data.data else pd.DataFrame())
        charts.append((json.loads(proto.spec), data))
    return charts


def captions(app) -> str:
    """Every caption of the page, joined by spaces."""
    return " ".join(c.value for c in app.caption)


def frame_with(app, column: str) -> pd.DataFrame:
    """The first table of the page with ``column`` (found by its columns, not its position)."""
    return next(df.value for df in app.dataframe if column in df.value.columns)


def use_shipped_runs(monkeypatch) -> None:
    """The dashboard on the shipped demo runs only: an empty user runs folder, and data/runs listed (tests hide
    it by default, tests/conftest.py)."""
    import tempfile

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", tempfile.mkdtemp(prefix="rageval-no-user-runs-"))
    monkeypatch.delenv("RAGEVAL_SHIPPED_RUNS_DIR", raising=False)
