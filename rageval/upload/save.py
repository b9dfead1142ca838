"""Saving a converted upload: the run's name (one file inside the runs folder, one ``?run=`` value) and the atomic
write that never replaces a run by surprise nor writes into the shipped runs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import tempfile
from pathlib import Path

from rageval.paths import is_shipped, not_writable_folder, user_runs_dir
from rageval.store import Run, list_runs, write_run
from rageval.upload.problems import UploadError

_RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


def check_run_name(name: str) -> str | None:
    """Why ``name`` cannot name a run file (None when it can): letters, digits, ``_ . -``, at most 100 characters,
    starting with a letter or digit, so it stays one file inside the runs folder and one ``?run=`` value."""
    if not name:
        return "give the run a name"
    if not _RUN_NAME_PATTERN.match(name) or ".." in name:
        return (f"run name {name!r}: use letters, digits and _ . - only (at most 100, starting with a letter or "
                "digit, no '..'), so it names one file inside the runs folder")
    return None


def run_file_path(folder: str | os.PathLike, name: str) -> Path:
    """The run file ``<folder>/<name>.sqlite``; an invalid name (:func:`check_run_name`) raises UploadError."""
    problem = check_run_name(name)
    if problem:
        raise UploadError(problem)
    folder = Path(folder).resolve()
    path = folder / f"{name}.sqlite"
    if path.parent != folder:  # the pattern already prevents it; this keeps the guarantee explicit
        raise UploadError(f"run name {name!r} would leave the runs folder {folder}")
    return path


def name_in_use(folder: str | os.PathLike, name: str) -> Path | None:
    """The run file the dashboard already lists under ``name`` (``?run=<name>``), if any."""
    return next((p for p in list_runs(folder) if p.stem == name), None)


def save_upload(run: Run, folder: str | os.PathLike, name: str, *, overwrite: bool = False,
                uploaded_at: dt.datetime | None = None, command: str | None = None,
                uploaded_by: str | None = None) -> Path:
    """Write the converted ``run`` as ``<folder>/<name>.sqlite``, atomically, and return its path.

    Its settings get the run's name and the upload time (``uploaded_at``, ``created_at``), and on a dashboard
    served for a team the signed-in user's id (``uploaded_by``). An existing run of
    that name is replaced only with ``overwrite=True``; a run of that name in a sub-folder is never shadowed.
    The file appears whole or not at all: it is written to a temporary sibling, then linked (no overwrite) or
    renamed (overwrite) into place.
    """
    path = run_file_path(folder, name)
    if is_shipped(path):
        raise UploadError(f"{path.parent}: the shipped runs folder is read-only; save uploads into your runs folder "
                          f"({user_runs_dir()}, or $RAGEVAL_RUNS_DIR)")
    blocked = not_writable_folder(path.parent)
    if blocked:
        raise UploadError(f"runs folder {path.parent}: {blocked}; save the run into a folder")
    existing = name_in_use(path.parent, name)
    if existing is not None and existing.resolve() != path:
        raise UploadError(f"run name {name!r} is already used by {existing}; choose another name")
    if path.exists() and not overwrite:
        raise UploadError(f"a run named {name!r} exists ({path}); confirm to replace it, or choose another name")
    when = (uploaded_at or dt.datetime.now(dt.UTC)).replace(microsecond=0).isoformat()
    settings = {**run.settings, "name": name, "uploaded_at": when, "created_at": when}
    if command:
        settings["command"] = command
    if uploaded_by:
        settings["uploaded_by"] = uploaded_by
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".upload.tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        write_run(dataclasses.replace(run, settings=settings), temporary)
        if overwrite:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # fails if a run of that name appeared meanwhile
            except FileExistsError:
                raise UploadError(f"a run named {name!r} appeared meanwhile ({path}); nothing was replaced") from None
    finally:
        temporary.unlink(missing_ok=True)
    return path
