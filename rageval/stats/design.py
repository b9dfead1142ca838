"""How a human-labelled sample was drawn from a run's items: the sampling design an unbiased estimate needs.

A prediction-powered estimate (Angelopoulos et al., *Prediction-powered inference*, Science 2023; ARES) corrects the
automatic labels of every item with the human labels of a sample. It is unbiased only when the sample's inclusion
probabilities are known: a uniform random sample (one stratum), or a stratified one where stratum ``h`` holds
``population`` items of which ``sampled`` were drawn uniformly at random (weight ``population / sampled``). Labels
gathered any other way (an annotator picking what to label) are a ``convenience`` sample: reported, never used for
an unbiased estimate.

The annotation queues (:mod:`rageval.queues`) and the shared samples (:mod:`rageval.annotations`) describe their
draws with this; :mod:`rageval.trust` reads it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

UNIFORM, STRATIFIED, CONVENIENCE = "uniform", "stratified", "convenience"
PLANS = (UNIFORM, STRATIFIED, CONVENIENCE)


@dataclass(frozen=True)
class Stratum:
    """One stratum of the population: its name, how many items it holds, how many were drawn from it."""

    name: str
    population: int
    sampled: int

    @property
    def weight(self) -> float:
        """Each sampled item stands for this many items of the stratum (1 / inclusion probability)."""
        return self.population / self.sampled if self.sampled else float("nan")


@dataclass(frozen=True)
class SamplingDesign:
    """The plan (:data:`PLANS`), its strata, and the stratum of each sampled item (an item key: for passages
    ``(query_id, passage_id)``, for statements ``(scenario, query_id, answer_id, statement)``). A uniform design has
    one stratum; a convenience design has none and supports no unbiased estimate."""

    plan: str
    strata: tuple[Stratum, ...] = ()
    item_strata: Mapping[Hashable, str] = field(default_factory=dict)
    source: str = ""  # what drew it, e.g. "sample 3 (seed 7)" or "queue 'nq-check'"

    def __post_init__(self) -> None:
        if self.plan not in PLANS:
            raise ValueError(f"unknown sampling plan {self.plan!r}; expected one of {', '.join(PLANS)}")

    @property
    def supports_unbiased_estimate(self) -> bool:
        return self.plan != CONVENIENCE and bool(self.strata)
