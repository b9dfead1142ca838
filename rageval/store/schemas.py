"""What each of rageval's seven kinds of SQLite file is: its ``application_id``, its schema version, the SQL that
creates its tables, and how an older file of the kind becomes the current one.

One module for all seven, so that the stored files can be read side by side: a file's kind and version are checked
by :mod:`rageval.store.files` (the one way to open any of them); the code that fills and reads each kind keeps its
logic in its own package and imports its schema from here:

=============== ====== ================================== ==================================================
kind            tag    schema                             filled and read by
=============== ====== ================================== ==================================================
run             RAGE   :data:`RUN_SCHEMA`                 :mod:`rageval.store.runs`, :mod:`~.run_writer`
attribution     RAGA   :data:`ATTRIBUTION_SCHEMA`         :mod:`rageval.store.attribution`
IUM             RAGI   :data:`IUM_META_SCHEMA`, pandas'   :mod:`rageval.store.ium`
                       tables (:data:`IUM_TABLES`)
annotation      RAGN   :data:`ANNOTATIONS_SCHEMA`         :mod:`rageval.annotations`
jobs database   RAGJ   :data:`JOBS_SCHEMA`                :mod:`rageval.store.jobs`
LLM cache       RAGC   :data:`LLM_CACHE_SCHEMA`           :mod:`rageval.generation.cache`
audit log       RAGL   :data:`AUDIT_SCHEMA`               :mod:`rageval.store.audit`
=============== ====== ================================== ==================================================
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass


def _tag(letters: str) -> int:
    return int.from_bytes(letters.encode("ascii"), "big")


@dataclass(frozen=True)
class SqliteKind:
    """One kind of rageval SQLite file: its ``application_id``, the schema version this rageval writes and the
    oldest it still reads."""

    name: str          # in messages: "run schema version 3 is newer ..."
    noun: str          # in messages: "not a rageval run file"
    application_id: int
    version: int
    oldest: int = 1
    unmarked_ok: bool = False  # files of this kind written before it had an application_id are accepted

    @property
    def tag(self) -> str:
        return self.application_id.to_bytes(4, "big").decode("ascii")


RUN = SqliteKind("run", "run file", _tag("RAGE"), version=2)  # v1: one E2E output per query (rageval.store.runs)
ATTRIBUTION = SqliteKind("attribution", "attribution run file", _tag("RAGA"), version=1)
IUM = SqliteKind("IUM", "IUM run file", _tag("RAGI"), version=1)
ANNOTATIONS = SqliteKind("annotation", "annotation file", _tag("RAGN"), version=4)  # v2: samples; v3: queues;
# v4: guidelines
# v3: started_by; v4: a complete job's plan, the worker's activity before its first LLM call
JOBS = SqliteKind("jobs database", "jobs database", _tag("RAGJ"), version=4, unmarked_ok=True)
LLM_CACHE = SqliteKind("LLM cache", "LLM cache", _tag("RAGC"), version=1, unmarked_ok=True)
AUDIT = SqliteKind("audit log", "audit log", _tag("RAGL"), version=2)  # v2: a hash chain
KINDS = (RUN, ATTRIBUTION, IUM, ANNOTATIONS, JOBS, LLM_CACHE, AUDIT)


def create_statement(schema: str, table: str, *, if_not_exists: bool = False) -> str:
    """The ``CREATE TABLE`` statement of ``table`` in ``schema`` (``IF NOT EXISTS``: for a table an older file of
    the kind may lack; SQLite stores the statement without that clause, so the table reads as ``schema`` has it)."""
    start = f"CREATE TABLE {table} ("
    statement = next(s.strip() for s in schema.split(";") if s.strip().startswith(start))
    return statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1) if if_not_exists else statement


# --- run (RAGE) -------------------------------------------------------------------------------------------------
# v1 had one E2E output per query; v2 keys E2E outputs by (query, k) and adds label_evidence, semi_gold_outputs,
# verdicts and failure_cases. correlations came later within v2, as an optional table (see rageval.store.runs), and
# so did trace_rankings: an imported trace's lists stage by stage (first stage, reranked), each position with the
# span it came from (rageval.traces.importer); and unparsed_answers (an LLM judge's replies it could not read: no
# label, no verdict, never "no"). An older rageval ignores these tables: no version bump. An E2E score may be NULL
# (an imported answer without gold answers to score it against), which every v2 reader already reads as an unscored
# answer (rageval.store.runs.NULLABLE_WHEN_READ).
RUN_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (
    query_id TEXT PRIMARY KEY, text TEXT NOT NULL, answers TEXT NOT NULL,
    gold_passage_ids TEXT NOT NULL, dataset TEXT NOT NULL);
CREATE TABLE passages (
    passage_id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE rankings (
    query_id TEXT NOT NULL, rank INTEGER NOT NULL, passage_id TEXT NOT NULL, score REAL NOT NULL,
    PRIMARY KEY (query_id, rank));
CREATE TABLE doc_outputs (
    query_id TEXT NOT NULL, passage_id TEXT NOT NULL, output TEXT NOT NULL,
    PRIMARY KEY (query_id, passage_id));
CREATE TABLE labels (
    method TEXT NOT NULL, query_id TEXT NOT NULL, passage_id TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (method, query_id, passage_id));
CREATE TABLE e2e_outputs (
    query_id TEXT NOT NULL, k INTEGER NOT NULL, output TEXT NOT NULL, score REAL,
    PRIMARY KEY (query_id, k));
CREATE TABLE measure_values (
    method TEXT NOT NULL, measure TEXT NOT NULL, query_id TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (method, measure, query_id));
CREATE TABLE label_evidence (
    method TEXT NOT NULL, query_id TEXT NOT NULL, passage_id TEXT NOT NULL, evidence TEXT NOT NULL,
    PRIMARY KEY (method, query_id, passage_id));
CREATE TABLE semi_gold_outputs (
    query_id TEXT NOT NULL, sample INTEGER NOT NULL, output TEXT NOT NULL, PRIMARY KEY (query_id, sample));
CREATE TABLE verdicts (
    judge TEXT NOT NULL, reference TEXT NOT NULL, query_id TEXT NOT NULL, k INTEGER NOT NULL,
    verdict INTEGER NOT NULL, evidence TEXT NOT NULL, PRIMARY KEY (judge, reference, query_id, k));
CREATE TABLE failure_cases (
    judge TEXT NOT NULL, query_id TEXT NOT NULL, k INTEGER NOT NULL, category TEXT NOT NULL,
    reason TEXT NOT NULL, PRIMARY KEY (judge, query_id, k, category));
CREATE TABLE correlations (
    k INTEGER NOT NULL, method TEXT NOT NULL, measure TEXT NOT NULL, n INTEGER NOT NULL,
    tau REAL, tau_low REAL, tau_high REAL, rho REAL, rho_low REAL, rho_high REAL,
    n_resamples INTEGER NOT NULL, confidence REAL NOT NULL, PRIMARY KEY (k, method, measure));
CREATE TABLE trace_rankings (
    stage TEXT NOT NULL, query_id TEXT NOT NULL, rank INTEGER NOT NULL, passage_id TEXT NOT NULL, score REAL,
    span_id TEXT NOT NULL, PRIMARY KEY (stage, query_id, rank));
CREATE TABLE unparsed_answers (
    judge TEXT NOT NULL, model TEXT NOT NULL, query_id TEXT NOT NULL, item TEXT NOT NULL, answer TEXT NOT NULL,
    PRIMARY KEY (judge, query_id, item));
"""
#: The tables every run file has (v1 and v2); the others came with v2 or later within it and may be absent.
RUN_REQUIRED_TABLES = ("meta", "queries", "passages", "rankings", "doc_outputs", "labels", "e2e_outputs",
                       "measure_values")
