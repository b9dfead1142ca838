"""The Python API for notebooks: ``rageval.evaluate`` and ``rageval.open`` (filled in by the trace-import work)."""
