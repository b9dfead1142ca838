"""The bad files: for each of the six kinds of rageval SQLite file, every damage of :mod:`.damage`, plus what only
one kind can get wrong. Each :class:`BadFile` says what a reader must make of it (:attr:`BadFile.expect`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.bad_inputs import damage
from tests.bad_inputs.damage import Damage, sql
from tests.bad_inputs.good import GOOD

#: What a reader makes of a bad file:
#: ``refused``  every reader refuses it on opening, with an error naming the file and what is wrong;
#: ``reported`` it opens, and a view that reads the damaged part says so, naming the file (the rest still shows);
#: ``shown``    it reads (odd but valid content, or damage rageval repairs or reads around): no error at all;
#: ``tolerated`` content a view may refuse to compute on or may show with a warning (values that lose data
#:              silently elsewhere: non-finite, negative, pointing nowhere): any error names the file.
EXPECTATIONS = ("refused", "reported", "shown", "tolerated")


@dataclass(frozen=True)
class BadFile:
    """One broken input: a good file of ``kind`` (a key of :data:`tests.bad_inputs.good.GOOD`) with ``damage``."""

    kind: str
    name: str
    about: str
    damage: Damage | None
    expect: str = "refused"
    filename: str | None = None  # the file's name in the folder (default: bad-<name>.sqlite)

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.name}"

    def file_name(self) -> str:
        return self.filename or f"bad-{self.name}.sqlite"

    def build(self, folder: Path, file_name: str | None = None) -> Path:
        """Write the bad file into ``folder`` (under ``file_name``, default :meth:`file_name`) and return its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (file_name or self.file_name())
        sqlite_kind, write_good = GOOD[self.kind]
        write_good(path)
        if self.damage is not None:
            self.damage(path, sqlite_kind)
        return path


#: (name, what is wrong, damage, expectation) for every kind.
GENERIC = [
    ("empty", "zero-length file", damage.empty, "refused"),
    ("gzip", "the file gzip-compressed", damage.gzipped, "refused"),
    ("random-bytes", "random bytes of the same length", damage.random_bytes, "refused"),
    ("text", "a text file", damage.text_file, "refused"),
    ("truncated-half", "cut off at half its length", damage.truncated_half, "refused"),
    ("truncated-header", "cut off inside the SQLite header", damage.truncated_header, "refused"),
    ("pages-zeroed", "every page after the first zeroed", damage.pages_zeroed, "refused"),
    ("page-overwritten", "one b-tree page overwritten with random bytes", damage.page_overwritten, "refused"),
    ("foreign-sqlite", "another program's SQLite database", damage.foreign_sqlite, "refused"),
    ("newer-schema", "a schema version newer than this rageval", damage.newer_schema, "refused"),
    ("schema-zero", "marked as its kind with schema version 0", damage.schema_zero, "refused"),
    ("other-kind", "marked as another of rageval's kinds", damage.other_kind, "refused"),
    ("unknown-application", "another application_id", damage.unknown_application, "refused"),
    ("folder", "a folder named like the file", damage.folder, "refused"),
    ("dangling-link", "a symbolic link to nothing", damage.dangling_link, "refused"),
    ("link-outside-text", "a link to a text file outside the folder", damage.link_outside_to_text, "refused"),
    ("link-outside-good", "a link to a good file outside the folder", damage.link_outside_to_good_file, "shown"),
    ("named-pipe", "a named pipe (FIFO)", damage.named_pipe, "refused"),
    ("wal-mode", "switched to write-ahead logging", damage.wal_mode, "shown"),
]
ROLLBACK_JOURNAL_KINDS = ("run", "attribution", "ium", "annotations")  # the jobs database and the cache use WAL

