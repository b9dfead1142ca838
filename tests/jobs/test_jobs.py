"""Re-scoring jobs (rageval.jobs) on copies of the fixture run (tests/run_fixtures.py).

Most jobs talk to rageval's own OpenAI-compatible server (rageval.generation.server) serving a deterministic fake
reader, so background workers are real OS processes without a model to load, and a test can hold the server's
answers back to stop a worker at a known point (no sleeps, no races). One job runs a tiny random Gemma
(tests/conftest.py ``tiny_model_dir``) in a background worker, checked against the same model called directly.

The fake reader answers with the first gold answer that occurs in the passage (else ``unknown``), so its eRAG EM
label of a passage equals the fixture's ``contains_answer`` label of that passage, computed independently by
``rageval.text_metrics.contains_answer`` when the fixture was built; its measures must then equal the fixture's
hand-computed trec_eval measures of ``contains_answer``, and pytrec_eval's.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import pytrec_eval

from rageval.cli import main
from rageval.errors import JobError, RagevalError
from rageval.generation.base import DecodingSettings, FakeGenerator
from rageval.generation.server import serve
from rageval.jobs.control import cancel_job, create_job, resume_job, start_job
from rageval.jobs.spec import (
    ACTIVE,
    INTERRUPTED,
    JobSpec,
    JobStore,
    Progress,
    job_progress,
    job_status,
    method_name,
    model_short_name,
)
from rageval.jobs.worker import run_job
from rageval.prompts import build_qa_prompt
from rageval.store import RunReader
from rageval.store.jobs import CANCELLED, DONE, FAILED, QUEUED, RUNNING, STALE_AFTER_S, Job
from rageval.text_metrics import contains_answer, exact_match
from tests.run_fixtures import N_QUERIES, K, build_small_run, make_small_run

MODEL = "fake-reader"
METHOD = f"erag:em@{MODEL}"
TOTAL = N_QUERIES * K  # every query's top-K (tests/run_fixtures.py: 6 queries, rankings of 5)
WAIT_S = 120
QUESTIONS = {query.text: query.answers for query in build_small_run().queries}


def reader_rule(prompt: str) -> str:
    """The fake reader: the first gold answer of the prompt's question found in its passage, else ``unknown``."""
    final = prompt.rsplit("\n\n", 1)[-1].splitlines()
    passage = next(line[len("Passage: "):] for line in final if line.startswith("Passage:"))
    question = next(line[len("Question: "):] for line in final if line.startswith("Question:"))
    return next((a for a in QUESTIONS[question] if contains_answer(passage, (a,))), "unknown")


class GatedReader(FakeGenerator):
    """The fake reader behind a gate: while ``gate`` is closed only ``allowance`` more prompts are answered, and
    the next call waits until the gate opens (so a worker stops at a known point)."""

    def __init__(self, rule: Callable[[str], str] = reader_rule, model_id: str = MODEL):
        super().__init__(rule=rule, model_id=model_id)
        self.gate = threading.Event()
        self.gate.set()
        self.allowance = 0

    def close_after(self, prompts: int) -> None:
        self.allowance = prompts
        self.gate.clear()

    def generate(self, prompts, settings):
        if not self.gate.is_set():
            if self.allowance >= len(prompts):
                self.allowance -= len(prompts)
            else:
                self.gate.wait(timeout=WAIT_S)
        return super().generate(prompts, settings)


@pytest.fixture(scope="module")
def reader_server():
    reader = GatedReader()
    with serve(reader, model_name=MODEL) as running:
        yield running, reader
    reader.gate.set()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Jobs database, worker logs and LLM-call cache under tmp_path, never the user's cache."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def store(tmp_path):
    with JobStore(tmp_path / "jobs.sqlite") as opened:
        yield opened


def served_spec(run: Path, server, tmp_path: Path, name: str = "llm", **changes) -> JobSpec:
    return JobSpec.from_flat(str(run), model=MODEL, backend="openai", base_url=server.base_url, batch_size=2,
                   llm_cache=str(tmp_path / f"{name}.sqlite"), **changes)


