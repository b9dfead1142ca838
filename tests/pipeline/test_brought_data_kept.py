"""What the user brought stays theirs (issue "What you brought stays yours"): a question, an answer, a ranking and its
scores, a label, a gold passage, a measure's cutoff is never rewritten, deleted or mixed with a computed value by
any job, import, export or page read.

The matrix: every way a run comes in (a JSONL upload with labels, answers and gold passages; a TREC upload with
``gold_passage_ids``; ``rageval evaluate`` on a BEIR folder; each trace format's fixture file, made by that format's
own library; a shipped run) x every operation on it (compute what the run lacks; re-score with each label kind;
annotations import; trust; export) -> the brought values are identical afterwards
(:func:`brought_values`), and the read-only operations leave the file's bytes as they were.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

import rageval
from rageval.cli import main
from rageval.errors import JobError
from rageval.generation.cache import LLMCache
from rageval.generation.factory import ModelSettings
from rageval.jobs.control import create_job
from rageval.jobs.spec import JobSpec, JobStore
from rageval.jobs.worker import run_job
from rageval.pipeline.run import complete_run_file
from rageval.pipeline.summary import missing_pieces, run_summary
from rageval.store import read_run
from rageval.store.jobs import DONE
from rageval.store.provenance import brought
from rageval.traces.importer import content_id, import_files, import_traces
from rageval.traces.records import RETRIEVED, TraceRecord
from rageval.upload.convert import convert_upload
from rageval.upload.problems import UploadFile
from rageval.upload.save import save_upload
from tests.traces.test_importer_complete import CountingGenerator
from tests.traces.trace_fixtures import BERLIN, HAMBURG, LYON, MILAN, PARIS, ROME, doc
from tests.user_run_fixtures import PASSAGES, QUESTIONS, fast_flags, write_user_files

FIXTURES = Path(__file__).parents[1] / "traces" / "fixtures"
SHIPPED = Path(__file__).parents[2] / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
#: Six candidates a question (the fixture's three, then three more), so cutoffs 1, 3, 5 and 6 all exist.
DEEP = {q: [*ranked, *[p for p in PASSAGES if p not in ranked][:3]] for q, _, _, _, ranked in QUESTIONS}


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def brought_values(path: Path) -> dict:
    """Every value the user brought to the run at ``path``, as :mod:`rageval.store.provenance` says which."""
    run = read_run(path)
    user = brought(run.settings)
    texts = {p.passage_id: (p.title, p.text) for p in run.passages}
    return {
        "questions": [(q.query_id, q.text, tuple(q.answers), tuple(q.gold_passage_ids)) for q in run.queries],
        "rankings": [(r.query_id, tuple((p.passage_id, p.score) for p in r.passages)) for r in run.rankings],
        "passages": {p.passage_id: texts.get(p.passage_id) for r in run.rankings for p in r.passages},
        "labels": sorted((x.method, x.query_id, x.passage_id, x.value) for x in run.labels if x.method in user.labels),
        "answers": sorted((o.query_id, o.k, o.output) for o in run.e2e_outputs) if user.answers else [],
        "trace_rankings": sorted(map(tuple, (dataclasses.astuple(t) for t in run.trace_rankings)), key=repr),
        "measures": sorted((m.method, m.measure, m.query_id, m.value) for m in run.measure_values
                           if m.method in user.labels and m.measure.rsplit("@", 1)[-1].isdigit()
                           and int(m.measure.rsplit("@", 1)[-1]) in user.cutoffs),
        "brought": user,
    }


# ------------------------------------------------------------------------------------------------ the sources

def jsonl_upload(folder: Path) -> Path:
    """The JSONL form: each record its question, answers, gold passages, ranked passages with the user's own labels,
    and the system's end-to-end answer at k = 3."""
    rows = []
    for q, text, answers, gold, _ in QUESTIONS:
        rows.append({"query_id": q, "text": text, "answers": answers, "gold_passage_ids": gold,
                     "passages": [{"passage_id": p, "title": PASSAGES[p][0], "text": PASSAGES[p][1],
                                   "score": 10.0 - i, "labels": {"human": float(p in gold)}}
                                  for i, p in enumerate(DEEP[q])],
                     "e2e": {"k": 3, "output": answers[0] if q in ("t1", "t3") else "I do not know"}})
    file = _jsonl(folder / "run.jsonl", rows)
    result = convert_upload("jsonl", {"jsonl": UploadFile.from_path(file)}, dataset="tiny-jsonl")
    assert result.ok, result.problems
    return save_upload(result.run, folder / "runs", "jsonl-upload")


