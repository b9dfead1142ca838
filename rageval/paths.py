"""Where rageval keeps what it builds once and reuses: converted weights, indexes, the LLM-call cache."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
RUNS_DIR = DATA_DIR / "runs"


def cache_dir() -> Path:
    """The user cache directory: ``$RAGEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/rageval``, else ``~/.cache/rageval``."""
    explicit = os.environ.get("RAGEVAL_CACHE_DIR")
    if explicit:
        path = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "rageval"
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_data_dir() -> Path:
    """The team's shared data folder (``../shared/data`` beside the checkout), used only to refresh ``data/``."""
    return Path(os.environ.get("RAGEVAL_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def user_runs_dir() -> Path:
    """Where the user's own runs go: ``$RAGEVAL_RUNS_DIR``, else ``$XDG_DATA_HOME/rageval/runs``, else
    ``~/.local/share/rageval/runs``. Never inside the checkout: the shipped demo runs (``data/runs``) are read-only."""
    explicit = os.environ.get("RAGEVAL_RUNS_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "rageval" / "runs"


def shipped_runs_dir() -> Path | None:
    """The shipped demo runs the dashboard lists beside the user's, read-only: ``data/runs`` in the checkout;
    ``$RAGEVAL_SHIPPED_RUNS_DIR`` moves it, and set empty it lists none (tests use that)."""
    explicit = os.environ.get("RAGEVAL_SHIPPED_RUNS_DIR")
    if explicit is None:
        return RUNS_DIR
    return Path(explicit).expanduser() if explicit.strip() else None


def is_shipped(path: str | os.PathLike) -> bool:
    """Whether ``path`` lies in the checkout's shipped data (``data/``) or the shipped runs folder: places no
    upload, job or command of the user writes into."""
    resolved = Path(path).expanduser().resolve()
    runs = shipped_runs_dir()
    shipped = [DATA_DIR, *([runs] if runs else [])]
    return any(resolved.is_relative_to(folder.expanduser().resolve()) for folder in shipped)



def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as a file: "is a folder", "no such file" (also a dangling link, or a path under a
    file), "cannot be read (...)"; None when it is a file. The one check of the paths every command takes; callers
    raise the reason in their own error type, naming the path and what they expected."""
    path = Path(path)
    try:
        if path.is_file():
            return None
        if path.is_dir():
            return "is a folder"
        return "no such file"
    except OSError as error:  # a name too long, a folder without permission
        return f"cannot be read ({error.strerror or error})"


def not_writable_file(path: str | os.PathLike) -> str | None:
    """Why a file cannot be written at ``path`` ("is a folder", "X is a file, not a folder"), or None to try."""
    path = Path(path)
    if path.is_dir():
        return "is a folder"
    return _file_above(path)


def not_writable_folder(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be (made) an output folder ("is a file", "X is a file, not a folder"), or None to try."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "is a file, not a folder"
    return _file_above(path)


def _file_above(path: Path) -> str | None:
    existing = next((parent for parent in path.parents if parent.exists()), None)
    if existing is not None and not existing.is_dir():
        return f"{existing} is a file, not a folder"
    return None