def wait_for(condition: Callable[[], bool], what: str, log: str | None = None) -> None:
    """Poll ``condition`` until true; fail after WAIT_S with ``what`` and the worker's log."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            tail = Path(log).read_text()[-3000:] if log and Path(log).exists() else "(no log)"
            pytest.fail(f"gave up waiting for {what}; worker log:\n{tail}")
        time.sleep(0.05)  # polling interval, not a wait for the result


def method_rows(run: Path, method: str = METHOD):
    with RunReader(run) as reader:
        labels = reader.labels(method).sort_values(["query_id", "passage_id"]).reset_index(drop=True)
        evidence = reader.label_evidence()
    evidence = evidence[evidence["method"] == method].sort_values(["query_id", "passage_id"]).reset_index(drop=True)
    return labels, evidence


def fixture_labels(run: Path, method: str) -> dict[tuple[str, str], float]:
    with RunReader(run) as reader:
        labels = reader.labels(method)
    return {(q, p): v for q, p, v in zip(labels["query_id"], labels["passage_id"], labels["value"])}


# --- bookkeeping in process ---------------------------------------------------------------------------------

def test_labels_are_committed_batch_by_batch_as_they_are_produced(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    seen: list[tuple[int, int]] = []  # (labels in the run file, done in the jobs database) at each model call

    class Watching(FakeGenerator):
        def generate(self, prompts, settings):
            seen.append((len(method_rows(run)[0]), store.get(job.job_id).done))
            return super().generate(prompts, settings)

    job = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", batch_size=2,
                             llm_cache=str(tmp_path / "llm.sqlite")), store)
    assert (job.status, job.total, job.method) == (QUEUED, TOTAL, METHOD)
    finished = run_job(job.job_id, store, generator=Watching(rule=reader_rule, model_id=MODEL), log=lambda _: None)

    # Batches of 2 within each query's top 5 (2 + 2 + 1): before each call, every earlier batch is in the file.
    expected_before = [0]
    for size in [2, 2, 1] * N_QUERIES:
        expected_before.append(expected_before[-1] + size)
    assert seen == [(n, n) for n in expected_before[:-1]]
    assert (finished.status, finished.done, finished.total, finished.attempts) == (DONE, TOTAL, TOTAL, 1)

    labels, evidence = method_rows(run)
    expected = fixture_labels(run, "contains_answer")  # the fake reader's EM is contains-answer (module docstring)
    assert {(q, p): v for q, p, v in zip(labels["query_id"], labels["passage_id"], labels["value"])} == expected
    assert 0 < sum(expected.values()) < TOTAL
    small = build_small_run()
    gold_passage = next(p for p in small.passages if p.passage_id == "nq_oracle:0")
    answer = reader_rule(build_qa_prompt(small.queries[0].text, [gold_passage]))
    assert answer in small.queries[0].answers  # nq:0's own gold passage holds its answer
    row = evidence[(evidence["query_id"] == "nq:0") & (evidence["passage_id"] == "nq_oracle:0")].iloc[0]
    assert row["evidence"] == f"{MODEL} answered '{answer}' from this passage alone (em against the gold answers: 1)"
    with RunReader(run) as reader:
        settings = reader.settings()
    produced = settings["rescored"][METHOD]
    assert (produced["model_id"], produced["label_kind"], produced["metric"], produced["k"]) == (MODEL, "erag", "em", K)
    assert produced["num_queries"] == N_QUERIES and METHOD in settings["label_methods"]


def test_cancel_stops_between_batches_and_resume_labels_only_the_rest(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    job = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", batch_size=2,
                             llm_cache=str(tmp_path / "llm.sqlite")), store)

    class CancelDuringSecondBatch(FakeGenerator):
        def generate(self, prompts, settings):
            if self.calls == 1:
                cancel_job(job.job_id, store)  # the worker is alive (this process): a flag only
            return super().generate(prompts, settings)

    stopped = run_job(job.job_id, store, generator=CancelDuringSecondBatch(rule=reader_rule, model_id=MODEL),
                      log=lambda _: None)
    assert (stopped.status, stopped.done) == (CANCELLED, 4)  # the batch in flight finished and was kept
    assert len(method_rows(run)[0]) == 4
    with RunReader(run) as reader:
        assert METHOD not in set(reader.measure_table()["method"])  # measures only once every item is labelled

    resume_job(job.job_id, store, launch=False)
    generator = FakeGenerator(rule=reader_rule, model_id=MODEL)
    done = run_job(job.job_id, store, generator=generator, log=lambda _: None)
    assert (done.status, done.done, done.done_at_start, done.attempts) == (DONE, TOTAL, 4, 2)
    assert generator.prompts_seen == TOTAL - 4  # the 4 saved labels were not asked again
    assert fixture_labels(run, METHOD) == fixture_labels(run, "contains_answer")

    never_started = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai"), store)
    assert cancel_job(never_started.job_id, store).status == CANCELLED


# --- measures of the new method -----------------------------------------------------------------------------

def test_new_method_measures_equal_the_fixture_and_pytrec_eval(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    job = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai",
                             llm_cache=str(tmp_path / "llm.sqlite")), store)
    run_job(job.job_id, store, generator=FakeGenerator(rule=reader_rule, model_id=MODEL), log=lambda _: None)
    with RunReader(run) as reader:
        measures = reader.measure_table().set_index(["method", "measure", "query_id"])["value"]
        trec_run = {q: {p.passage_id: p.score for p in r.passages} for q, r in reader.rankings().items()}
    ours = measures.loc[METHOD]
    # Same labels as contains_answer, so the same values as the fixture's hand-computed trec_eval measures.
    assert ours.to_dict() == pytest.approx(measures.loc["contains_answer"].to_dict())
    qrels = {}
    for (query_id, passage_id), value in fixture_labels(run, METHOD).items():
        qrels.setdefault(query_id, {})[passage_id] = int(value)
    names = {f"P@{K}": f"P_{K}", f"R@{K}": f"recall_{K}", f"AP@{K}": f"map_cut_{K}", f"RR@{K}": "recip_rank",
             f"nDCG@{K}": f"ndcg_cut_{K}", "Rprec": "Rprec"}
    results = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(trec_run)
    for query_id in trec_run:
        for measure, trec_name in names.items():
            assert ours[measure, query_id] == pytest.approx(results[query_id][trec_name]), (measure, query_id)


def test_a_partial_job_measures_its_queries_at_its_depth(tmp_path, store, reader_server):
    server, _ = reader_server
    run = make_small_run(tmp_path / "run.sqlite")
    chosen = ("nq:4", "nq:1")
    job = create_job(served_spec(run, server, tmp_path, k=3, query_ids=chosen), store)
    assert job.total == 2 * 3
    run_job(job.job_id, store, log=lambda _: None)  # through the HTTP server, in this process
    with RunReader(run) as reader:
        measures = reader.measure_table()
        rankings = {q: list(r.passage_ids) for q, r in reader.rankings().items()}
    ours = measures[measures["method"] == METHOD]
    assert set(ours["query_id"]) == set(chosen)
    # Cutoff 3 only: the run's cutoff 5 would count the unlabelled ranks 4-5 as not relevant.
    assert set(ours["measure"]) == {"P@3", "R@3", "AP@3", "RR@3", "nDCG@3", "Hit@3", "Rprec"}
    for query_id in chosen:  # P@3 = labels among the top 3 / 3, from the fixture's contains-answer labels
        contains = fixture_labels(run, "contains_answer")
        expected = sum(contains[query_id, p] for p in rankings[query_id][:3]) / 3
        got = ours[(ours["query_id"] == query_id) & (ours["measure"] == "P@3")]["value"].item()
        assert got == pytest.approx(expected)


# --- background workers: kill, resume, stop ----------------------------------------------------------------

def test_a_killed_worker_resumes_with_every_item_once_and_the_uninterrupted_values(tmp_path, store, reader_server):
    server, reader = reader_server
    reference_run = make_small_run(tmp_path / "reference.sqlite")
    reference = create_job(served_spec(reference_run, server, tmp_path, name="reference-llm"), store)
    assert run_job(reference.job_id, store, log=lambda _: None).status == DONE

    run = make_small_run(tmp_path / "run.sqlite")
    spec = served_spec(run, server, tmp_path)
    reader.close_after(prompts=4)  # two batches of 2 get answers, the third waits at the server
    job = start_job(spec, store)
    log = store.get(job.job_id).log_path
    wait_for(lambda: store.get(job.job_id).done == 4, "the first two batches", log)
    assert len(method_rows(run)[0]) == 4  # saved in the run file before the kill

    os.kill(store.get(job.job_id).pid, signal.SIGKILL)
    wait_for(lambda: job_status(store.get(job.job_id)) == INTERRUPTED, "the killed worker to be seen gone")
    killed = store.get(job.job_id)
    assert (killed.status, killed.done) == (RUNNING, 4)  # as the worker left it: it never finished
    reader.gate.set()

    resume_job(job.job_id, store)
    wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the resumed job to finish", log)
    resumed = store.get(job.job_id)
    assert (resumed.status, resumed.done, resumed.total, resumed.done_at_start, resumed.attempts) == (
        DONE, TOTAL, TOTAL, 4, 2), resumed.error

    labels, evidence = method_rows(run)
    reference_labels, reference_evidence = method_rows(reference_run)
    assert len(labels) == TOTAL and not labels.duplicated(["query_id", "passage_id"]).any()
    assert labels.equals(reference_labels) and evidence.equals(reference_evidence)
    with sqlite3.connect(spec.llm_cache) as cache:  # each single-passage prompt answered and cached once
        assert cache.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0] == TOTAL
    with RunReader(run) as reader, RunReader(reference_run) as other:
        ours = reader.measure_table().query("method == @METHOD").sort_values(["measure", "query_id"])
        theirs = other.measure_table().query("method == @METHOD").sort_values(["measure", "query_id"])
    assert ours.reset_index(drop=True).equals(theirs.reset_index(drop=True))


def test_stop_now_terminates_the_worker_and_keeps_its_labels(tmp_path, store, reader_server):
    server, reader = reader_server
    run = make_small_run(tmp_path / "run.sqlite")
    reader.close_after(prompts=2)
    job = start_job(served_spec(run, server, tmp_path), store)
    log = store.get(job.job_id).log_path
    wait_for(lambda: store.get(job.job_id).done == 2, "the first batch", log)
    cancel_job(job.job_id, store, terminate=True)
    wait_for(lambda: store.get(job.job_id).status == CANCELLED, "the worker to record its stop", log)
    reader.gate.set()
    stopped = store.get(job.job_id)
    assert stopped.done == 2 and stopped.cancel_requested and stopped.error is None
    assert len(method_rows(run)[0]) == 2


@pytest.mark.slow
def test_a_tiny_transformers_model_in_a_background_worker(tmp_path, store, tiny_model_dir):
    from rageval.generation.transformers_backend import TransformersGenerator, resolve_device

    run = make_small_run(tmp_path / "run.sqlite")
    spec = JobSpec.from_flat(str(run), model=str(tiny_model_dir), k=2, query_ids=("nq:0", "nq:3"), batch_size=2,
                   max_new_tokens=4, llm_cache=str(tmp_path / "llm.sqlite"))
    job = start_job(spec, store)
    wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the worker", store.get(job.job_id).log_path)
    finished = store.get(job.job_id)
    assert finished.status == DONE, finished.error
    assert finished.method == f"erag:em@{tiny_model_dir.name}"
    assert finished.device == resolve_device("auto")[0]  # CUDA when present, else the CPU

    small = build_small_run()
    passages = {p.passage_id: p for p in small.passages}
    queries = {q.query_id: q for q in small.queries}
    rankings = {r.query_id: r.passage_ids[:2] for r in small.rankings}
    pairs = [(q, p) for q in spec.query_ids for p in rankings[q]]
    direct = TransformersGenerator(tiny_model_dir, batch_size=2).generate(
        [build_qa_prompt(queries[q].text, [passages[p]]) for q, p in pairs], DecodingSettings(max_new_tokens=4))
    labels, evidence = method_rows(run, finished.method)
    stored = {(q, p): (v, e) for q, p, v, e in zip(labels["query_id"], labels["passage_id"], labels["value"],
                                                    evidence["evidence"])}
    assert set(stored) == set(pairs)
    for (query_id, passage_id), output in zip(pairs, direct):
        value, text = stored[query_id, passage_id]
        assert value == exact_match(output, queries[query_id].answers)
        assert f"answered '{output}' from this passage alone" in text


def test_a_write_killed_inside_its_transaction_is_rolled_back_before_the_run_is_read(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    # A writer that spills a large uncommitted insert into the file (tiny page cache), then is killed.
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(run)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE')\n"
        "c.executemany(\"INSERT INTO labels VALUES ('half', 'q', ?, 1.0)\", [(str(i) * 20,) for i in range(20000)])\n"
        "print('written', flush=True); time.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "written"
    writer.kill()
    writer.wait()
    assert Path(f"{run}-journal").exists()
    with RunReader(run) as reader:  # a reader rolls the hot journal back (the folder is writable) and reads
        assert reader.note is None and not Path(f"{run}-journal").exists()
        assert "half" not in reader.label_methods() and reader.counts()["labels"] == len(build_small_run().labels)
    job = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai"), store)
    assert job.total == TOTAL and not [p for p in tmp_path.iterdir() if p.name.startswith("run.sqlite-")]


# --- bad input ---------------------------------------------------------------------------------------------

def test_bad_inputs_fail_with_clear_errors(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    with pytest.raises(JobError, match=r"missing\.sqlite: no such run file"):
        create_job(JobSpec.from_flat(str(tmp_path / "missing.sqlite"), model=MODEL, backend="openai"), store)
    (tmp_path / "notes.sqlite").write_text("not a database")
    with pytest.raises(JobError, match=r"notes\.sqlite: not a rageval run file"):
        create_job(JobSpec.from_flat(str(tmp_path / "notes.sqlite"), model=MODEL, backend="openai"), store)
    with pytest.raises(JobError, match=r"run\.sqlite: no query 'nq:99', 'q-x' in this run \(6 queries"):
        create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", query_ids=("nq:0", "nq:99", "q-x")),
                   store)
    with pytest.raises(JobError, match=r"model '.*no-such-model': no such local folder and not in the local "
                                            r"Hugging Face cache"):
        create_job(JobSpec.from_flat(str(run), model=str(tmp_path / "no-such-model")), store)
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(JobError, match=r"that folder has no config\.json"):
        create_job(JobSpec.from_flat(str(run), model=str(tmp_path / "empty-model")), store)
    with pytest.raises(JobError, match=r"label metric 'bleu': expected one of em, f1"):
        JobSpec.from_flat(str(run), metric="bleu")
    with pytest.raises(JobError, match=r"k: expected at least 1, got 0"):
        JobSpec.from_flat(str(run), k=0)
    with pytest.raises(RagevalError, match=r"base URL 'localhost:8000': expected http://host:port"):
        create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", base_url="localhost:8000"), store)
    with pytest.raises(JobError, match=r"no job 42"):
        resume_job(42, store)
    assert store.list() == []  # nothing half-created


def test_a_model_that_cannot_load_fails_the_job_with_its_reason(tmp_path, store):
    run = make_small_run(tmp_path / "run.sqlite")
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    job = create_job(JobSpec.from_flat(str(run), model=str(broken), llm_cache=str(tmp_path / "llm.sqlite")), store)
    with pytest.raises(JobError, match=r"model '.*broken-model' \(transformers\) could not be loaded"):
        run_job(job.job_id, store, log=lambda _: None)
    failed = store.get(job.job_id)
    assert failed.status == FAILED and "broken-model" in failed.error and "could not be loaded" in failed.error
    assert method_rows(run, failed.method)[0].empty


# --- the command line --------------------------------------------------------------------------------------

def test_cli_start_list_and_resume(tmp_path, reader_server, capsys):
    server, _ = reader_server
    run = make_small_run(tmp_path / "run.sqlite")
    db = tmp_path / "cli-jobs.sqlite"
    code = main(["rescore", "start", str(run), "--backend", "openai", "--base-url", server.base_url, "--model",
                 MODEL, "--num-queries", "2", "--k", "2", "--jobs-db", str(db),
                 "--cache", str(tmp_path / "llm.sqlite")])
    out = capsys.readouterr().out
    assert code == 0 and f"job 1: {METHOD}, 4 items on {run}" in out and "job 1: done (4/4 items" in out
    assert set(method_rows(run)[0]["query_id"]) == {"nq:0", "nq:1"}
    assert main(["rescore", "list", "--jobs-db", str(db)]) == 0
    assert f"done            4/4      {METHOD}" in capsys.readouterr().out
    assert main(["rescore", "resume", "1", "--jobs-db", str(db)]) == 0  # nothing left: measures recomputed
    assert "4/4" in capsys.readouterr().out
    assert main(["rescore", "start", str(tmp_path / "nope.sqlite"), "--jobs-db", str(db)]) == 2
    assert "nope.sqlite: no such run file" in capsys.readouterr().err


def test_progress_and_eta_follow_from_the_stored_counts():
    spec = JobSpec.from_flat("/tmp/run.sqlite", model=MODEL, backend="openai")
    job = Job(job_id=1, run_path=spec.run_path, method=METHOD, spec=spec, status=RUNNING, total=30, done=12,
              done_at_start=4, attempts=2, created=0.0, started=100.0, items_started=110.0, updated=126.0,
              finished=None, heartbeat=126.0, pid=os.getpid(), model_id=MODEL, device="cpu", log_path=None,
              cancel_requested=False, error=None)
    progress = job_progress(job, now=127.0)
    # 8 items in the 16 s since labelling began: 0.5 per second, 18 left -> 36 s.
    assert progress == Progress(RUNNING, 0.4, 0.5, 36.0)
    stale = job_progress(job, now=126.0 + STALE_AFTER_S + 1)
    assert stale.status == INTERRUPTED and stale.eta_s is None
    assert model_short_name("/models/tiny-gemma3/") == "tiny-gemma3"
    assert model_short_name("google/gemma-3-270m", "bfloat16") == "gemma-3-270m-bfloat16"


def test_the_same_served_model_on_another_replica_keeps_its_identity(tmp_path):
    """The identity that decides whether a re-score job's labels belong to an existing method ignores the server's
    URL (another replica or port of the same served model), and tells apart another model or precision."""
    from rageval.jobs.spec import model_identity

    run = str(tmp_path / "run.sqlite")
    first = JobSpec.from_flat(run, model=MODEL, backend="openai", base_url="http://127.0.0.1:8001/v1")
    replica = JobSpec.from_flat(run, model=MODEL, backend="openai", base_url="http://10.0.0.7:9000/v1")
    assert model_identity(first) == model_identity(replica)
    assert method_name(first) == method_name(replica)
    other_model = JobSpec.from_flat(run, model=MODEL + "-instruct", backend="openai",
                                    base_url=first.model_settings.base_url)
    assert model_identity(other_model) != model_identity(first)
