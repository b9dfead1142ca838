"""``rageval report RUN --html OUT.html``: one self-contained HTML file with the Findings story (to be written)."""

from __future__ import annotations

import os
from pathlib import Path

from rageval.errors import RagevalError
from rageval.paths import shipped_runs_dir, user_runs_dir


def find_run(run: str | os.PathLike) -> Path:
    """The run file ``run`` names: a path to a file, or a run's name (the file's stem, the dashboard's ``?run=``)
    looked up in the user's runs folder (``$RAGEVAL_RUNS_DIR``) and then among the shipped runs (``data/runs``),
    sub-folders included, as the dashboard lists them. A :class:`~rageval.errors.RagevalError` says where it
    looked when the name is found nowhere."""
    from rageval.store import list_runs

    path = Path(run).expanduser()
    if path.is_file():
        return path
    name = str(run)
    looks_like_a_name = path.suffix != ".sqlite" and os.sep not in name and "/" not in name
    folders = [folder for folder in (user_runs_dir(), shipped_runs_dir()) if folder is not None]
    if looks_like_a_name:
        for folder in folders:
            found = [candidate for candidate in list_runs(folder) if candidate.stem == name]
            if found:
                return found[0]
    if path.exists():
        raise RagevalError(f"{path}: is a folder; expected a run file (.sqlite) or a run's name")
    where = " or ".join(str(folder) for folder in folders)
    raise RagevalError(f"{name}: no such run file" + (f", and no run of that name in {where}" if looks_like_a_name
                                                       else ""))