#: The columns of the ``correlations`` table, in order (:class:`~rageval.store.records.Correlation`'s fields).
CORRELATION_COLUMNS = ("k", "method", "measure", "n", "tau", "tau_low", "tau_high", "rho", "rho_low", "rho_high",
                       "n_resamples", "confidence")


# --- attribution run (RAGA) -------------------------------------------------------------------------------------
ATTRIBUTION_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (query_id TEXT PRIMARY KEY, text TEXT NOT NULL, relevant_ids TEXT NOT NULL);
CREATE TABLE input_passages (
    scenario TEXT NOT NULL, query_id TEXT NOT NULL, number INTEGER NOT NULL, passage_id TEXT NOT NULL,
    title TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (scenario, query_id, number));
CREATE TABLE answers (
    scenario TEXT NOT NULL, query_id TEXT NOT NULL, answer_id TEXT NOT NULL, text TEXT NOT NULL,
    human_attributable INTEGER, human_informative INTEGER, PRIMARY KEY (scenario, query_id, answer_id));
CREATE TABLE statements (
    scenario TEXT NOT NULL, query_id TEXT NOT NULL, answer_id TEXT NOT NULL, statement INTEGER NOT NULL,
    text TEXT NOT NULL, raw TEXT NOT NULL, citations TEXT NOT NULL, human_attributable INTEGER,
    supported INTEGER, alce_recall INTEGER, PRIMARY KEY (scenario, query_id, answer_id, statement));