def trec_upload(folder: Path) -> Path:
    """The TREC form with ``gold_passage_ids`` in the questions and six candidates each: measures at 1, 3, 5, 6."""
    files = write_user_files(folder)
    files["run"].write_text("".join(f"{q} Q0 {p} {rank} {20 - rank}.5 my-retriever\n" for q, ranked in DEEP.items()
                                    for rank, p in enumerate(ranked, start=1)))
    result = convert_upload("trec", {"run": UploadFile.from_path(files["run"]), "qrels": None,
                                     "queries": UploadFile.from_path(files["queries"]),
                                     "passages": UploadFile.from_path(files["passages"])}, dataset="tiny-trec")
    assert result.ok, result.problems
    return save_upload(result.run, folder / "runs", "trec-upload")


def beir_evaluate(folder: Path) -> Path:
    """``rageval evaluate`` on a BEIR folder (``_id`` corpus, answers in metadata, qrels TSV) and the user's TREC
    run, with the fake model."""
    from rageval.generation.base import FakeGenerator
    from rageval.pipeline import run as pipeline
    from rageval.pipeline.config import build_config

    (folder / "qrels").mkdir(parents=True)
    _jsonl(folder / "corpus.jsonl", [{"_id": p, "title": t, "text": x} for p, (t, x) in PASSAGES.items()])
    _jsonl(folder / "queries.jsonl", [{"_id": q, "text": t, "metadata": {"answers": a}} for q, t, a, _, _ in QUESTIONS])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{p}\t1\n" for q, _, _, gold, _ in QUESTIONS for p in gold))
    (folder / "system.trec").write_text("".join(f"{q} Q0 {p} {rank} {20 - rank} mine\n" for q, ranked in DEEP.items()
                                                for rank, p in enumerate(ranked, start=1)))
    config = build_config({}, {"queries": str(folder / "queries.jsonl"), "corpus": str(folder / "corpus.jsonl"),
                               "qrels": str(folder / "qrels" / "test.tsv"), "run": str(folder / "system.trec"),
                               "k": "1,3", "methods": "all", "dataset": "tiny-beir", "out": str(folder / "beir.sqlite"),
                               "cache": str(folder / "llm.sqlite"), **fast_flags()})
    return pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None)


def traces_of(format_name: str, *files: str):
    def build(folder: Path) -> Path:
        report = import_files(format_name, [FIXTURES / f for f in files], folder / "runs" / f"{format_name}.sqlite")
        return report.path
    return build


def shipped(folder: Path) -> Path:
    (folder / "runs").mkdir(parents=True)
    return Path(shutil.copy(SHIPPED, folder / "runs" / SHIPPED.name))


SOURCES = {
    "jsonl-upload": jsonl_upload, "trec-upload": trec_upload, "beir-evaluate": beir_evaluate,
    "ragas": traces_of("ragas", "ragas_dataset.jsonl"), "openinference": traces_of("openinference",
                                                                                 "openinference_otlp.json"),
    "phoenix": traces_of("openinference", "phoenix_spans.jsonl"), "langsmith": traces_of("langsmith",
                                                                                        "langsmith_runs.jsonl"),
    "langfuse": traces_of("langfuse", "langfuse_observations.json"),
    "trec-rag": traces_of("trec-rag", "trec_rag_2024_topics.tsv", "trec_rag_run.tsv", "trec_rag_2024_answers.jsonl"),
    "langchain-rerank": traces_of("openinference", "openinference_langchain_otlp.json"),
    "otel-cut-list": traces_of("openinference", "openinference_sdk_wide_otlp.json"),
    "langfuse-v2": traces_of("langfuse", "langfuse_v2_observations.json"),
    "langsmith-rerank": traces_of("langsmith", "langsmith_rerank_runs.jsonl"),
    "shipped": shipped,
}


# ------------------------------------------------------------------------------------------------ the operations

def complete(path: Path, tmp: Path) -> None:
    with LLMCache(tmp / "llm.sqlite") as cache:
        complete_run_file(path, ModelSettings(model="fake"), generator=CountingGenerator(), cache=cache,
                          log=lambda _: None)


def rescore(kind: str):
    def operate(path: Path, tmp: Path) -> None:
        with JobStore(tmp / "jobs.sqlite") as store:
            queries = tuple(q.query_id for q in read_run(path).queries[:4])  # (a shipped run has 300)
            job = create_job(JobSpec.from_flat(str(path), model="fake", backend="openai", label_kind=kind,
                                               query_ids=queries, llm_cache=str(tmp / "llm.sqlite")), store)
            assert run_job(job.job_id, store, generator=CountingGenerator(), log=lambda _: None).status == DONE
    return operate


