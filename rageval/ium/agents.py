"""RAG agents for Iterative Utility Maximization (Salemi & Zamani, ICTIR 2025, §3 and §5; SPEC §4; issue 6).

An agent M_i is a dataset (its task), an LLM (its model), the number k of passages it reads and a utility
function f. It gives the search engine two things:

* **feedback** f_{M_i}(d, x) per retrieved passage d: the utility of the agent's answer to x when it reads d alone
  (an eRAG label: Salemi & Zamani, SIGIR 2024), in [0, 1];
* its **downstream score** on a query: the utility of its answer when it reads its top k passages in one prompt.

Every LLM call goes through the given generator (use a cached one: labels are shared with the rest of rageval and a
killed run resumes from the cache). Utilities: ``em`` (SQuAD exact match), ``contains`` (a gold answer occurs in the
output: lenient, for a verbose chat model; the same function as eRAG's ``accuracy``), ``f1`` (SQuAD token F1, graded)
and ``rougeL``: every downstream metric of a run file but BERTScore. Downstream outcomes are binarised for McNemar's
test as ``score >= 0.5``.

An agent built from a run file (:mod:`rageval.ium.run_file_agents`) also knows what the run already holds:
``known_feedback`` (its eRAG labels, per (query, passage)) and ``known_answers`` (its E2E answers, per (query, list
of passage ids)); those are used before any prompt goes to the generator, and ``stored_feedback`` /
``stored_answers`` count them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rageval.generation.base import DecodingSettings
from rageval.text_metrics import answer_accuracy, exact_match, rouge_l, token_f1
from rageval.types import Passage, Query

UTILITIES: dict[str, Callable[[str, Sequence[str]], float]] = {
    "em": exact_match, "contains": answer_accuracy, "f1": token_f1, "accuracy": answer_accuracy, "rougeL": rouge_l}
BASE_DECODING = DecodingSettings()  # eRAG's decoding: the labels of the eRAG runs are cache hits
CHAT_DECODING = DecodingSettings(max_new_tokens=32, stop=("\n",))
CHAT_INSTRUCTION = "Answer the question using the passages. Reply with the short answer only."


@dataclass(frozen=True)
class AgentSpec:
    """Who an agent is: ``task_id`` and ``model_id`` become tokens of the search engine's input."""

    name: str
    dataset: str  # "nq_open" or "hotpotqa"
    task_id: str
    model_id: str
    k: int
    utility: str

    def __post_init__(self) -> None:
        if self.utility not in UTILITIES:
            raise ValueError(f"agent {self.name}: utility {self.utility!r} is not one of {sorted(UTILITIES)}")
        if self.k < 1:
            raise ValueError(f"agent {self.name}: k must be at least 1, got {self.k}")


def chat_user_message(question: str, passages: Sequence[Passage]) -> str:
    """The user turn of the chat prompt: instruction, the passages (title and text), the question."""
    blocks = [CHAT_INSTRUCTION]
    blocks += [f"Passage {n}: {' '.join(p.as_document().split())}" for n, p in enumerate(passages, start=1)]
    blocks.append(f"Question: {' '.join(question.split())}")
    return "\n\n".join(blocks)


class Agent:
    """An :class:`AgentSpec` with its LLM: ``prompt(question, passages)`` builds the prompt the model reads."""

    def __init__(self, spec: AgentSpec, generator, prompt: Callable[[str, Sequence[Passage]], str],
                 decoding: DecodingSettings, known_feedback: Mapping[tuple[str, str], float] | None = None,
                 known_answers: Mapping[tuple[str, tuple[str, ...]], str] | None = None):
        self.spec = spec
        self.generator = generator
        self.prompt = prompt
        self.decoding = decoding
        self.utility = UTILITIES[spec.utility]
        self.known_feedback = known_feedback or {}
        self.known_answers = known_answers or {}
        self.stored_feedback = 0
        self.stored_answers = 0

    @property
    def name(self) -> str:
        return self.spec.name

    def feedback(self, requests: Sequence[tuple[Query, Sequence[Passage]]]) -> list[list[tuple[str, float]]]:
        """Per request, ``(passage id, f(d, x))`` for every passage: the utility of the answer from d alone.

        A label in ``known_feedback`` is used as it is; all other single-passage prompts of all requests go to the
        generator in one call.
        """
        known = self.known_feedback
        prompts = [self.prompt(q.text, [p]) for q, passages in requests for p in passages
                   if (q.query_id, p.passage_id) not in known]
        outputs = iter(self.generator.generate(prompts, self.decoding) if prompts else [])
        labels = []
        for q, passages in requests:
            row = []
            for p in passages:
                stored = known.get((q.query_id, p.passage_id))
                if stored is not None:
                    self.stored_feedback += 1
                    row.append((p.passage_id, float(stored)))
                else:
                    row.append((p.passage_id, float(self.utility(next(outputs), q.answers))))
            labels.append(row)
        return labels

    def answer(self, requests: Sequence[tuple[Query, Sequence[Passage]]]) -> list[tuple[str, float]]:
        """Per request, the agent's output from its passages in one prompt and that output's utility (an answer in
        ``known_answers`` for the same query and passage list is used as it is)."""
        keys = [(q.query_id, tuple(p.passage_id for p in passages)) for q, passages in requests]
        todo = [(q, passages) for (q, passages), key in zip(requests, keys) if key not in self.known_answers]
        generated = iter(self.generator.generate([self.prompt(q.text, passages) for q, passages in todo],
                                                 self.decoding) if todo else [])
        outputs = []
        for key in keys:
            stored = self.known_answers.get(key)
            if stored is not None:
                self.stored_answers += 1
            outputs.append(stored if stored is not None else next(generated))
        return [(output, float(self.utility(output, q.answers))) for output, (q, _) in zip(outputs, requests)]


def build_agents(specs: Sequence[AgentSpec], generators: Mapping[str, object],
                 chat_prompts: Mapping[str, Callable[[str], str]]) -> list[Agent]:
    """Agents for ``specs``: a model with an entry in ``chat_prompts`` (user message -> full chat prompt) is driven
    through its chat template, any other with the few-shot QA prompt of :mod:`rageval.prompts`."""
    from rageval.prompts import build_qa_prompt

    agents = []
    for spec in specs:
        if spec.model_id not in generators:
            raise ValueError(f"agent {spec.name}: no generator for model {spec.model_id!r}")
        generator = generators[spec.model_id]
        if spec.model_id in chat_prompts:
            def chat_prompt(q: str, ps: Sequence[Passage], wrap: Callable[[str], str] = chat_prompts[spec.model_id]
                            ) -> str:
                return wrap(chat_user_message(q, ps))

            agents.append(Agent(spec, generator, chat_prompt, CHAT_DECODING))
        else:
            agents.append(Agent(spec, generator, build_qa_prompt, BASE_DECODING))
    return agents