CREATE TABLE entailment (
    scenario TEXT NOT NULL, query_id TEXT NOT NULL, answer_id TEXT NOT NULL, statement INTEGER NOT NULL,
    number INTEGER NOT NULL, probability REAL NOT NULL,
    PRIMARY KEY (scenario, query_id, answer_id, statement, number));
CREATE TABLE answer_metrics (
    scenario TEXT NOT NULL, query_id TEXT NOT NULL, answer_id TEXT NOT NULL, metric TEXT NOT NULL,
    value REAL NOT NULL, PRIMARY KEY (scenario, query_id, answer_id, metric));
CREATE TABLE retrieval_rankings (
    system TEXT NOT NULL, query_id TEXT NOT NULL, rank INTEGER NOT NULL, passage_id TEXT NOT NULL,
    score REAL NOT NULL, PRIMARY KEY (system, query_id, rank));
CREATE TABLE retrieval_measures (
    system TEXT NOT NULL, query_id TEXT NOT NULL, measure TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (system, query_id, measure));
CREATE TABLE subqueries (query_id TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (query_id, position));
CREATE TABLE agreement (
    level TEXT NOT NULL, score TEXT NOT NULL, n INTEGER NOT NULL, pearson REAL, spearman REAL, accuracy REAL,
    human_positive_rate REAL, model_positive_rate REAL, PRIMARY KEY (level, score));
