"""Citation metrics of attributed answers a user's own RAG system produced (``rageval evaluate-citations``).

The input is JSONL, one answer a line (``docs/citations_format.md``)::

    {"query_id": "q1", "question": "...", "answer": "... [1]. ... [1, 2].",
     "passages": [{"passage_id": "d7", "title": "...", "text": "..."}, ...],
     "gold_answers": ["..."], "answer_id": "a"}

``[n]`` cites the n-th passage of the list (1-based). Each answer is split into statements with the HAGRID runs'
machinery (:mod:`rageval.attribution.statements`), every statement × passage pair is judged by an NLI checker
(:mod:`rageval.attribution.nli`), and :func:`rageval.attribution.scoring.score_answers` computes AutoAIS (citation
and passage level), ALCE citation recall/precision (Djeddal et al., CIKM 2024, §2.5) and, where gold answers are
given, BLEU / ROUGE-L (and BERTScore). The result is an attribution run file (:mod:`rageval.store.attribution`)
with one scenario (``user`` by default) that the dashboard's Citations page shows.

A citation naming no passage of the list (``[9]`` with 3 passages, or ``[0]``) is *invalid*: it supports nothing
(AutoAIS_cit ignores it, ALCE gives its statement recall 0 and counts it as imprecise), it is reported through
``log`` and counted in the run's settings (``invalid_citations``) and per answer (metric ``invalid_citations``).

Input errors raise :class:`rageval.errors.DataError` naming the file, line and field before any model is loaded,
and nothing is written; the run file is written atomically.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.attribution.metrics import InputPassage
from rageval.attribution.scoring import AnswerRecord, StatementRecord, score_answers
from rageval.errors import DataError, RagevalError
from rageval.paths import not_a_file

USER_SCENARIO = "user"
SOURCE = "user-answers"  # settings["source"] of a run this module wrote
ANSWER_FIELDS = ("query_id", "answer_id", "question", "answer", "passages", "gold_answers")
PASSAGE_FIELDS = ("passage_id", "title", "text")
DEFAULT_ANSWER_ID = "0"
MAX_LISTED_INVALID = 10  # invalid-citation warnings listed one by one; the rest are counted
_FIELD_PREFIX = re.compile(r"^field '([^']+)': ")  # how rageval.upload's field checks start their messages
Log = Callable[[str], None]


@dataclass(frozen=True)
class UserAnswer:
    """One line of the input: an attributed answer with the passages it cites by their 1-based list position."""

    line: int
    query_id: str
    answer_id: str
    question: str
    answer: str
    passages: tuple[InputPassage, ...]
    gold_answers: tuple[str, ...] = ()


def read_user_answers(path: str | Path, warn: Log | None = None) -> list[UserAnswer]:
    """The answers of the JSONL file ``path``; raises :class:`DataError` (file, line, field) at the first error.

    Field checks and limits are the upload format's (:mod:`rageval.upload`: UTF-8, one object a line, blank lines
    skipped, ids without spaces); unknown fields are passed to ``warn``. Answers sharing a ``query_id`` must have
    distinct ``answer_id`` values and the same question and passages (the run file stores a query's passages once).
    """
    from rageval.upload.fields import FieldReader, read_json_records
    from rageval.upload.problems import DEFAULT_LIMITS, ERROR, Problems, UploadFile

    path = Path(path)
    reason = not_a_file(path)
    if reason:
        raise DataError(path, reason if reason == "no such file" else f"{reason}; expected the answers file")
    file = UploadFile.from_path(path)
    problems = Problems(DEFAULT_LIMITS.max_problems_per_file)
    answers: list[UserAnswer] = []
    first_line: dict[tuple[str, str], int] = {}
    by_query: dict[str, UserAnswer] = {}
    unknown_seen: set[str] = set()
    for line, record in read_json_records(file, problems, DEFAULT_LIMITS):
        fields = FieldReader(record, file.name, line, problems, DEFAULT_LIMITS)
        fields.warn_unknown(ANSWER_FIELDS, unknown_seen)
        query_id = fields.identifier("query_id")
        answer_id = fields.identifier("answer_id") if "answer_id" in record else DEFAULT_ANSWER_ID
        question = fields.text("question")
        answer = fields.text("answer", non_empty=False)
        gold = fields.string_list("gold_answers", "gold answer")
        passages = _read_passages(fields, query_id or "?", unknown_seen)
        if not fields.ok:
            continue
        assert query_id is not None and answer_id is not None and question is not None  # fields.ok: all were read
        assert answer is not None and gold is not None
        key = (query_id, answer_id)
        if key in first_line:
            named = "query_id" if "answer_id" not in record else "answer_id"
            fields.fail(named, f"duplicate answer {answer_id!r} of query {query_id!r} (first on line "
                               f"{first_line[key]}); give each answer of a query its own answer_id")
            continue
        first_line[key] = line
        parsed = UserAnswer(line, query_id, answer_id, question, answer, passages,
                            tuple(g for g in gold if g.strip()))
        earlier = by_query.setdefault(query_id, parsed)
        for field, differs in (("question", earlier.question != question), ("passages", earlier.passages != passages)):
            if differs:
                fields.fail(field, f"differs from the answer of query {query_id!r} on line {earlier.line}; answers of "
                                   f"one query must share its question and passages")
        if fields.ok:
            answers.append(parsed)
    found = problems.result()
    if warn is not None:
        for problem in found:
            if problem.severity != ERROR:
                warn(str(problem))
    errors = sorted((p for p in found if p.severity == ERROR), key=lambda p: p.line or 0)  # the earliest line
    if errors:
        first = errors[0]
        prefix = _FIELD_PREFIX.match(first.message)
        message = first.message[prefix.end():] if prefix else first.message
        more = f" ({len(errors) - 1} more error(s) after it)" if len(errors) > 1 else ""
        raise DataError(first.file, message + more, line=first.line, field=prefix.group(1) if prefix else None)
    return answers


def _read_passages(fields, query_id: str, unknown_seen: set[str]) -> tuple[InputPassage, ...]:
    """The ``passages`` list as numbered input passages (``passage_id`` defaults to ``<query_id>#<n>``)."""
    from rageval.upload.fields import FieldReader, describe

    value = fields.value("passages", required=True)
    if value is None:
        return ()
    if not isinstance(value, list):
        fields.fail("passages", f"expected a list of passage objects, found {describe(value)}")
        return ()
    passages = []
    for number, item in enumerate(value, start=1):
        where = f"passages[{number - 1}]"
        if not isinstance(item, dict):
            fields.fail(where, f"expected a passage object {{\"passage_id\", \"title\", \"text\"}}, found "
                               f"{describe(item)}")
            continue
        inner = FieldReader(item, fields.file, fields.line, fields.problems, fields.limits, where=where + ".")
        inner.warn_unknown(PASSAGE_FIELDS, unknown_seen)
        passage_id = inner.identifier("passage_id") if "passage_id" in item else f"{query_id}#{number}"
        title = inner.text("title", required=False)
        text = inner.text("text")
        if inner.ok:
            assert passage_id is not None and title is not None and text is not None  # inner.ok: all were read
            passages.append(InputPassage(number, passage_id, title, text))
        else:
            fields.ok = False
    return tuple(passages)


def answer_records(answers: Sequence[UserAnswer], tokenizer, scenario: str = USER_SCENARIO) -> list[AnswerRecord]:
    """The answers as scoring records: statements (Punkt sentences with their citations, markers removed), the
    passages by citation number and, as references, the gold answers without their citation markers."""
    from rageval.attribution.statements import parse_citations, split_statements

    records = []
    for answer in answers:
        statements = tuple(StatementRecord(s.text, s.citations, s.raw)
                           for s in split_statements(answer.answer, tokenizer))
        references = tuple(dict.fromkeys(t for t in (parse_citations(g)[0] for g in answer.gold_answers) if t))
        records.append(AnswerRecord(scenario, answer.query_id, answer.answer_id, answer.answer, statements,
                                    {p.number: p for p in answer.passages}, references=references))
    return records


@dataclass(frozen=True)
class InvalidCitations:
    """Citations naming no passage of their answer's list: ``citations`` in ``statements`` of ``answers``; per
    answer (input line, query id, answer id, the invalid numbers, how many passages it had) in ``where``."""

    citations: int
    statements: int
    answers: int
    where: tuple[tuple[int, str, str, tuple[int, ...], int], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"citations": self.citations, "statements": self.statements, "answers": self.answers,
                "first": [{"line": line, "query_id": q, "answer_id": a, "numbers": list(numbers), "passages": n}
                          for line, q, a, numbers, n in self.where[:MAX_LISTED_INVALID]]}


def find_invalid_citations(answers: Sequence[UserAnswer], records: Sequence[AnswerRecord]) -> InvalidCitations:
    """Every citation of ``records`` that names no passage of its answer (``answers[i]`` is ``records[i]``'s line)."""
    where = []
    citations = statements = 0
    for answer, record in zip(answers, records):
        bad = [[n for n in s.citations if n not in record.passages] for s in record.statements]
        citations += sum(map(len, bad))
        statements += sum(bool(b) for b in bad)
        numbers = tuple(dict.fromkeys(n for b in bad for n in b))
        if numbers:
            where.append((answer.line, answer.query_id, answer.answer_id, numbers, len(record.passages)))
    return InvalidCitations(citations, statements, len(where), tuple(where))


def load_checker(backend: str, log: Log = print):
    """The checker a spec names (:func:`rageval.attribution.checkers.load_checker`: ``ours``, ``hf:...``,
    ``minicheck:...``, ``alignscore:...``, ``llm[:MODEL]``; docs/checkers.md), telling ``log`` when the default
    model is trained first."""
    from rageval.attribution.checkers import load_checker as load

    return load(backend, log=log)


def evaluate_citations(answers_path: str | Path, out_path: str | Path, nli="trained", *, tokenizer=None,
                       bertscore: bool = True, scenario: str = USER_SCENARIO, command: str = "",
                       log: Log = print) -> Path:
    """Score the attributed answers of ``answers_path`` (module docstring) into the run file ``out_path``.

    ``nli``: a checker spec for :func:`load_checker`, a loaded :class:`EntailmentModel`, or a function loading one
    (called once the answers are read and checked). ``tokenizer``: the
    Punkt sentence tokenizer (default: :func:`sentence_tokenizer`, trained on the corpus). ``bertscore``: also
    BERTScore (MiniLM) for answers with gold answers. The input is read and checked before any model is loaded;
    invalid citations are reported through ``log``.
    """
    from rageval.store.attribution import AttributionRun, write_attribution_run

    started = time.perf_counter()
    answers_path, out_path = Path(answers_path), Path(out_path)
    if out_path.resolve() == answers_path.resolve():
        raise RagevalError(f"{out_path}: the run file would overwrite the answers file; choose another --out")
    answers = read_user_answers(answers_path, warn=log)
    if not answers:
        raise DataError(answers_path, "no answer to evaluate")
    if tokenizer is None:
        from rageval.attribution.statements import sentence_tokenizer

        tokenizer = sentence_tokenizer()
    records = answer_records(answers, tokenizer, scenario)
    invalid = find_invalid_citations(answers, records)
    for line, query_id, answer_id, numbers, count in invalid.where[:MAX_LISTED_INVALID]:
        log(f"warning: {answers_path}, line {line} (query {query_id!r}, answer {answer_id!r}): citation(s) "
            f"{', '.join(f'[{n}]' for n in numbers)} name no passage ({count} given, numbered from 1); they "
            f"support nothing")
    if invalid.answers > MAX_LISTED_INVALID:
        log(f"warning: {invalid.answers - MAX_LISTED_INVALID} more answers cite passages that do not exist")
    if invalid.citations:
        log(f"warning: {invalid.citations} invalid citation(s) in {invalid.statements} statement(s) of "
            f"{invalid.answers} answer(s); counted as unsupported")

    if isinstance(nli, str):
        model = load_checker(nli, log)
    else:
        model = nli if hasattr(nli, "entailment_probabilities") else nli()
    scorer = None
    if bertscore and any(r.references for r in records):
        from rageval.bertscore import BertScorer

        scorer = BertScorer()
    log(f"scoring {len(records)} answers, {sum(len(r.statements) for r in records)} statements with "
        f"{model.model_id}")
    scored = score_answers(records, model, scorer)

    from rageval.attribution.experiment import citation_usability
    from rageval.attribution.nli import checker_threshold
    from rageval.version import __version__

    questions = {a.query_id: a.question for a in answers}
    settings = {
        "kind": "attribution", "source": SOURCE, "dataset": answers_path.name, "scenario": scenario,
        "input": str(answers_path.resolve()), "input_sha256": _sha256(answers_path),
        "answers": len(answers), "queries": len(questions),
        "answers_with_gold": sum(bool(r.references) for r in records),
        "nli": model.model_id, "nli_threshold": checker_threshold(model),
        "bertscore": getattr(scorer, "model_id", ""),
        "sentence_splitter": "Punkt trained on the rageval corpus (rageval.attribution.statements)",
        "invalid_citations": invalid.as_dict(), "usability": {scenario: citation_usability(records)},
        "command": command, "rageval_version": __version__, "seconds": round(time.perf_counter() - started, 1),
    }
    run = AttributionRun(settings=settings, queries=[(qid, text, []) for qid, text in questions.items()],
                         scored=scored)
    return write_attribution_run(run, out_path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