def annotations_import(path: Path, tmp: Path) -> None:
    run = read_run(path)
    rows = [f"{r.query_id},{r.passages[0].passage_id},1\n" for r in run.rankings[:3] if r.passages]
    (tmp / "labels.csv").write_text("query_id,passage_id,label\n" + "".join(rows))
    assert main(["annotations", "import", str(path), str(tmp / "labels.csv"), "--annotator", "ann",
                 "--annotations", str(tmp / "annotations.sqlite")]) == 0


def trust(path: Path, tmp: Path) -> None:
    assert main(["trust", str(path), "--json", "--annotations", str(tmp / "annotations.sqlite")]) in (0, 1)


def export(path: Path, tmp: Path) -> None:
    main(["export", str(path), "--what", "labels", "--format", "csv", "--out", str(tmp / "labels.csv")])
    main(["export", str(path), "--format", "parquet", "--out", str(tmp / "parquet")])


WRITING = {"complete": complete, "rescore-erag": rescore("erag"), "rescore-llm_relevance": rescore("llm_relevance"),
           "rescore-umbrela": rescore("umbrela")}
READING = {"annotations-import": annotations_import, "trust": trust, "export": export}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each source built once; each test works on its own copy."""
    made = {}
    for name, build in SOURCES.items():
        made[name] = build(tmp_path_factory.mktemp(name))
    return made


def _copy(built, source: str, tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir(exist_ok=True)
    return Path(shutil.copy(built[source], tmp_path / "runs" / built[source].name))


@pytest.mark.slow
@pytest.mark.parametrize("operation", list(WRITING))
@pytest.mark.parametrize("source", list(SOURCES))
def test_a_job_keeps_every_value_the_user_brought(built, source, operation, tmp_path, capsys):
    path = _copy(built, source, tmp_path)
    before = brought_values(path)
    try:
        WRITING[operation](path, tmp_path)
    except JobError as refused:  # e.g. a run without the passages' texts: refused before anything is written
        assert brought_values(path) == before, refused
        return
    after = brought_values(path)
    assert after == before


@pytest.mark.parametrize("operation", list(READING))
@pytest.mark.parametrize("source", ["jsonl-upload", "trec-upload", "ragas", "langsmith", "shipped"])
def test_reading_a_run_leaves_its_file_as_it_was(built, source, operation, tmp_path, capsys):
    path = _copy(built, source, tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    READING[operation](path, tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


# ------------------------------------------------------------------------------------------------ the defects

def uneven_records() -> list[TraceRecord]:
    """Four traces whose lists differ in length (2, 3, 4, 4): the system answered each from its own list."""
    return [TraceRecord("a", "Capital of France?", {RETRIEVED: [doc(0, PARIS), doc(1, LYON)]}, answer="Paris",
                        gold_answers=("Paris",), source="f, line 1"),
            TraceRecord("b", "Capital of Germany?", {RETRIEVED: [doc(0, HAMBURG), doc(1, BERLIN), doc(2, MILAN)]},
                        answer="Berlin", gold_answers=("Berlin",), source="f, line 2"),
            TraceRecord("c", "Capital of Italy?", {RETRIEVED: [doc(0, MILAN), doc(1, ROME), doc(2, LYON),
                                                               doc(3, PARIS)]},
                        answer="Rome", gold_answers=("Rome",), source="f, line 3"),
            TraceRecord("d", "Capital of Spain?", {RETRIEVED: [doc(0, MILAN), doc(1, ROME), doc(2, LYON),
                                                               doc(3, PARIS)]},
                        answer="Lyon", gold_answers=("Madrid",), source="f, line 4")]


def test_completing_an_import_with_uneven_lists_generates_no_answer_at_any_k(tmp_path, capsys):
    records = uneven_records()
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{r.trace_id} 0 {content_id(t)} 1\n"
                             for r, t in zip(records, (PARIS, BERLIN, ROME, MILAN))))
    path = tmp_path / "runs" / "uneven.sqlite"
    import_traces(records, path, format_name="ragas", qrels=qrels)
    assert "reteval" in missing_pieces(run_summary(path), read_run(path).settings)
    generator = CountingGenerator()
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        complete_run_file(path, ModelSettings(model="fake"), generator=generator, cache=cache, log=lambda _: None)
    run = read_run(path)
    assert sorted((o.query_id, o.k, o.output) for o in run.e2e_outputs) == [
        ("a", 2, "Paris"), ("b", 3, "Berlin"), ("c", 4, "Rome"), ("d", 4, "Lyon")]
    texts = (PARIS, LYON, BERLIN, HAMBURG, ROME, MILAN)
    assert max(sum(t in prompt for t in texts) for prompt in generator.prompts) == 1  # no whole list in a prompt
    # The system was right on 3 of 4 (d answered Lyon for Madrid): every query's own answer counts.
    assert main(["info", str(path)]) == 0
    assert "E2E em: 0.750 over 4 queries" in capsys.readouterr().out
    table = rageval.open(path).queries()
    assert list(table["e2e_output"]) == ["Paris", "Berlin", "Rome", "Lyon"]


def test_completing_a_trec_upload_keeps_its_gold_labels_and_every_cutoff(tmp_path):
    path = trec_upload(tmp_path)
    before = read_run(path)
    gold = sorted((x.query_id, x.passage_id, x.value) for x in before.labels if x.method == "gold")
    assert len(gold) == 6 * 6 and sum(v == 0 for _, _, v in gold) == 30  # the user's 0s as well as their 1s
    assert {m.measure for m in before.measure_values if m.method == "gold"} >= {"P@3", "nDCG@3"}
    complete(path, tmp_path)
    after = read_run(path)
    assert sorted((x.query_id, x.passage_id, x.value) for x in after.labels if x.method == "gold") == gold
    kept = {(m.measure, m.query_id): m.value for m in after.measure_values if m.method == "gold"}
    given = {(m.measure, m.query_id): m.value for m in before.measure_values if m.method == "gold"}
    assert given.items() <= kept.items()
    assert 3 in after.settings["cutoffs"]
    assert any(m.method == "erag:em" and m.measure == "P@3" for m in after.measure_values)


def test_completing_an_upload_with_answers_generates_none(tmp_path):
    path = jsonl_upload(tmp_path)
    answers = sorted((o.query_id, o.k, o.output) for o in read_run(path).e2e_outputs)
    assert "e2e" not in missing_pieces(run_summary(path), read_run(path).settings)
    complete(path, tmp_path)
    after = read_run(path)
    assert sorted((o.query_id, o.k, o.output) for o in after.e2e_outputs) == answers
    assert after.settings["brought"]["e2e_answers"] == 6 and after.settings["e2e_answers"] == "uploaded"


def test_a_rescore_never_writes_under_the_name_of_labels_the_user_brought(tmp_path):
    """Upload names cannot hold '@', but a run another tool wrote may: a job's method that names brought labels is
    refused before anything is written."""
    import dataclasses

    from rageval.store import Label, write_run
    from rageval.store.provenance import record_brought

    run = read_run(trec_upload(tmp_path))
    theirs = [Label("llm_relevance@fake", r.query_id, r.passages[0].passage_id, 0.0) for r in run.rankings]
    settings = {**run.settings, "brought": record_brought("another tool", labels=["gold", "llm_relevance@fake"])}
    path = write_run(dataclasses.replace(run, settings=settings, labels=[*run.labels, *theirs]),
                     tmp_path / "runs" / "theirs.sqlite")
    with JobStore(tmp_path / "jobs.sqlite") as store, pytest.raises(JobError, match="labels you brought"):
        create_job(JobSpec.from_flat(str(path), model="fake", backend="openai", label_kind="llm_relevance"), store)


def test_an_import_without_gold_answers_reads_as_what_it_holds(tmp_path, capsys):
    """Traces without reference answers, with qrels: info says the answers are imported and not scored, the
    correlations are an empty frame with the reason, and each query shows the system's own answer."""
    records = [TraceRecord(r.trace_id, r.question, r.stages, answer=r.answer, source=r.source)
               for r in uneven_records()]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{r.trace_id} 0 {content_id(PARIS)} 1\n" for r in records))
    path = tmp_path / "runs" / "nogold.sqlite"
    import_traces(records, path, format_name="langsmith", qrels=qrels)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 answers imported, not scored (no gold answers)" in out and "nan" not in out
    run = rageval.open(path)
    correlations = run.correlations()
    assert correlations.empty and "no gold answers" in correlations.attrs["reason"]
    assert list(run.queries()["e2e_output"]) == ["Paris", "Berlin", "Rome", "Lyon"]
    summary = run_summary(path)["system_answers"]
    assert (summary["answers"], summary["scored"]) == (4, 0)


def test_a_completed_upload_lacks_nothing_at_any_of_its_cutoffs(tmp_path):
    """The upload's cutoffs (1, 3, 5, 6) are kept, and completion answers at each, so nothing is left lacking."""
    path = trec_upload(tmp_path)
    complete(path, tmp_path)
    run = read_run(path)
    assert missing_pieces(run_summary(path), run.settings) == {}
    assert {o.k for o in run.e2e_outputs} >= {1, 3, 5, 6}