"""


# --- IUM run (RAGI) ---------------------------------------------------------------------------------------------
#: The one table an IUM run file declares itself; the others are written by pandas (``DataFrame.to_sql``), one per
#: field of :class:`rageval.ium.experiment.IumResult` (:data:`IUM_TABLES`).
IUM_META_SCHEMA = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def _columns(text: str) -> dict[str, tuple[str, bool]]:
    """``"name TEXT, k INTEGER"`` -> column -> (declared type, NOT NULL: never, pandas writes these tables)."""
    return {name: (declared, False) for name, declared in (item.split() for item in text.split(","))}


#: The columns of each table the IUM readers use, as pandas writes them (a run may lack a table: it reads as empty).
IUM_TABLES = {
    "agents": _columns("name TEXT, dataset TEXT, task_id TEXT, model_id TEXT, k INTEGER, utility TEXT"),
    "queries": _columns("agent TEXT, split TEXT, query_id TEXT, text TEXT, answers TEXT"),
    "served": _columns("method TEXT, agent TEXT, query_id TEXT, rank INTEGER, passage_id TEXT"),
    "outcomes": _columns("method TEXT, agent TEXT, query_id TEXT, output TEXT, score REAL"),
    "feedback": _columns("phase TEXT, agent TEXT, query_id TEXT, passage_id TEXT, utility REAL"),
    "online_trained_on": _columns("method TEXT, agent TEXT, query_id TEXT, trained_on TEXT"),
    "significance": _columns("agent TEXT, method_a TEXT, method_b TEXT, n INTEGER, only_a INTEGER, only_b INTEGER, "
                             "p_value REAL"),
    "personalisation": _columns("method TEXT, agent_a TEXT, agent_b TEXT, query_id TEXT, kendall_tau REAL, "
                                "jaccard REAL"),
}


# --- annotation file (RAGN) -------------------------------------------------------------------------------------
# v1 stored labels 0/1 only and no samples; v2 adds the status column and the shared sample queues; v3 the annotation
# queues (assigned, overlapping work) and the adjudicated labels.
ANNOTATIONS_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    query_id TEXT NOT NULL,
    passage_id TEXT NOT NULL DEFAULT '',
    scenario TEXT NOT NULL DEFAULT '',
    answer_id TEXT NOT NULL DEFAULT '',
    statement INTEGER,
    label INTEGER NOT NULL CHECK (label IN (0, 1)),
    annotator TEXT NOT NULL CHECK (length(trim(annotator)) > 0),
    labelled_at TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '');
CREATE INDEX labels_by_run ON labels (run, kind, annotator);
"""
_ANNOTATION_LABELS = """
CREATE TABLE labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    query_id TEXT NOT NULL,
    passage_id TEXT NOT NULL DEFAULT '',
    scenario TEXT NOT NULL DEFAULT '',
    answer_id TEXT NOT NULL DEFAULT '',
    statement INTEGER,
    label INTEGER CHECK (label IN (0, 1)),
    status TEXT NOT NULL DEFAULT 'labelled' CHECK (status IN ('labelled', 'unsure', 'skipped')),
    annotator TEXT NOT NULL CHECK (length(trim(annotator)) > 0),
    labelled_at TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    CHECK ((status = 'labelled') = (label IS NOT NULL)));
"""
_ANNOTATION_SAMPLES = """
CREATE TABLE samples (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    size INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    population INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE sample_items (
    sample_id INTEGER NOT NULL REFERENCES samples (id),
    position INTEGER NOT NULL,
    query_id TEXT NOT NULL,
    passage_id TEXT NOT NULL,
    PRIMARY KEY (sample_id, position));
"""
#: v3: the annotation queues (:mod:`rageval.queues`). A queue's labels are ordinary ``labels`` rows, each linked to
#: its queue item by ``queue_labels``; adjudicated labels are kept apart in ``adjudications`` (no label overwritten).
_ANNOTATION_QUEUES = """
CREATE TABLE queues (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    plan TEXT NOT NULL CHECK (plan IN ('uniform', 'stratified', 'disagreement')),
    settings TEXT NOT NULL,
    size INTEGER NOT NULL,
    overlap INTEGER NOT NULL CHECK (overlap >= 1),
    seed INTEGER NOT NULL,
    population INTEGER NOT NULL,
    guidelines TEXT NOT NULL DEFAULT '',
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE queue_strata (
    queue_id INTEGER NOT NULL REFERENCES queues (id),
    stratum TEXT NOT NULL,
    population INTEGER NOT NULL,
    sampled INTEGER NOT NULL,
    PRIMARY KEY (queue_id, stratum));
CREATE TABLE queue_items (
    queue_id INTEGER NOT NULL REFERENCES queues (id),
    position INTEGER NOT NULL,
    query_id TEXT NOT NULL,
    passage_id TEXT NOT NULL DEFAULT '',
    scenario TEXT NOT NULL DEFAULT '',
    answer_id TEXT NOT NULL DEFAULT '',
    statement INTEGER,
    stratum TEXT NOT NULL,
    PRIMARY KEY (queue_id, position));
CREATE TABLE queue_assignments (
    queue_id INTEGER NOT NULL REFERENCES queues (id),
    position INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    PRIMARY KEY (queue_id, position, annotator));
CREATE TABLE queue_labels (
    label_id INTEGER PRIMARY KEY REFERENCES labels (id),
    queue_id INTEGER NOT NULL REFERENCES queues (id),
    position INTEGER NOT NULL);
CREATE TABLE adjudications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id INTEGER NOT NULL REFERENCES queues (id),
    position INTEGER NOT NULL,
    label INTEGER NOT NULL CHECK (label IN (0, 1)),
    adjudicator TEXT NOT NULL CHECK (length(trim(adjudicator)) > 0),
    adjudicated_at TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '');
"""
_ANNOTATION_QUEUE_INDEXES = ("CREATE INDEX queue_assignments_by_annotator ON queue_assignments (annotator, queue_id);"
                             "CREATE INDEX queue_labels_by_item ON queue_labels (queue_id, position);")
