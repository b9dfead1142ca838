"""Labels per second through the OpenAI-compatible backend against concurrency x number of endpoints, and what the
client itself costs per request: where one rageval process stops scaling.

    python benchmarks/bench_http_backend.py                               # 1,2,4,8,16,32 x 1,2,4; 1000 requests
    python benchmarks/bench_http_backend.py --requests 2000 --concurrency 8,64 --endpoints 4

The servers are our own (``rageval serve-model --model fake``), one process per endpoint on
loopback, answering at once (no model: the first capitalised words of the passage), so every second measured is
HTTP, JSON and Python on both sides. The prompts are real eRAG prompts (the default few-shot QA prompt, one
passage) from the shipped NQ run, about 1.6 kB each. For each configuration one ``OpenAIGenerator`` (kept HTTP
connections, warmed up with 2 x concurrency requests) answers ``--requests`` prompts in one ``generate`` call;
"in waves" sends the same prompts ``concurrency`` at a time, the way the pipeline calls the generator with
``--batch-size`` prompts (each wave waits for its slowest request).

Columns: labels/s; client CPU ms per label (user + system of this process, all its threads); client cores (client
CPU / wall: the GIL holds one process near 1.0 at most); server CPU ms per label (all server processes, from
/proc). A client whose cores reach ~1 is the bottleneck: more endpoints or concurrency cannot help it, only more
client processes (e.g. ``rageval rescore`` jobs over parts of the run) or a cheaper client. On a machine with few
cores the servers and the client share them, so labels/s here is bounded by (client + server CPU) / cores; the
client CPU per label is what carries over to a real fleet.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.generation.base import DecodingSettings
from rageval.generation.openai_backend import OpenAIGenerator
from rageval.prompts import build_qa_prompt
from rageval.store import RunReader

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_RUN = ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
SERVED = "fake"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def erag_prompts(count: int) -> list[str]:
    """eRAG prompts (question + one passage, the default few-shot QA prompt) of the shipped run, in rank order,
    repeated when ``count`` exceeds them."""
    with RunReader(SHIPPED_RUN) as reader:
        questions = {query.query_id: query.text for query in reader.queries()}
        rankings = reader.rankings()  # by query id, then rank
        passages = reader.passages(pid for ranking in rankings.values() for pid in ranking.passage_ids)
    rows = [(questions[query_id], pid, passages[pid].title, passages[pid].text)
            for query_id, ranking in rankings.items() if query_id in questions
            for pid in ranking.passage_ids if pid in passages]
    from rageval.types import Passage

    prompts = [build_qa_prompt(question, [Passage(pid, title, text, "")]) for question, pid, title, text in rows]
    return [prompts[i % len(prompts)] for i in range(count)]


def start_servers(count: int) -> tuple[list[subprocess.Popen], list[str]]:
    """``count`` server processes on free loopback ports, and their base URLs (read from their first line)."""
    processes, urls = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(count):
        process = subprocess.Popen([sys.executable, "-m", "rageval", "serve-model", "--model", SERVED,
                                    "--port", "0", "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
        line = process.stderr.readline() if process.stderr else ""
        match = re.search(r"at (http://\S+/v1)", line)
        if not match:
            raise RuntimeError(f"the server did not start: {line!r}")
        processes.append(process)
        urls.append(match.group(1))
    return processes, urls


def cpu_seconds_of(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / CLOCK_TICKS


def measure(urls: list[str], concurrency: int, prompts: list[str], server_pids: list[int], waves: bool) -> dict:
    settings = DecodingSettings(max_new_tokens=16)
    with OpenAIGenerator(urls, SERVED, concurrency=concurrency) as generator:
        generator.generate(prompts[:2 * concurrency], settings)  # connections open, threads started
        wall, cpu, server = time.perf_counter(), time.process_time(), cpu_seconds_of(server_pids)
        if waves:
            for start in range(0, len(prompts), concurrency):
                generator.generate(prompts[start:start + concurrency], settings)
        else:
            generator.generate(prompts, settings)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        server = cpu_seconds_of(server_pids) - server
    return {"labels_s": len(prompts) / wall, "client_ms": 1000 * cpu / len(prompts), "client_cores": cpu / wall,
            "server_ms": 1000 * server / len(prompts)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per configuration")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32")
    parser.add_argument("--endpoints", default="1,2,4")
    args = parser.parse_args()
    concurrencies = [int(x) for x in args.concurrency.split(",")]
    endpoint_counts = [int(x) for x in args.endpoints.split(",")]
    prompts = erag_prompts(args.requests)
    processes, urls = start_servers(max(endpoint_counts))
    pids = [p.pid for p in processes]
    print(f"{args.requests} eRAG prompts (mean {sum(map(len, prompts)) / len(prompts):,.0f} characters) per "
          f"configuration; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'endpoints':>9} {'concurrency':>11} {'labels/s':>9} {'client ms':>10} {'client cores':>12} "
          f"{'server ms':>10} {'in waves/s':>11}")
    results = []
    try:
        for endpoints in endpoint_counts:
            for concurrency in concurrencies:
                one_call = measure(urls[:endpoints], concurrency, prompts, pids[:endpoints], waves=False)
                in_waves = measure(urls[:endpoints], concurrency, prompts, pids[:endpoints], waves=True)
                results.append((endpoints, concurrency, one_call))
                print(f"{endpoints:>9} {concurrency:>11} {one_call['labels_s']:>9.0f} {one_call['client_ms']:>10.2f} "
                      f"{one_call['client_cores']:>12.2f} {one_call['server_ms']:>10.2f} "
                      f"{in_waves['labels_s']:>11.0f}", flush=True)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
    best = max(results, key=lambda r: r[2]["labels_s"])
    client_ms = sorted(r[2]["client_ms"] for r in results)[len(results) // 2]
    print(f"best: {best[2]['labels_s']:.0f} labels/s ({best[0]} endpoints, concurrency {best[1]}); client CPU "
          f"{client_ms:.2f} ms per label (median), so one client process (one core at most, the GIL) tops out near "
          f"{1000 / client_ms:,.0f} labels/s against servers that answer at once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
