"""The few-shot QA prompt: layout for 0, 1 and many passages, and a content hash that tracks the text."""

from __future__ import annotations

import dataclasses

from rageval.prompts import QA_FEW_SHOT, FewShotExample, build_qa_prompt
from rageval.types import Passage

EIFFEL = Passage("p1", "Eiffel Tower", "The Eiffel Tower is in Paris.\nIt opened in 1889.")
LOUVRE = Passage("p2", "Louvre", "The Louvre is the world's most-visited museum.")


def test_prompt_with_one_passage_ends_with_that_passage_and_the_question():
    prompt = build_qa_prompt("where is the eiffel tower", [EIFFEL])
    final_block = prompt.rsplit("\n\n", 1)[-1]
    # The passage's internal newline is collapsed: a newline is the answer's stop string.
    assert final_block == (
        "Title: Eiffel Tower\n"
        "Passage: The Eiffel Tower is in Paris. It opened in 1889.\n"
        "Question: where is the eiffel tower\n"
        "Answer:"
    )
    assert prompt.startswith(QA_FEW_SHOT.instruction + "\n\n")


def test_few_shot_examples_come_first_each_with_its_answer():
    prompt = build_qa_prompt("q", [EIFFEL])
    blocks = prompt.split("\n\n")
    # instruction + one block per example + the final block
    assert len(blocks) == 1 + len(QA_FEW_SHOT.examples) + 1
    assert 2 <= len(QA_FEW_SHOT.examples) <= 3
    for block, ex in zip(blocks[1:], QA_FEW_SHOT.examples):
        assert block == f"Title: {ex.title}\nPassage: {ex.passage}\nQuestion: {ex.question}\nAnswer: {ex.answer}"


def test_zero_and_many_passages():
    closed_book = build_qa_prompt("who wrote hamlet", [])
    assert closed_book.rsplit("\n\n", 1)[-1] == "Question: who wrote hamlet\nAnswer:"
    many = build_qa_prompt("q", [EIFFEL, LOUVRE]).rsplit("\n\n", 1)[-1].splitlines()
    assert [line.split(":")[0] for line in many] == ["Title", "Passage", "Title", "Passage", "Question", "Answer"]
    assert many[2] == "Title: Louvre"  # passages keep the given order


def test_every_few_shot_answer_occurs_in_its_passage():
    for ex in QA_FEW_SHOT.examples:
        assert ex.answer in ex.passage
        assert "\n" not in ex.answer


def test_content_hash_identifies_the_template():
    same = dataclasses.replace(QA_FEW_SHOT)
    assert same.content_hash == QA_FEW_SHOT.content_hash
    reworded = dataclasses.replace(QA_FEW_SHOT, instruction=QA_FEW_SHOT.instruction + " ")
    fewer = dataclasses.replace(QA_FEW_SHOT, examples=QA_FEW_SHOT.examples[:2])
    changed_answer = dataclasses.replace(
        QA_FEW_SHOT, examples=(dataclasses.replace(QA_FEW_SHOT.examples[0], answer="Kibo"),) + QA_FEW_SHOT.examples[1:]
    )
    hashes = {t.content_hash for t in (QA_FEW_SHOT, reworded, fewer, changed_answer)}
    assert len(hashes) == 4
    assert QA_FEW_SHOT.identifier == f"qa-fewshot@{QA_FEW_SHOT.version}#{QA_FEW_SHOT.content_hash}"


def test_custom_template_is_used():
    template = dataclasses.replace(
        QA_FEW_SHOT, instruction="Reply briefly.", examples=(FewShotExample("T", "P.", "q?", "a"),)
    )
    assert build_qa_prompt("x", [], template) == (
        "Reply briefly.\n\nTitle: T\nPassage: P.\nQuestion: q?\nAnswer: a\n\nQuestion: x\nAnswer:")