ANNOTATIONS_SCHEMA_V2 = ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" + _ANNOTATION_LABELS
                         + "CREATE INDEX labels_by_run ON labels (run, kind, annotator);" + _ANNOTATION_SAMPLES)
ANNOTATIONS_SCHEMA_V3 = ANNOTATIONS_SCHEMA_V2 + _ANNOTATION_QUEUES + _ANNOTATION_QUEUE_INDEXES
#: v4: the annotation guideline of a run (its history: the latest row of a run and kind counts), and the guideline
#: each label was given under (``labels.guideline``, added last, as ``ALTER TABLE ... ADD COLUMN`` puts it).
_ANNOTATION_GUIDELINES = """
CREATE TABLE guidelines (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    text TEXT NOT NULL,
    set_by TEXT NOT NULL,
    set_at TEXT NOT NULL);
"""
_LABEL_GUIDELINE = "ALTER TABLE labels ADD COLUMN guideline TEXT NOT NULL DEFAULT ''"
ANNOTATIONS_SCHEMA = ANNOTATIONS_SCHEMA_V3 + _ANNOTATION_GUIDELINES + _LABEL_GUIDELINE + ";"
#: The schema of each version an annotation file may have.
ANNOTATIONS_SCHEMAS = {1: ANNOTATIONS_SCHEMA_V1, 2: ANNOTATIONS_SCHEMA_V2, 3: ANNOTATIONS_SCHEMA_V3,
                       4: ANNOTATIONS_SCHEMA}


def _execute_script(connection: sqlite3.Connection, script: str) -> None:
    """Each statement of ``script`` in the open transaction (``executescript`` would commit it); a trigger's body,
    with its own semicolons, stays one statement."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                connection.execute(pending)
            pending = ""


def _v1_to_v2(connection: sqlite3.Connection) -> None:
    """Labels gain ``status`` (rows kept, ids kept, each one "labelled"); the shared samples' tables."""
    connection.execute("ALTER TABLE labels RENAME TO labels_v1")
    connection.execute("DROP INDEX labels_by_run")
    _execute_script(connection, _ANNOTATION_LABELS)
    connection.execute("CREATE INDEX labels_by_run ON labels (run, kind, annotator)")
    _execute_script(connection, _ANNOTATION_SAMPLES)
    connection.execute(
        "INSERT INTO labels (id, run, kind, query_id, passage_id, scenario, answer_id, statement, label, "
        "status, annotator, labelled_at, note) SELECT id, run, kind, query_id, passage_id, scenario, "
        "answer_id, statement, label, 'labelled', annotator, labelled_at, note FROM labels_v1")
    connection.execute("DROP TABLE labels_v1")


def _v2_to_v3(connection: sqlite3.Connection) -> None:
    """The annotation queues' tables (new tables only: every row of v2 stays where it is)."""
    _execute_script(connection, _ANNOTATION_QUEUES + _ANNOTATION_QUEUE_INDEXES)


def _v3_to_v4(connection: sqlite3.Connection) -> None:
    """The guidelines table, and each label's guideline (empty for the labels given before: not recorded then)."""
    _execute_script(connection, _ANNOTATION_GUIDELINES)
    connection.execute(_LABEL_GUIDELINE)


