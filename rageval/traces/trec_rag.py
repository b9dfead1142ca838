"""TREC RAG 2024/2025 topics, retrieval runs and answers read into :class:`~rageval.traces.records.TraceRecord`.

The formats are the track guidelines' (trec-rag.github.io, "TREC 2024 RAG Track Guidelines" and "TREC 2025 RAG
Track Guidelines"). The files are told apart by their content, any number of topic files and at most one run and
one answers file:

- **topics**: TSV ``topic_id<TAB>text`` (2024), or JSON Lines ``{"id", "title"}`` (2025; ``narrative`` / ``text``
  / ``query`` are read too);
- **a retrieval run**: TREC's six columns ``topic_id Q0 segment_id rank score run_id``, read by
  :func:`rageval.trec.read_trec_run` (the one TREC reader) and ranked by score;
- **answers** (AG / RAG tasks), JSON Lines: 2024's ``{run_id, topic_id, topic, references, response_length,
  answer: [{text, citations: [indices into references]}]}`` or 2025's second format ``{metadata: {run_id,
  narrative_id, narrative, ...}, references, answer: [{text, citations: [segment ids]}]}``.

Per topic: the question is the answer line's ``topic`` / ``narrative``, else the topics file's text; ``retrieved``
is the run's ranking, or without a run the answer's ``references`` (in order); with both, the ``references`` are
the ``reranked`` stage when they are not the run's top of the same length (the list the generator was given). The
answer is the sentences' texts joined by spaces; ``citations`` keeps each sentence with the segment ids it cites
(an attributed answer for the Citations page). Segments carry no text in these files (the importer looks them up
in the corpus). ``answers_field`` names another field of the answer line holding the sentence list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import RERANKED, RETRIEVED, TraceDocument, TraceRecord

TOPIC_TEXT_KEYS = ("title", "narrative", "text", "query", "topic")


@dataclass
class _Answer:
    question: str | None
    references: list[str]
    sentences: list[tuple[str, tuple[str, ...]]]
    source: str
    has_answer: bool = True
    extra: dict = field(default_factory=dict)


def read(paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every topic of the files ``paths`` that a run or an answer covers, answers' order first."""
    topics: dict[str, str] = {}
    run: dict[str, list[tuple[str, float]]] | None = None
    run_path: Path | None = None
    answers: dict[str, _Answer] | None = None
    for path in (Path(p) for p in paths):
        kind = _kind(path)
        if kind == "topics":
            topics.update(_topics(path))
        elif kind == "answers":
            if answers is not None:
                raise DataError(path, "give one answers file per import (a second one was given)")
            answers = _answers(path, answers_field or "answer")
        else:
            if run is not None:
                raise DataError(path, "give one run file per import (a second one was given)")
            run, run_path = _run(path), path
    if run is None and answers is None:
        raise DataError(paths[0] if paths else Path("."), "expected a run file or an answers file besides topics")
    order = list(answers or {}) + [topic for topic in (run or {}) if topic not in (answers or {})]
    records = []
    for topic_id in order:
        answer = (answers or {}).get(topic_id)
        question = (answer.question if answer else None) or topics.get(topic_id)
        stages: dict[str, list[TraceDocument]] = {}
        ranking = (run or {}).get(topic_id)
        if ranking is not None:
            stages[RETRIEVED] = [TraceDocument(pid, None, position, score)
                                 for position, (pid, score) in enumerate(ranking)]
        if answer is not None and answer.references:
            references = [TraceDocument(pid, None, position) for position, pid in enumerate(answer.references)]
            if ranking is None:
                stages[RETRIEVED] = references
            elif [pid for pid, _ in ranking[:len(references)]] != answer.references:
                stages[RERANKED] = references
        text = " ".join(sentence for sentence, _ in answer.sentences).strip() if answer else ""
        answer_text = text if answer is not None and answer.has_answer and text else None
        source = answer.source if answer else f"{run_path}, topic {topic_id}"
        records.append(TraceRecord(
            trace_id=topic_id, question=question or "", stages=stages, answer=answer_text,
            citations=tuple(answer.sentences) if answer else (), source=source,
            missing=parsing.record_missing(question or "", stages, answer_text)))
    return records


def _kind(path: Path) -> str:
    """``topics``, ``answers`` or ``run``, from the first non-blank line."""
    text = parsing.read_text(path)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        for _, value in parsing.json_lines(path, text):
            if isinstance(value, Mapping) and ("answer" in value or "references" in value):
                return "answers"
            return "topics"
    fields = first.split("\t")
    if len(fields) == 2 or (len(first.split()) != 6 and "\t" in first):
        return "topics"
    return "run"


