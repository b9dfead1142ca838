"""Write a slice of the shipped HotpotQA dev questions as a BEIR folder (and a TREC run of their own candidate
lists), for trying ``rageval evaluate`` on data laid out as a public benchmark, not as a shipped demo run.

    python scripts/export_hotpotqa_beir.py --first 31 --last 400 --out /tmp/hotpotqa-beir

Writes ``corpus.jsonl`` (``_id``, ``title``, ``text``: every candidate paragraph of the slice's questions, ids
``<question id>:<context id>``), ``queries.jsonl`` (``_id``, ``text``, ``metadata.answers``), ``qrels/dev.tsv``
(the 2 supporting paragraphs of each question, BEIR's header) and ``candidates.trec`` (each question's own ~10
paragraphs in file order, scores descending). Questions are numbered from 1 in file order. HotpotQA: CC BY-SA 4.0
(data/README.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rageval.data import HOTPOTQA_FILE, read_hotpotqa
from rageval.paths import DATA_DIR


def export(first: int, last: int, out: Path) -> dict[str, int]:
    records = read_hotpotqa(DATA_DIR / HOTPOTQA_FILE)[first - 1:last]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels, run = [], [], ["query-id\tcorpus-id\tscore"], []
    for record in records:
        queries.append({"_id": record.question_id, "text": record.question,
                        "metadata": {"answers": list(record.answers)}})
        for rank, context in enumerate(record.contexts, start=1):
            passage_id = f"{record.question_id}:{context.context_id}"
            corpus.append({"_id": passage_id, "title": context.title, "text": context.text})
            run.append(f"{record.question_id} Q0 {passage_id} {rank} {len(record.contexts) - rank + 1} given")
            if context.is_supporting:
                qrels.append(f"{record.question_id}\t{passage_id}\t1")
    (out / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in corpus), encoding="utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries), encoding="utf-8")
    (out / "qrels" / "dev.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (out / "candidates.trec").write_text("\n".join(run) + "\n", encoding="utf-8")
    return {"queries": len(queries), "passages": len(corpus), "qrels": len(qrels) - 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--first", type=int, default=31, help="first question (1-based, file order)")
    parser.add_argument("--last", type=int, default=400, help="last question (inclusive)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(export(args.first, args.last, args.out))


if __name__ == "__main__":
    main()