#: Version -> the step that takes an annotation file from it to the next, inside the upgrade's one transaction.
ANNOTATIONS_MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def upgrade_annotation_file(connection: sqlite3.Connection) -> None:
    """Upgrade an older annotation file to the current version in one transaction (v1 -> v2: rows kept, ids kept,
    each one "labelled"; v2 -> v3: the queue tables added; v3 -> v4: the guidelines, each label's empty); nothing to
    do for a current file."""
    if int(connection.execute("PRAGMA user_version").fetchone()[0]) >= ANNOTATIONS.version:
        return
    isolation = connection.isolation_level
    connection.isolation_level = None
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])  # another writer may have done it
            while version < ANNOTATIONS.version:
                ANNOTATIONS_MIGRATIONS[version](connection)
                version += 1
                connection.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(version),))
                connection.execute(f"PRAGMA user_version = {version}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    finally:
        connection.isolation_level = isolation


# --- jobs database (RAGJ) ---------------------------------------------------------------------------------------
JOBS_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_path         TEXT NOT NULL,     -- absolute path of the run file
    method           TEXT NOT NULL,     -- label method the job writes, e.g. erag:em@gemma-3-270m
    spec             TEXT NOT NULL,     -- JSON of the JobSpec
    status           TEXT NOT NULL,     -- queued | running | done | failed | cancelled
    total            INTEGER NOT NULL,  -- (query, passage) items the job labels
    done             INTEGER NOT NULL DEFAULT 0,
    done_at_start    INTEGER NOT NULL DEFAULT 0,  -- items already done when the current attempt began
    attempts         INTEGER NOT NULL DEFAULT 0,
    created          REAL NOT NULL,     -- Unix times
    started          REAL,              -- the current attempt's start
    items_started    REAL,              -- when it began labelling (after loading the model)
    updated          REAL,              -- last committed batch
    finished         REAL,
    heartbeat        REAL,
    pid              INTEGER,
    model_id         TEXT,
    device           TEXT,
    log_path         TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    stage            TEXT,              -- complete jobs: the pipeline stage that done/total count
    started_by       TEXT,              -- team mode: the signed-in user's id; NULL: the command line or local mode
    plan             TEXT,              -- complete jobs: JSON [[stage, LLM calls, of them cached], ...] (dry run)
    llm_started      REAL,              -- when the attempt's model was ready (the whole job's rate clock)
    activity         TEXT,              -- what the worker does before its first LLM call, in words
    activity_since   REAL               -- since when
);
"""
#: Version -> the statement that takes a jobs database from it to the next (1 -> 2: the stage column of complete
#: jobs; 2 -> 3: who started each job, on a dashboard served for a team; 3 -> 4: a complete job's plan (each stage's
#: LLM calls, counted before the first), the whole job's rate clock, and what the worker does before its first call).
#: A step is one statement or a tuple of them.
JOBS_MIGRATIONS: dict[int, str | tuple[str, ...]] = {
    1: "ALTER TABLE jobs ADD COLUMN stage TEXT", 2: "ALTER TABLE jobs ADD COLUMN started_by TEXT",
    3: ("ALTER TABLE jobs ADD COLUMN plan TEXT", "ALTER TABLE jobs ADD COLUMN llm_started REAL",
        "ALTER TABLE jobs ADD COLUMN activity TEXT", "ALTER TABLE jobs ADD COLUMN activity_since REAL")}


# --- LLM cache (RAGC) -------------------------------------------------------------------------------------------
LLM_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_calls (
    key      TEXT PRIMARY KEY,  -- sha256 hex of canonical JSON [model_id, prompt, settings]
    model_id TEXT NOT NULL,
    settings TEXT NOT NULL,     -- canonical JSON of the DecodingSettings
    output   TEXT NOT NULL,
    created  REAL NOT NULL      -- Unix time the answer was generated
) WITHOUT ROWID;
"""


