"""What an upload is and what can be wrong with it: the uploaded files and their size limits, each
:class:`Problem` (file, 1-based line, message; an error or a warning), the :class:`Problems` collector and the
:class:`UploadResult` a conversion returns."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from rageval.errors import RagevalError
from rageval.store import Run

ERROR = "error"
WARNING = "warning"


#: The one size limit of an uploaded file, in MiB (2**20 bytes): the engine's check (:class:`UploadLimits`),
#: ``rageval upload``'s, the Upload page's file widgets and Streamlit's ``server.maxUploadSize`` in
#: ``.streamlit/config.toml`` (whose "MB" are MiB too; a test keeps the two equal).
MAX_UPLOAD_MIB = 100


def size_text(n_bytes: int) -> str:
    """A file size in words, to one decimal: ``532 bytes``, ``1.5 KiB``, ``100 MiB``, ``2.3 GiB``."""
    if n_bytes < 1024:
        return f"{n_bytes:,} bytes"
    unit, scale = next((u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)) if n_bytes >= s)
    return f"{n_bytes / scale:,.1f}".removesuffix(".0") + f" {unit}"


def too_large_message(size: int, limit: int) -> str:
    """The one message of a file over the size limit (the engine, ``rageval upload``, the Upload page)."""
    if size_text(size) == size_text(limit):  # the limit and a few bytes: exact numbers
        return f"the file is {size:,} bytes, larger than the limit of {limit:,} bytes ({size_text(limit)}) per file"
    return f"the file is {size_text(size)}, larger than the limit of {size_text(limit)} per file"


class UploadError(RagevalError):
    """An upload that cannot be saved (a bad run name, an existing run not to be replaced, errors left)."""


@dataclass(frozen=True)
class UploadLimits:
    """Size limits of one upload; every one is checked and reported as an error naming the file and line."""

    max_file_bytes: int = MAX_UPLOAD_MIB * 2**20  # per uploaded file
    max_queries: int = 20_000  # queries per run
    max_passages_per_query: int = 1_000  # ranked passages per query
    max_text_chars: int = 50_000  # per text field (question, answer, title, passage text, output)
    max_id_chars: int = 200  # per id
    max_problems_per_file: int = 50  # problems listed per file and severity; the rest are counted


DEFAULT_LIMITS = UploadLimits()


@dataclass(frozen=True)
class UploadFile:
    """One uploaded file: the name it is reported under, its bytes, and its size on disk when only its first bytes
    were read (:meth:`from_path` of a file over the limit)."""

    name: str
    data: bytes
    file_size: int | None = None

    @property
    def size(self) -> int:
        return len(self.data) if self.file_size is None else self.file_size

    @classmethod
    def from_path(cls, path: str | os.PathLike, limits: UploadLimits = DEFAULT_LIMITS) -> UploadFile:
        """Read ``path``, at most one byte past the size limit (so an oversized file is reported, not loaded)."""
        with open(path, "rb") as handle:
            data = handle.read(limits.max_file_bytes + 1)
            size = os.fstat(handle.fileno()).st_size
        return cls(str(path), data, max(size, len(data)) if len(data) > limits.max_file_bytes else None)


@dataclass(frozen=True)
class Problem:
    """What is wrong with an upload, and where: ``file``, 1-based ``line`` (None: the whole file)."""

    severity: str  # ERROR or WARNING
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}, line {self.line}"
        return f"{self.severity}: {where}: {self.message}"


@dataclass(frozen=True)
class UploadResult:
    """The converted run (None when there are errors) and every problem found, in file order."""

    run: Run | None
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == WARNING)

    @property
    def ok(self) -> bool:
        return self.run is not None and not self.errors


class Problems:
    """Collects problems; past ``limit`` per (file, severity) they are only counted, then summarised."""

    def __init__(self, limit: int):
        self.limit = limit
        self._listed: list[Problem] = []
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, severity: str, file: str, line: int | None, message: str) -> None:
        self._counts[file, severity] += 1
        if self._counts[file, severity] <= self.limit:
            self._listed.append(Problem(severity, file, line, message))

    def error(self, file: str, line: int | None, message: str) -> None:
        self.add(ERROR, file, line, message)

    def warning(self, file: str, line: int | None, message: str) -> None:
        self.add(WARNING, file, line, message)

    @property
    def has_errors(self) -> bool:
        return any(severity == ERROR for _, severity in self._counts)

    def result(self) -> tuple[Problem, ...]:
        hidden = [Problem(severity, file, None, f"{count - self.limit} more {severity}s in this file are not "
                                                f"listed (the first {self.limit} are)")
                  for (file, severity), count in self._counts.items() if count > self.limit]
        return tuple(self._listed + hidden)


def raise_first_error(problems: Problems) -> None:
    """Raise :class:`UploadError` naming the first error's file and line (and how many more), if any."""
    errors = [p for p in problems.result() if p.severity == ERROR]
    if errors:
        more = f" ({len(errors) - 1} more problems)" if len(errors) > 1 else ""
        first = errors[0]
        where = first.file if first.line is None else f"{first.file}, line {first.line}"
        raise UploadError(f"{where}: {first.message}{more}")
