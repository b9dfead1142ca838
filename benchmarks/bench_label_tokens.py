"""Tokens per eRAG label: what one label costs a serving fleet, measured on the shipped data.

    python benchmarks/bench_label_tokens.py                  # the shipped NQ run, Gemma-3-270M's tokenizer
    python benchmarks/bench_label_tokens.py --run RUN --tokenizer FOLDER

For every (question, passage) pair the shipped run labelled with eRAG (300 NQ-open questions x BM25 top 10), the
prompt rageval sends (the default few-shot QA prompt, one passage: ``rageval.prompts.build_qa_prompt``) is counted
with the model's tokenizer as the server counts it (with the BOS token), and the stored answer (``doc_outputs``,
the answer after the stop string) likewise. The stop string "\\n" is applied by rageval, not sent to the server
(``openai_backend.server_stop_strings``), so a served model decodes up to ``max_tokens`` (16) unless it ends
sooner: the completion tokens a server bills lie between the answer's tokens + 1 and 16.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.prompts import build_qa_prompt
from rageval.store import read_run
from rageval.types import Passage

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    from rageval.generation.gemma import converted_model_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, default=ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite")
    parser.add_argument("--tokenizer", type=Path, help="a Hugging Face model folder (default: the converted Gemma)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or converted_model_dir(), local_files_only=True)
    run = read_run(args.run)
    questions = {query.query_id: query.text for query in run.queries}
    passages = {passage.passage_id: passage for passage in run.passages}
    rows = [(questions[o.query_id], o.passage_id, passages[o.passage_id].title, passages[o.passage_id].text, o.output)
            for o in run.doc_outputs if o.query_id in questions and o.passage_id in passages]
    prompts = [build_qa_prompt(question, [Passage(pid, title, text, "")]) for question, pid, title, text, _ in rows]
    prompt_tokens = [len(ids) for ids in tokenizer(prompts, add_special_tokens=True)["input_ids"]]
    answer_tokens = [len(ids) for ids in tokenizer([r[4] for r in rows], add_special_tokens=False)["input_ids"]]
    mean_prompt, mean_answer = statistics.mean(prompt_tokens), statistics.mean(answer_tokens)
    print(f"{len(rows):,} eRAG labels of {args.run.name}, tokenizer {tokenizer.name_or_path}")
    print(f"prompt tokens: mean {mean_prompt:.0f}, median {statistics.median(prompt_tokens):.0f}, "
          f"p95 {percentile(prompt_tokens, 0.95)}, max {max(prompt_tokens)}; "
          f"characters per token {sum(map(len, prompts)) / sum(prompt_tokens):.2f}")
    print(f"answer tokens: mean {mean_answer:.1f}, p95 {percentile(answer_tokens, 0.95)}")
    print(f"per label: prompt + completion = {mean_prompt:.0f} + {mean_answer + 1:.1f} (stopping at the newline) "
          f"to {mean_prompt:.0f} + {args.max_new_tokens} (decoding to max_tokens) = "
          f"{mean_prompt + mean_answer + 1:.0f} to {mean_prompt + args.max_new_tokens:.0f} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