# --- audit log (RAGL) -------------------------------------------------------------------------------------------
# v1: entries with triggers refusing UPDATE and DELETE (INSERT OR REPLACE still rewrote one). v2: each entry carries
# the previous entry's hash and its own (audit_entry_hash), so a changed, removed or inserted entry
# shows in `rageval audit verify`; triggers also refuse an INSERT that would replace an entry or break the chain.
#: The ``prev_hash`` of the first entry.
AUDIT_GENESIS = "0" * 64
AUDIT_TABLE = """
CREATE TABLE IF NOT EXISTS audit (
    entry     INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,  -- UTC, ISO 8601 to the second (2026-11-28T15:42:58+00:00)
    user_id   TEXT NOT NULL,  -- the signed-in user's id (email, else the provider's subject)
    action    TEXT NOT NULL,  -- sign_in, job_start, job_cancel, upload, queue_create, adjudicate, ...
    detail    TEXT NOT NULL,  -- JSON object: what the action was on (run, job id, queue, ...)
    prev_hash TEXT NOT NULL,  -- the previous entry's hash (AUDIT_GENESIS for the first)
    hash      TEXT NOT NULL   -- sha256 hex over (entry, at, user_id, action, detail, prev_hash)
);
"""
#: Append-only: the triggers refuse every UPDATE and DELETE, an INSERT (OR REPLACE) onto an existing entry, and an
#: entry whose ``prev_hash`` is not the last entry's hash; so an entry, once committed, stays as written.
AUDIT_TRIGGERS = f"""
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: entries are never changed'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: entries are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_replace BEFORE INSERT ON audit
WHEN EXISTS (SELECT 1 FROM audit WHERE entry = NEW.entry)
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: an entry is never replaced'); END;
CREATE TRIGGER IF NOT EXISTS audit_chain BEFORE INSERT ON audit
WHEN NEW.prev_hash IS NOT COALESCE((SELECT hash FROM audit ORDER BY entry DESC LIMIT 1), '{AUDIT_GENESIS}')
BEGIN SELECT RAISE(ABORT, 'the audit log is a hash chain: a new entry carries the last entry''s hash'); END;
"""
AUDIT_SCHEMA = AUDIT_TABLE + AUDIT_TRIGGERS
#: The triggers a v2 audit log must have (``rageval audit verify`` names a missing one).
AUDIT_TRIGGER_NAMES = ("audit_no_update", "audit_no_delete", "audit_no_replace", "audit_chain")


def audit_entry_hash(entry: int, at: str, user_id: str, action: str, detail: str, prev_hash: str) -> str:
    """sha256 hex of one audit entry's content and the previous entry's hash: the JSON array ``[entry, at, user_id,
    action, detail, prev_hash]`` (``detail`` as stored, compact separators, UTF-8), so changing any field, the
    entry's number or its place in the chain changes it."""
    import hashlib
    import json

    text = json.dumps([entry, at, user_id, action, detail, prev_hash], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _audit_v1_to_v2(connection: sqlite3.Connection) -> None:
    """Every v1 entry kept (number, time, who, what), chained in entry order: hashes computed now, so the chain
    vouches for the log as it was at the upgrade."""
    connection.execute("ALTER TABLE audit RENAME TO audit_v1")  # its triggers go with it, and with its DROP
    _execute_script(connection, AUDIT_TABLE)
    previous = AUDIT_GENESIS
    rows = connection.execute("SELECT entry, at, user_id, action, detail FROM audit_v1 ORDER BY entry").fetchall()
    for entry, at, user_id, action, detail in rows:
        digest = audit_entry_hash(entry, at, user_id, action, detail, previous)
        connection.execute("INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (entry, at, user_id, action, detail, previous, digest))
        previous = digest
    connection.execute("DROP TABLE audit_v1")
    _execute_script(connection, AUDIT_TRIGGERS)


#: Version -> the step that takes an audit log from it to the next, inside the upgrade's one transaction.
AUDIT_MIGRATIONS = {1: _audit_v1_to_v2}


def upgrade_audit_log(connection: sqlite3.Connection) -> None:
    """Upgrade an older audit log to the current version, in the transaction the caller holds (``BEGIN
    IMMEDIATE``); nothing to do for a current file."""
    version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    while version < AUDIT.version:
        AUDIT_MIGRATIONS[version](connection)
        version += 1
        connection.execute(f"PRAGMA user_version = {version}")
