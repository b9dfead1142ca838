"""The IUM run file (SQLite kind "RAGI", :data:`~rageval.store.schemas.IUM`; issue 6): the run's settings (JSON) in
``meta`` and one table per frame of the run, written by pandas (``DataFrame.to_sql``). The frames are the fields of
:class:`rageval.ium.experiment.IumResult` (:func:`rageval.ium.experiment.write_ium_run` hands them over); this
module knows only settings and frames.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rageval.store.files import (
    check_settings,
    check_shape,
    is_string,
    json_object,
    object_of,
    open_readonly,
    reading,
    stamp,
    write_sqlite_atomically,
)
from rageval.store.schemas import IUM, IUM_META_SCHEMA, IUM_TABLES

#: The settings the views compute with, each with its JSON type in words and its test (see check_settings).
SETTINGS_TYPES = {
    "plan": ("an object (its config an object)", object_of(config=object_of())),
    "generators": ("an object of strings", lambda v: object_of()(v) and all(map(is_string, v.values()))),
}


def write_ium_file(settings: dict, tables: Mapping[str, pd.DataFrame], path: str | os.PathLike) -> Path:
    """Store an IUM run atomically: ``settings`` (JSON, keys sorted) in ``meta``, then each of ``tables`` as the
    table of its name, in the given order (pandas' ``to_sql``, no index)."""

    def fill(connection) -> None:
        stamp(connection, IUM)
        connection.execute(IUM_META_SCHEMA)
        connection.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("schema_version", str(IUM.version)), ("settings", json.dumps(settings, sort_keys=True))])
        for name, frame in tables.items():
            frame.to_sql(name, connection, index=False)

    return write_sqlite_atomically(path, fill)


def read_ium_run(path: Path) -> tuple[dict, dict[str, pd.DataFrame]]:
    """(settings, tables) of an IUM run file (kind "RAGI", schema version 1: one table per field of
    :class:`rageval.ium.experiment.IumResult`); raises StoreError naming the file for another kind of file, a newer
    schema, or a damaged file (tables of another shape included)."""
    connection = open_readonly(path, IUM)
    try:
        check_shape(connection, path, IUM, IUM_TABLES, ())
        with reading(path, IUM):
            row = connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
            settings = check_settings(json_object(row[0], path, IUM), path, IUM, SETTINGS_TYPES) if row else {}
            tables = {name: pd.read_sql_query(f"SELECT * FROM \"{name}\"", connection)
                      for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                      if name != "meta"}
    finally:
        connection.close()
    return settings, tables