def _topics(path: Path) -> dict[str, str]:
    text = parsing.read_text(path)
    topics: dict[str, str] = {}
    if next((line for line in text.splitlines() if line.strip()), "").lstrip().startswith("{"):
        for line, value in parsing.json_lines(path, text):
            if not isinstance(value, Mapping):
                raise DataError(path, "expected a topic object {\"id\", \"title\"}", line=line)
            topic_id = parsing.as_text(value.get("id", value.get("topic_id", value.get("narrative_id"))))
            if topic_id is None:
                raise DataError(path, "expected the topic's id", line=line, field="id")
            topic_text = next((value[key] for key in TOPIC_TEXT_KEYS if isinstance(value.get(key), str)), None)
            if topic_text is None:
                raise DataError(path, "expected the topic's text", line=line, field="title")
            topics[topic_id] = topic_text
        return topics
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip():
            continue
        topic_id, tab, topic_text = row.partition("\t")
        if not tab or not topic_id.strip() or not topic_text.strip():
            raise DataError(path, "expected 'topic_id<TAB>topic text'", line=number)
        topics[topic_id.strip()] = topic_text.strip()
    return topics


def _run(path: Path) -> dict[str, list[tuple[str, float]]]:
    from rageval.trec import read_trec_run

    frame = read_trec_run(path)
    ranking: dict[str, list[tuple[str, float]]] = {}
    for topic_id, passage_id, score in zip(frame["query_id"].astype(str), frame["passage_id"].astype(str),
                                           frame["score"].astype(float), strict=True):
        ranking.setdefault(topic_id, []).append((passage_id, score))
    # the ranking follows the scores, as trec_eval's does; ties keep the file's order
    return {topic: sorted(items, key=lambda item: -item[1]) for topic, items in ranking.items()}


def _answers(path: Path, answer_field: str) -> dict[str, _Answer]:
    answers: dict[str, _Answer] = {}
    for line, value in parsing.json_lines(path):
        if not isinstance(value, Mapping):
            raise DataError(path, "expected an answer object", line=line)
        found_metadata = value.get("metadata")
        metadata: Mapping = found_metadata if isinstance(found_metadata, Mapping) else {}
        topic_id = parsing.as_text(value.get("topic_id", metadata.get("narrative_id", metadata.get("topic_id"))))
        if topic_id is None:
            raise DataError(path, "expected the topic's id", line=line, field="topic_id")
        if topic_id in answers:
            raise DataError(path, f"topic {topic_id!r} is answered twice (first at {answers[topic_id].source})",
                            line=line, field="topic_id")
        question = parsing.as_text(value.get("topic", metadata.get("narrative", metadata.get("topic"))))
        references = value.get("references", [])
        if not isinstance(references, list) or not all(isinstance(item, str) for item in references):
            raise DataError(path, "expected a list of segment ids", line=line, record=topic_id, field="references")
        sentences_value = parsing.dig(value, answer_field)
        sentences = _sentences(path, line, topic_id, sentences_value, references, answer_field)
        answers[topic_id] = _Answer(question, list(references), sentences, f"{path}, line {line}",
                                    has_answer=sentences_value is not None)
    return answers


def _sentences(path: Path, line: int, topic_id: str, value: Any, references: list[str],
               answer_field: str) -> list[tuple[str, tuple[str, ...]]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [(value, ())]
    if not isinstance(value, list):
        raise DataError(path, "expected a list of {text, citations}", line=line, record=topic_id, field=answer_field)
    sentences = []
    for index, sentence in enumerate(value):
        at = f"{answer_field}[{index}]"
        if not isinstance(sentence, Mapping) or not isinstance(sentence.get("text"), str):
            raise DataError(path, "expected {\"text\": ..., \"citations\": [...]}", line=line, record=topic_id,
                            field=f"{at}.text")
        cited = []
        citations = sentence.get("citations", [])
        if not isinstance(citations, list):
            raise DataError(path, "expected a list", line=line, record=topic_id, field=f"{at}.citations")
        for citation in citations:
            if isinstance(citation, bool) or not isinstance(citation, (int, str)):
                raise DataError(path, f"expected an index into references or a segment id, found {citation!r}",
                                line=line, record=topic_id, field=f"{at}.citations")
            if isinstance(citation, int):
                if not 0 <= citation < len(references):
                    raise DataError(path, f"citation {citation} is not an index into the {len(references)} "
                                    "references (0-based)", line=line, record=topic_id, field=f"{at}.citations")
                cited.append(references[citation])
            else:
                cited.append(citation)
        sentences.append((sentence["text"], tuple(cited)))
    return sentences