RUN_SPECIFIC = [
    BadFile("run", "settings-not-json", "settings: 'not json {'",
            sql("UPDATE meta SET value = 'not json {' WHERE key = 'settings'")),
    BadFile("run", "settings-list", "settings: a JSON list",
            sql("UPDATE meta SET value = '[1, 2, 3]' WHERE key = 'settings'")),
    BadFile("run", "settings-string", "settings: a JSON string",
            sql("""UPDATE meta SET value = '"k=5"' WHERE key = 'settings'""")),
    BadFile("run", "settings-deep", "settings: '[' nested 100,000 deep",
            sql(f"UPDATE meta SET value = '{'[' * 100_000}' WHERE key = 'settings'")),
    BadFile("run", "settings-bad-utf8", "settings: invalid UTF-8",
            sql("UPDATE meta SET value = CAST(X'7B226B223A80FF7D' AS TEXT) WHERE key = 'settings'")),
    BadFile("run", "settings-k-text", "setting k: a string ('five')",
            sql("UPDATE meta SET value = json_set(value, '$.k', 'five') WHERE key = 'settings'")),
    BadFile("run", "settings-reteval-list", "setting reteval: a list",
            sql("UPDATE meta SET value = json_set(value, '$.reteval', json('[1]')) WHERE key = 'settings'")),
    BadFile("run", "settings-cutoffs-text", "setting cutoffs: strings",
            sql("""UPDATE meta SET value = json_set(value, '$.cutoffs', json('["x"]')) WHERE key = 'settings'""")),
    BadFile("run", "settings-odd-display-values", "displayed settings of odd JSON types (lists, objects, null)",
            sql("UPDATE meta SET value = json_set(value, '$.dataset', json('[\"a\", 1]'), '$.model_id', "
                "json('{\"a\": 1}'), '$.retriever', 3, '$.created_at', NULL, '$.duration_s', 'long', "
                "'$.corpus', json('{\"name\": 1, \"size\": \"x\"}'), '$.prompt', 5) WHERE key = 'settings'"),
            "shown"),
    BadFile("run", "settings-missing", "no settings row (what produced it unknown)",
            sql("DELETE FROM meta WHERE key = 'settings'"), "shown"),
    BadFile("run", "no-meta-table", "table meta missing", sql("DROP TABLE meta")),
    BadFile("run", "no-queries-table", "table queries missing", sql("DROP TABLE queries")),
    BadFile("run", "no-labels-table", "table labels missing", sql("DROP TABLE labels")),
    BadFile("run", "labels-other-shape", "table labels of another shape",
            sql("DROP TABLE labels", "CREATE TABLE labels (a TEXT, b TEXT)", "INSERT INTO labels VALUES ('x', 'y')")),
    BadFile("run", "no-verdicts-table", "optional table verdicts missing (an older v2 file)",
            sql("DROP TABLE verdicts", "DROP TABLE failure_cases", "DROP TABLE semi_gold_outputs"), "shown"),
    BadFile("run", "null-label-value", "NULL where NOT NULL is expected (labels.value)",
            sql("ALTER TABLE labels RENAME TO old_labels",
                "CREATE TABLE labels (method TEXT, query_id TEXT, passage_id TEXT, value REAL)",
                "INSERT INTO labels SELECT * FROM old_labels", "DROP TABLE old_labels",
                "UPDATE labels SET value = NULL WHERE rowid = 1")),
    BadFile("run", "text-label-value", "text in a number column (labels.value = 'high')",
            sql("UPDATE labels SET value = 'high' WHERE rowid = 1")),
    BadFile("run", "text-rank", "text in an integer column (rankings.rank)",
            sql("UPDATE rankings SET rank = 'first' WHERE rowid = 1")),
    BadFile("run", "blob-passage-text", "a blob in a text column (passages.text)",
            sql("UPDATE passages SET text = X'00FF00FF' WHERE rowid = 1")),
    BadFile("run", "bad-utf8-passage", "invalid UTF-8 in a passage text",
            sql("UPDATE passages SET text = CAST(X'4164612080FF' AS TEXT)"), "reported"),
    BadFile("run", "bad-utf8-question", "invalid UTF-8 in a question",
            sql("UPDATE queries SET text = CAST(X'77686F80FF' AS TEXT) WHERE rowid = 1"), "reported"),
    BadFile("run", "answers-not-json", "a question's answers are not JSON",
            sql("UPDATE queries SET answers = 'Paris'"), "reported"),
    BadFile("run", "answers-not-list", "a question's answers are a JSON object",
            sql("""UPDATE queries SET answers = '{"a": 1}'"""), "reported"),
    BadFile("run", "rows-of-missing-queries", "rankings, labels, measures and a failure case of unknown queries",
            sql("INSERT INTO rankings VALUES ('ghost', 1, 'nq_oracle:0', 1.0)",
                "INSERT INTO labels VALUES ('gold', 'ghost', 'nq_oracle:0', 1.0)",
                "INSERT INTO measure_values VALUES ('gold', 'P@5', 'ghost', 0.2)",
                "INSERT INTO failure_cases VALUES ('em', 'ghost', 5, 'B', 'about a question not in the run')"),
            "tolerated"),
    BadFile("run", "ranking-of-missing-passage", "a ranked passage with no text (not in passages)",
            sql("DELETE FROM passages WHERE passage_id = 'nq_oracle:1'"), "tolerated"),
    BadFile("run", "negative-labels", "negative label values", sql("UPDATE labels SET value = -1 WHERE rowid < 4"),
            "tolerated"),
    BadFile("run", "infinite-measures", "infinite measure values",
            sql("UPDATE measure_values SET value = 9e999 WHERE rowid < 4"), "tolerated"),
    BadFile("run", "negative-k", "an E2E output at k = -5",
            sql("INSERT INTO e2e_outputs SELECT query_id, -5, output, score FROM e2e_outputs"), "tolerated"),
    BadFile("run", "empty-tables", "every table empty",
            sql(*(f"DELETE FROM {t}" for t in ("queries", "passages", "rankings", "doc_outputs", "labels",
                                               "e2e_outputs", "measure_values", "semi_gold_outputs", "verdicts",
                                               "failure_cases", "label_evidence"))), "shown"),
    BadFile("run", "schema-v1", "schema version 1 (older, still read)", sql("PRAGMA user_version = 1"), "shown"),
    BadFile("run", "odd-name-good", "a good run named with '#', '?' and '%2f'", None, "shown",
            filename="odd#name?x%2fy.sqlite"),
    BadFile("run", "odd-name-bad", "random bytes named with '#', '?' and '%2f'", damage.random_bytes,
            filename="#bad?%2f.sqlite"),
    BadFile("run", "hot-journal", "a write killed inside its commit (hot journal beside it)", damage.hot_journal,
            "shown"),
]

