"""rageval's SQLite files: the schema of every kind of file (``schemas``), the one open/version/check of each
(``files``), run files (``runs``: read and written whole; ``run_writer``: written in place; their records in
``records``). The names are re-exported here: ``from rageval.store import RunReader``."""

from rageval.store.files import (
                                 ANNOTATIONS,
                                 ATTRIBUTION,
                                 IUM,
                                 JOBS,
                                 KINDS,
                                 LLM_CACHE,
                                 RUN,
                                 SqliteKind,
                                 check_kind,
                                 kind_of,
                                 open_for_write,
                                 open_readonly,
                                 sqlite_application_id,
                                 sqlite_uri,
                                 stamp,
                                 write_sqlite_atomically,
)
from rageval.store.records import (
                                 Correlation,
                                 DocOutput,
                                 E2EOutput,
                                 FailureCase,
                                 Label,
                                 LabelEvidence,
                                 MeasureValue,
                                 Run,
                                 SemiGoldOutput,
                                 TraceRanking,
                                 Verdict,
)
from rageval.store.run_writer import RunWriter
from rageval.store.runs import (
                                 APPLICATION_ID,
                                 SCHEMA_VERSION,
                                 RunReader,
                                 labels_as_qrels,
                                 list_runs,
                                 read_run,
                                 write_run,
)

#: The ``application_id`` of each other kind (older names, kept for their readers).
ATTRIBUTION_APPLICATION_ID = ATTRIBUTION.application_id
IUM_APPLICATION_ID = IUM.application_id
ANNOTATION_APPLICATION_ID = ANNOTATIONS.application_id

__all__ = [
    "ANNOTATIONS", "ANNOTATION_APPLICATION_ID", "APPLICATION_ID", "ATTRIBUTION", "ATTRIBUTION_APPLICATION_ID", "IUM",
    "IUM_APPLICATION_ID", "JOBS", "KINDS", "LLM_CACHE", "RUN", "SCHEMA_VERSION", "Correlation", "DocOutput",
    "E2EOutput", "FailureCase", "Label", "LabelEvidence", "MeasureValue", "Run", "RunReader", "RunWriter",
    "SemiGoldOutput", "SqliteKind", "TraceRanking", "Verdict", "check_kind", "kind_of", "labels_as_qrels", "list_runs",
    "open_for_write", "open_readonly", "read_run", "sqlite_application_id", "sqlite_uri", "stamp", "write_run",
    "write_sqlite_atomically",
]
