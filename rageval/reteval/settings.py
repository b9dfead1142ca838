"""The settings of one LLM-retEval run, stored with it: the ks judged, how the semi-gold answers are drawn,
which judges run and their thresholds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rageval.reteval.judges import JUDGE_NAMES
from rageval.reteval.semi_gold import SemiGoldSettings


@dataclass(frozen=True)
class RetEvalSettings:
    ks: tuple[int, ...] = (1, 5, 10)
    semi_gold: SemiGoldSettings = SemiGoldSettings()
    judges: tuple[str, ...] = JUDGE_NAMES
    f1_threshold: float = 0.5
    cosine_threshold: float = 0.8

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
