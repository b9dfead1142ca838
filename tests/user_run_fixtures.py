"""A small dataset no other code has seen (6 questions with answers and gold passages, 15 passages, a TREC run of
the user's own retriever), written as the files a user has, and turned into runs the way a user would: the upload
(TREC form: run + queries JSONL + passages JSONL, nothing computed) and ``rageval evaluate`` (everything computed,
here with the fake generator of ``rageval.generation.base``)."""

from __future__ import annotations

import json
from pathlib import Path

from rageval.generation.base import FakeGenerator

PASSAGES = {
    "p01": ("Ada Lovelace", "Ada Lovelace wrote the first published computer program in 1843."),
    "p02": ("Analytical Engine", "Charles Babbage designed the Analytical Engine, a mechanical computer."),
    "p03": ("Loire", "Loire is the longest river in France, flowing to the Atlantic at Saint-Nazaire."),
    "p04": ("Seine", "The Seine flows through Paris to the English Channel."),
    "p05": ("Kilimanjaro", "Kilimanjaro is the highest mountain in Africa, a dormant volcano in Tanzania."),
    "p06": ("Tanzania", "Tanzania is a country in East Africa with its capital at Dodoma."),
    "p07": ("Canberra", "Canberra is the capital city of Australia."),
    "p08": ("Sydney", "Sydney is the largest city of Australia, known for its opera house."),
    "p09": ("Helium", "Helium is the second element of the periodic table, a noble gas."),
    "p10": ("Hydrogen", "Hydrogen is the lightest element and the first of the periodic table."),
    "p11": ("Tokyo Tower", "The Tokyo Tower was finished in 1958 and is painted orange and white."),
    "p12": ("Mercury", "Mercury is the planet closest to the Sun."),
    "p13": ("Venus", "Venus is the hottest planet of the solar system."),
    "p14": ("Basalt", "Basalt is a volcanic rock that cools quickly from lava."),
    "p15": ("Granite", "Granite forms slowly from magma deep below the surface."),
}
#: id, question, answers, gold passages, the user's retriever's candidates (best first)
QUESTIONS = [
    ("t1", "who wrote the first computer program", ["Ada Lovelace"], ["p01"], ["p02", "p01", "p10"]),
    ("t2", "what is the longest river in france", ["Loire"], ["p03"], ["p04", "p03", "p14"]),
    ("t3", "what is the highest mountain in africa", ["Kilimanjaro"], ["p05"], ["p05", "p06", "p13"]),
    ("t4", "what is the capital of australia", ["Canberra"], ["p07"], ["p08", "p07", "p11"]),
    ("t5", "which element is the lightest", ["Hydrogen"], ["p10"], ["p09", "p10", "p12"]),
    ("t6", "which planet is the hottest", ["Venus"], ["p13"], ["p12", "p15", "p13"]),
]
DEPTH = 3


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_user_files(folder: Path) -> dict[str, Path]:
    """The dataset as the user has it: ``questions.jsonl`` (query_id, text, answers, gold_passage_ids),
    ``passages.jsonl`` (passage_id, title, text) and ``system.trec`` (descending scores)."""
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "system.trec"
    run.write_text("".join(f"{q} Q0 {p} {rank} {10 - rank}.5 my-retriever\n" for q, _, _, _, ranked in QUESTIONS
                           for rank, p in enumerate(ranked, start=1)))
    return {
        "queries": _jsonl(folder / "questions.jsonl", [
            {"query_id": q, "text": t, "answers": a, "gold_passage_ids": g} for q, t, a, g, _ in QUESTIONS]),
        "passages": _jsonl(folder / "passages.jsonl", [
            {"passage_id": p, "title": t, "text": x} for p, (t, x) in PASSAGES.items()]),
        "run": run,
    }


def fast_flags(**more) -> dict:
    """``rageval evaluate`` flags that keep the pipeline quick on a CPU: no BERTScore labels, no cosine judge
    (both load MiniLM), 2 semi-gold samples."""
    return {"label_metrics": "em,f1", "judges": "llm,em,token_f1", "semi_gold_samples": 2, "max_new_tokens": 4,
            **more}


def build_evaluated_run(folder: Path, out: Path, cache: Path, **flags) -> Path:
    """``rageval evaluate`` on the dataset (the fake generator: the first capitalised span of the first passage),
    every method at k = 1, 3, into ``out``."""
    from rageval.pipeline import run as pipeline
    from rageval.pipeline.config import build_config

    files = write_user_files(folder)
    config = build_config({}, {"queries": str(files["queries"]), "corpus": str(files["passages"]),
                               "run": str(files["run"]), "k": "1,3", "methods": "all", "dataset": "tiny-user",
                               "out": str(out), "cache": str(cache), **fast_flags(**flags)})
    return pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None)


def build_uploaded_run(folder: Path, runs: Path, name: str = "mine") -> Path:
    """The dataset uploaded as the Upload page and ``rageval upload`` do (TREC form, no qrels: the gold passages
    come with the questions), saved as ``<runs>/<name>.sqlite``: rankings, queries, passages and nothing
    computed."""
    from rageval.upload.convert import convert_upload
    from rageval.upload.problems import UploadFile
    from rageval.upload.save import save_upload

    files = write_user_files(folder)
    result = convert_upload("trec", {"run": UploadFile.from_path(files["run"]), "qrels": None,
                                     "queries": UploadFile.from_path(files["queries"]),
                                     "passages": UploadFile.from_path(files["passages"])}, dataset="tiny-user")
    assert result.ok, result.problems
    return save_upload(result.run, runs, name)
