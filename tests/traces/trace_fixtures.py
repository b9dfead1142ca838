"""Hand-made :class:`~rageval.traces.records.TraceRecord` lists for the importer, stage and export tests, each
written so that the fate of every passage is known before anything runs.

The passages start with their answer entity, as the fake generator (``first_capitalised_span``) answers with the
first capitalised span of the prompt's first passage: a passage that starts with the gold answer gets eRAG label 1,
any other 0.
"""

from __future__ import annotations

from rageval.traces.records import RERANKED, RETRIEVED, TraceDocument, TraceRecord

PARIS = "Paris is the capital and largest city of France."
LYON = "Lyon is the third-largest city of France."
BERLIN = "Berlin is the capital of Germany."
HAMBURG = "Hamburg is a port city in Germany."
ROME = "Rome is the capital of Italy."
MILAN = "Milan is a city in northern Italy."


def doc(position: int, content: str | None, document_id: str = "", score: float | None = None) -> TraceDocument:
    return TraceDocument(document_id=document_id, content=content, position=position, score=score)


def two_stage_records() -> list[TraceRecord]:
    """Three questions, each with a first-stage list of three and a reranked list of two (the system answered
    from the reranked list: k = 2). Where each helpful passage (the one starting with the gold answer) ends up:

    - q-france: PARIS is first-stage rank 3, reranked to rank 1: in the top k, and the answer uses it;
    - q-germany: BERLIN is first-stage rank 2, reranked out (not in the reranked two);
    - q-italy: ROME is in no list at all (the qrels name it: never retrieved).
    """
    return [
        TraceRecord("q-france", "What is the capital of France?",
                    {RETRIEVED: [doc(0, LYON, score=3.0), doc(1, MILAN, score=2.0), doc(2, PARIS, score=1.0)],
                     RERANKED: [doc(0, PARIS, score=0.9), doc(1, LYON, score=0.2)]},
                    answer="Paris", gold_answers=("Paris",),
                    span_ids={RETRIEVED: "span-ret-1", RERANKED: "span-rr-1"}, source="traces.jsonl, line 1"),
        TraceRecord("q-germany", "What is the capital of Germany?",
                    {RETRIEVED: [doc(0, HAMBURG, score=5.0), doc(1, BERLIN, score=4.0), doc(2, MILAN, score=3.0)],
                     RERANKED: [doc(0, HAMBURG, score=0.8), doc(1, MILAN, score=0.1)]},
                    answer="Hamburg", gold_answers=("Berlin",),
                    span_ids={RETRIEVED: "span-ret-2", RERANKED: "span-rr-2"}, source="traces.jsonl, line 2"),
        TraceRecord("q-italy", "What is the capital of Italy?",
                    {RETRIEVED: [doc(0, MILAN, score=2.0), doc(1, LYON, score=1.0), doc(2, HAMBURG, score=0.5)],
                     RERANKED: [doc(0, MILAN, score=0.7), doc(1, LYON, score=0.6)]},
                    answer="Milan", gold_answers=("Rome",),
                    span_ids={RETRIEVED: "span-ret-3", RERANKED: "span-rr-3"}, source="traces.jsonl, line 3"),
    ]


def ragas_like_records() -> list[TraceRecord]:
    """What the RAGAS reader gives for EvaluationDataset rows (``user_input``, ``retrieved_contexts`` without ids,
    ``response``, ``reference``): one stage, no ids, no scores, no span ids. Questions no shipped dataset has; the
    responses are deliberately not what the fake generator would say (it answers with the first capitalised
    span of the first passage), so a regenerated answer would differ."""
    return [
        TraceRecord("ragas-0", "Which city is the capital of France?",
                    {RETRIEVED: [doc(0, PARIS), doc(1, LYON)]}, answer="It is Paris, of course.",
                    gold_answers=("Paris",), source="ragas.jsonl, line 1"),
        TraceRecord("ragas-1", "Which city is the capital of Germany?",
                    {RETRIEVED: [doc(0, HAMBURG), doc(1, BERLIN)]}, answer="Berlin, I believe.",
                    gold_answers=("Berlin",), source="ragas.jsonl, line 2"),
        TraceRecord("ragas-2", "Which city is the capital of Italy?",
                    {RETRIEVED: [doc(0, ROME), doc(1, MILAN)]}, answer="Rome",
                    gold_answers=("Rome",), source="ragas.jsonl, line 3"),
    ]