OTHER_SPECIFIC = [
    BadFile("attribution", "settings-list", "settings: a JSON list",
            sql("UPDATE meta SET value = '[]' WHERE key = 'settings'")),
    BadFile("attribution", "settings-odd-types", "settings of other JSON types (invalid_citations a string)",
            sql("UPDATE meta SET value = json_set(value, '$.nli', json('[1]'), '$.dataset', json('{\"a\": 1}'), "
                "'$.invalid_citations', 'many', '$.source', 5) WHERE key = 'settings'")),
    BadFile("attribution", "answers-other-shape", "table answers of another shape",
            sql("DROP TABLE answers", "CREATE TABLE answers (a TEXT)")),
    BadFile("attribution", "bad-utf8-answer", "invalid UTF-8 in an answer",
            sql("UPDATE answers SET text = CAST(X'4164612080FF' AS TEXT)"), "reported"),
    BadFile("attribution", "citations-not-json", "a statement's citations are not JSON",
            sql("UPDATE statements SET citations = '[1,'"), "reported"),
    BadFile("ium", "settings-not-json", "settings: 'not json {'",
            sql("UPDATE meta SET value = 'not json {' WHERE key = 'settings'")),
    BadFile("ium", "settings-odd-types", "settings of other JSON types (plan a list, generators a number)",
            sql("UPDATE meta SET value = json_set(value, '$.plan', json('[1]'), '$.generators', 5, "
                "'$.online_default_batch_size', 'x', '$.first_stage', json('{}')) WHERE key = 'settings'")),
    BadFile("ium", "outcomes-other-shape", "table outcomes of another shape",
            sql("DROP TABLE outcomes", "CREATE TABLE outcomes (method TEXT, agent TEXT)")),
    BadFile("ium", "text-score", "text in a number column (outcomes.score)",
            sql("UPDATE outcomes SET score = 'good' WHERE rowid = 1")),
    BadFile("ium", "bad-utf8-question", "invalid UTF-8 in a question",
            sql("UPDATE queries SET text = CAST(X'77686F80FF' AS TEXT)")),
    BadFile("annotations", "labels-other-shape", "table labels of another shape",
            sql("DROP TABLE labels", "CREATE TABLE labels (id INTEGER PRIMARY KEY, label TEXT)")),
    BadFile("annotations", "bad-utf8-annotator", "invalid UTF-8 in an annotator's name",
            sql("UPDATE labels SET annotator = CAST(X'416480FF' AS TEXT)"), "reported"),
    BadFile("jobs", "spec-not-json", "a job's spec is not JSON", sql("UPDATE jobs SET spec = 'not json {'"),
            "reported"),
    BadFile("jobs", "jobs-other-shape", "table jobs of another shape",
            sql("DROP TABLE jobs", "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY)", "INSERT INTO jobs VALUES (1)"),
            "reported"),
    BadFile("llm_cache", "calls-other-shape", "table llm_calls of another shape",
            sql("DROP TABLE llm_calls", "CREATE TABLE llm_calls (key TEXT)"), "reported"),
]


CREATED_ON_DEMAND = ("jobs", "llm_cache")  # an empty file of these kinds is a new, empty database


def _generic(kind: str) -> list[BadFile]:
    found = [BadFile(kind, name, about, damage_,
                     "shown" if name == "empty" and kind in CREATED_ON_DEMAND else expect)
             for name, about, damage_, expect in GENERIC]
    if kind in ROLLBACK_JOURNAL_KINDS and kind != "run":  # the run's hot journal is in RUN_SPECIFIC
        found.append(BadFile(kind, "hot-journal", "a write killed inside its commit (hot journal beside it)",
                             damage.hot_journal, "shown"))
    return found


FILE_INPUTS: list[BadFile] = [bad for kind in GOOD for bad in _generic(kind)] + RUN_SPECIFIC + OTHER_SPECIFIC


def inputs_of(kind: str, *expect: str) -> list[BadFile]:
    """The bad files of one kind (and, when given, of these expectations)."""
    return [bad for bad in FILE_INPUTS if bad.kind == kind and (not expect or bad.expect in expect)]
