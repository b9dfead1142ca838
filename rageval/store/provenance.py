"""Where each piece of a run came from: what the user brought is never rewritten, mixed or dropped.

A run's settings carry ``brought``, written once by whatever made the run from the user's files (an upload,
``rageval import``, ``rageval evaluate``) and copied unchanged by every later job::

    {"by": "uploaded (jsonl: run.jsonl)",   # or "imported from ragas", "rageval evaluate (qrels: q.tsv)"
     "labels": ["gold", "human"],           # label methods whose values are the user's
     "e2e_answers": 8, "e2e_ks": [3, 5],    # the user's end-to-end answers (0: none brought)
     "cutoffs": [1, 3, 5, 10]}              # the measures' cutoffs the user asked for

Jobs read it through :func:`brought`: a brought label method is never recomputed, a run with brought answers gets no
generated answer at any k, and a brought cutoff keeps its measures. Runs written before ``brought`` existed are read
from the settings they do have (:func:`brought` infers it), so an old upload is protected too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rageval.labelmethods import QRELS, is_computed

#: ``settings["e2e_answers"]`` of a run whose answers are the user's: imported from traces, or uploaded.
IMPORTED = "imported"
UPLOADED = "uploaded"


@dataclass(frozen=True)
class Brought:
    """What the user brought to a run (see the module docstring)."""

    by: str = ""
    labels: frozenset[str] = frozenset()
    e2e_answers: int = 0
    e2e_ks: tuple[int, ...] = ()
    cutoffs: tuple[int, ...] = ()

    @property
    def answers(self) -> bool:
        """Whether the run's end-to-end answers are the user's (then no job generates one, at any k)."""
        return self.e2e_answers > 0

    def as_dict(self) -> dict[str, Any]:
        return {"by": self.by, "labels": sorted(self.labels), "e2e_answers": self.e2e_answers,
                "e2e_ks": list(self.e2e_ks), "cutoffs": list(self.cutoffs)}


def record_brought(by: str, *, labels: Iterable[str] = (), e2e_ks: Iterable[int] = (), e2e_answers: int = 0,
                   cutoffs: Iterable[int] = ()) -> dict[str, Any]:
    """The ``brought`` setting of a run made from the user's files (see the module docstring)."""
    return Brought(by, frozenset(labels), int(e2e_answers), tuple(sorted(set(e2e_ks))),
                   tuple(sorted({int(c) for c in cutoffs}))).as_dict()


def brought(settings: Mapping[str, Any]) -> Brought:
    """What the user brought to the run whose settings these are: its ``brought`` setting, or, for a run written
    before it existed, what its settings say (an upload's labels and answers, an import's answers and qrels)."""
    given = settings.get("brought")
    if isinstance(given, Mapping):
        return Brought(str(given.get("by", "")), frozenset(given.get("labels", ())),
                       int(given.get("e2e_answers", 0) or 0), tuple(int(k) for k in given.get("e2e_ks", ())),
                       tuple(int(c) for c in given.get("cutoffs", ())))
    methods = [str(m) for m in settings.get("label_methods", ())]
    e2e_ks = tuple(int(k) for k in settings.get("e2e_ks", ()))
    cutoffs = tuple(int(c) for c in settings.get("cutoffs", ()))
    if settings.get("e2e_answers") == IMPORTED:
        imported = settings.get("imported") or {}
        answers = sum(int(n) for n in (imported.get("answers") or {}).values())
        return Brought(f"imported from {imported.get('format') or settings.get('format', 'traces')}",
                       frozenset(m for m in methods if m == QRELS), answers, e2e_ks, cutoffs)
    if settings.get("source") == "uploaded":
        return Brought(f"uploaded ({settings.get('format', 'file')})",
                       frozenset(m for m in methods if not is_computed(m)), 1 if e2e_ks else 0, e2e_ks, cutoffs)
    return Brought(str(settings.get("source", "")), frozenset(m for m in methods if m == QRELS), 0, (), ())


def answers_are_brought(settings: Mapping[str, Any]) -> bool:
    """Whether the run's end-to-end answers are the user's (imported or uploaded): no job generates any."""
    return brought(settings).answers


def keep_brought(before: Mapping[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``after`` (a job's new settings) with what ``before`` says the user brought carried over unchanged: the
    ``brought`` record (made explicit for a legacy run), ``e2e_answers`` and the cutoffs the user asked for."""
    record = brought(before)
    after = dict(after)
    after["brought"] = record.as_dict()
    if "e2e_answers" in before:
        after["e2e_answers"] = before["e2e_answers"]
    after["cutoffs"] = sorted({*(int(c) for c in after.get("cutoffs", ())), *record.cutoffs})
    return after


def describe_brought(settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(short, full)`` sentences of where a run's pieces came from, for a page's provenance line and its help:
    ``yours: questions, rankings, 8 answers, labels gold`` and the full sentence with the source and the model
    that computed the rest. None for a run the user brought nothing to (a shipped dataset slice)."""
    user = brought(settings)
    if not user.by:
        return None
    pieces = ["questions", "rankings"]
    if user.answers:
        pieces.append(f"{user.e2e_answers:,} answers" if user.e2e_answers > 1 or settings.get("brought") else "answers")
    if user.labels:
        pieces.append("labels " + ", ".join(sorted(user.labels)))
    short = "yours: " + ", ".join(pieces)
    computed = settings.get("model_id")
    full = (f"Brought by you ({user.by}): {', '.join(pieces)}"
            + (f"; measure cutoffs {', '.join(map(str, user.cutoffs))}" if user.cutoffs else "")
            + (f". Computed by {computed}: every other label and answer." if computed else
               ". rageval computed only the measures from them.")
            + " Nothing you brought is rewritten by a job.")
    return short, full
