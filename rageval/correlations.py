"""Which label method's measure predicts the end-to-end answer: eRAG's Table 1 and Figure 1 on a run's tables.

eRAG (Salemi & Zamani, SIGIR 2024) correlates, across queries, each label method's per-query measure at k with the
score of the answer the LLM gives from the same top k (E2E). Here, on plain tables (``measures``: method, measure,
query_id, value; ``e2e``: query_id, k, score):

- :func:`correlation_table_at_k`: Kendall's tau-b and Spearman's rho with bootstrap intervals (Table 1);
- :func:`best_measures`: each method's best measure at k (ties to the first in :data:`MEASURE_ORDER`);
- :func:`k_sweep` / :func:`k_sweep_from_frames`: each method's best family at the main k, its tau at every k
  (Figure 1);
- :func:`constant_sides`: which side of the correlations at k is constant (the E2E score, or a label method's
  measure), so that an undefined coefficient says why, and the ks where both sides vary;
- :func:`stored_table_is_current` / :func:`current_stored_taus`: whether the correlations ``rageval evaluate``
  stored in a run still describe it (measures added or values changed since make them stale).

The pipeline stores these tables, the findings and the dashboard read them, ``rageval results`` prints them.
Pure: no I/O; pandas is imported where a function needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

#: The order measures are listed in, and the tie-break when two measures correlate equally well.
MEASURE_ORDER = ("P", "R", "AP", "MAP", "RR", "MRR", "nDCG", "Hit", "Rprec")
#: R-precision: the one measure without a cutoff a correlation table at k holds.
RPREC = "Rprec"
#: Columns of a k sweep (:func:`k_sweep`).
SWEEP_COLUMNS = ["method", "family", "measure", "k", "tau", "n"]

Pair = tuple[str, str]  # (label method, measure)


def measure_sort_key(name: str) -> tuple[int, int, str]:
    """Sort key of a measure name: family in :data:`MEASURE_ORDER` (others after), then cutoff, then name."""
    family, _, cutoff = name.partition("@")
    rank = MEASURE_ORDER.index(family) if family in MEASURE_ORDER else len(MEASURE_ORDER)
    return rank, int(cutoff) if cutoff.isdigit() else 0, name


def measure_family(measure: str) -> str:
    """``nDCG@5`` -> ``nDCG``; a measure without a cutoff is its own family."""
    return measure.partition("@")[0]


def in_table_at_k(measure: str, k: int) -> bool:
    """Whether a correlation table at ``k`` has a row for ``measure``: at rank cutoff ``k``, or R-precision."""
    return measure.endswith(f"@{k}") or measure == RPREC


def correlation_table_at_k(measures: pd.DataFrame, e2e: pd.DataFrame, k: int, n_resamples: int = 1000,
                           with_rprec: bool = False) -> pd.DataFrame:
    """Kendall tau-b and Spearman rho (bootstrap CIs) between every (label method, measure@k) and E2E EM@k
    across queries: eRAG's Table 1 at k. ``measures``: method, measure, query_id, value; ``e2e``: query_id, k,
    score. ``with_rprec`` adds R-precision (no cutoff) against the same E2E score."""
    from rageval.stats.correlation import compute_correlation_table

    at_k = e2e[e2e["k"] == k]
    downstream = dict(zip(at_k["query_id"], at_k["score"]))
    wanted = measures["measure"].str.endswith(f"@{k}")
    if with_rprec:
        wanted |= measures["measure"] == RPREC
    table = compute_correlation_table(measures[wanted], downstream, n_resamples=n_resamples)
    table.insert(2, "family", table["measure"].map(measure_family))
    return table


def kendall_taus(measures: pd.DataFrame, downstream: pd.Series) -> pd.DataFrame:
    """Kendall's tau-b point estimate (no bootstrap) of every (method, measure) of ``measures`` against
    ``downstream`` (query id -> E2E score) over the queries both have: method, measure, n, tau, sorted by
    (method, measure); a pair without such a query has no row."""
    import pandas as pd

    from rageval.stats.correlation import kendall_tau_b

    shared = measures[measures["query_id"].isin(downstream.index)]
    rows = [{"method": method, "measure": measure, "n": len(group),
             "tau": kendall_tau_b(group["value"].to_numpy(float), downstream.loc[group["query_id"]].to_numpy(float))}
            for (method, measure), group in shared.groupby(["method", "measure"], sort=True)]
    return pd.DataFrame(rows, columns=["method", "measure", "n", "tau"])


def _best_row(rows: pd.DataFrame) -> pd.Series:
    """The row with the highest ``tau``; ties go to the measure first in :data:`MEASURE_ORDER`."""
    return rows.loc[min(rows.index, key=lambda i: (-rows.at[i, "tau"], measure_sort_key(rows.at[i, "measure"])))]


def best_measures(correlations: pd.DataFrame, cutoff: int) -> pd.DataFrame:
    """Per label method, the measure at ``cutoff`` with the highest Kendall's tau in ``correlations`` (ties go
    to the first in :data:`MEASURE_ORDER`), best method first. Measures without a cutoff (R-precision) and
    undefined taus are left out, so a method whose every tau is undefined is absent."""
    import pandas as pd

    at_k = correlations[correlations["measure"].str.endswith(f"@{cutoff}")].dropna(subset=["tau"])
    best = [_best_row(group) for _, group in at_k.groupby("method", sort=True)]
    frame = pd.DataFrame(best, columns=correlations.columns)
    return frame.sort_values("tau", ascending=False, kind="stable").reset_index(drop=True)


def k_sweep(best: pd.DataFrame, ks: Iterable[int], measured: Collection[Pair],
            taus_at: Callable[[int, list[Pair]], Mapping[Pair, tuple[float, int]]]) -> pd.DataFrame:
    """eRAG's Figure 1: the tau of each label method's best measure family (``best``: a :func:`best_measures`
    table at the main k) at every k of ``ks``. At each k the pairs (method, ``family@k``) the run measures
    (``measured``) are asked of ``taus_at(k, pairs)`` -> pair -> (tau, n); a pair it does not answer has no row.
    Returns :data:`SWEEP_COLUMNS`, one row per (method, k), by method then k."""
    import pandas as pd

    families = sorted(zip(best["method"], best["measure"].map(measure_family)))
    rows = []
    for k in ks:
        pairs = [(method, f"{family}@{k}") for method, family in families if (method, f"{family}@{k}") in measured]
        taus = taus_at(k, pairs)
        rows += [{"method": method, "family": measure_family(measure), "measure": measure, "k": int(k),
                  "tau": float(taus[method, measure][0]), "n": int(taus[method, measure][1])}
                 for method, measure in pairs if (method, measure) in taus]
    sweep = pd.DataFrame(rows, columns=SWEEP_COLUMNS)
    return sweep.sort_values(["method", "k"], kind="stable").reset_index(drop=True)


def k_sweep_from_frames(measures: pd.DataFrame, e2e: pd.DataFrame, main_k: int | None) -> pd.DataFrame:
    """:func:`k_sweep` of a run's tables: for each label method, the measure family whose Kendall's tau with the
    E2E score is highest at ``main_k`` (ties: first in :data:`MEASURE_ORDER`), then its tau at every k of the
    E2E scores (``family@k`` against the E2E score at that k; point estimates, no bootstrap).

    ``measures``: method, measure, query_id, value; ``e2e``: query_id, k, score. Returns one row per
    (method, k): method, family, measure, k, tau, n (none when ``main_k`` is None: a run without E2E outputs).
    """
    import pandas as pd

    if main_k is None:
        return pd.DataFrame(columns=SWEEP_COLUMNS)

    def downstream(k: int) -> pd.Series:
        return e2e[e2e["k"] == k].set_index("query_id")["score"]

    at_main = measures[measures["measure"].str.endswith(f"@{main_k}")]
    best = best_measures(kendall_taus(at_main, downstream(main_k)), main_k)

    def taus_at(k: int, pairs: list[Pair]) -> dict[Pair, tuple[float, int]]:
        chosen = set(pairs)
        wanted = measures[[pair in chosen for pair in zip(measures["method"], measures["measure"])]]
        taus = kendall_taus(wanted, downstream(k))
        return {(m, x): (tau, n) for m, x, tau, n in zip(taus["method"], taus["measure"], taus["tau"], taus["n"])}

    return k_sweep(best, sorted(e2e["k"].unique()), set(zip(measures["method"], measures["measure"])), taus_at)


def _stored_counts(stored: pd.DataFrame) -> dict[Pair, int]:
    return {(m, x): int(n) for m, x, n in zip(stored["method"], stored["measure"], stored["n"])}


def stored_table_is_current(stored: pd.DataFrame, scored: Mapping[Pair, int]) -> bool:
    """Whether a run's stored correlation table at k (:meth:`rageval.store.RunReader.correlations`) still describes
    the run: it has a row for every (label method, measure at k or R-precision) the run measures now and no other,
    each over as many queries as now have a finite value and a finite E2E score at k (``scored``). Not when the
    run stores none (written before the table existed, or by a writer that computes none) or measures were added
    or changed since (a re-scoring job): then the table is computed again."""
    return not stored.empty and dict(scored) == _stored_counts(stored)


def current_stored_taus(stored: pd.DataFrame, scored: Mapping[Pair, int]) -> dict[Pair, tuple[float, int]]:
    """(method, measure) -> (tau, n) of the rows of a stored correlation table at k that still hold: those over
    as many queries as ``scored`` counts now (:func:`stored_table_is_current`, pair by pair)."""
    counts = _stored_counts(stored)
    return {(m, x): (float(tau), counts[m, x]) for m, x, tau in zip(stored["method"], stored["measure"], stored["tau"])
            if (m, x) in scored and scored[m, x] == counts[m, x]}



@dataclass(frozen=True)
class ConstantSides:
    """Which side of the correlations at ``k`` is constant over the ``n`` queries with a finite E2E score at k.

    ``e2e_value``: the E2E score every one of them has (None when it varies: then no correlation at k is undefined
    because of the answer); ``constant_measures``: (method, measure, value) of each measure at cutoff k that is the
    same for every one of those queries it has (its correlation is undefined because of the labels);
    ``varying_ks``: the ks where the E2E score varies and at least one measure at cutoff k varies over the same
    queries, so that some correlation is defined there."""

    k: int
    n: int
    e2e_value: float | None
    constant_measures: tuple[tuple[str, str, float], ...]
    varying_ks: tuple[int, ...]

    @property
    def e2e_constant(self) -> bool:
        return self.e2e_value is not None

    def nearest_varying_k(self) -> int | None:
        """The k of :attr:`varying_ks` nearest to ``k`` (the smaller of two as near), other than ``k``; None
        without one."""
        others = [k for k in self.varying_ks if k != self.k]
        return min(others, key=lambda k: (abs(k - self.k), k)) if others else None

    def constant_value(self, method: str, measure: str) -> float | None:
        """The one value of ``method``'s ``measure`` at k when it is constant, else None."""
        return next((v for m, x, v in self.constant_measures if (m, x) == (method, measure)), None)


def _constant_measures(measures: pd.DataFrame, scored: Collection[str], k: int) -> tuple[tuple[str, str, float], ...]:
    """(method, measure, value) of each measure at cutoff ``k`` of ``measures`` that has one value over the queries
    of ``scored`` it has (finite values only)."""
    import numpy as np

    at_k = measures[measures["measure"].str.endswith(f"@{k}") & measures["query_id"].isin(scored)]
    at_k = at_k[np.isfinite(at_k["value"].to_numpy(float))]
    spread = at_k.groupby(["method", "measure"], sort=True)["value"].agg(["min", "max"])
    return tuple((str(m), str(x), float(low)) for (m, x), low, high in zip(spread.index, spread["min"], spread["max"])
                 if low == high)


def _varies(measures: pd.DataFrame, scored: Collection[str], k: int) -> bool:
    """Whether some measure at cutoff ``k`` takes two values over the queries of ``scored``."""
    import numpy as np

    at_k = measures[measures["measure"].str.endswith(f"@{k}") & measures["query_id"].isin(scored)]
    at_k = at_k[np.isfinite(at_k["value"].to_numpy(float))]
    return bool((at_k.groupby(["method", "measure"])["value"].nunique() > 1).any())


def constant_sides_from_spread(spreads: Mapping[int, pd.DataFrame], e2e: pd.DataFrame, k: int) -> ConstantSides:
    """:func:`constant_sides` from each measure's smallest and largest finite value at its cutoff over the queries
    with a finite E2E score there (``spreads``: k -> method, measure, low, high, as
    :func:`rageval.store.aggregates.read_scored_spread` reads it), so that a big run's measures are not read whole;
    ``e2e``: query_id, k, score. The same answer as :func:`constant_sides` on the values."""
    import numpy as np
    import pandas as pd

    finite = e2e[np.isfinite(e2e["score"].to_numpy(float))]
    scores = {int(at): group.drop_duplicates("query_id") for at, group in finite.groupby("k", sort=True)}
    empty = pd.DataFrame(columns=["method", "measure", "low", "high"])

    def varies(at: int) -> bool:
        spread = spreads.get(at, empty)
        return bool((spread["low"].to_numpy(float) < spread["high"].to_numpy(float)).any())

    varying = tuple(at for at, group in scores.items() if group["score"].nunique() > 1 and varies(at))
    at_k = scores.get(int(k))
    n = 0 if at_k is None else len(at_k)
    value = float(at_k["score"].iloc[0]) if n and at_k is not None and at_k["score"].nunique() == 1 else None
    spread = spreads.get(int(k), empty).sort_values(["method", "measure"]) if at_k is not None else empty
    constant = tuple((str(m), str(x), float(low)) for m, x, low, high in
                     zip(spread["method"], spread["measure"], spread["low"], spread["high"]) if low == high)
    return ConstantSides(int(k), n, value, constant, varying)


def constant_sides(measures: pd.DataFrame, e2e: pd.DataFrame, k: int) -> ConstantSides:
    """Which side of the correlations at ``k`` is constant, and at which ks both sides vary (:class:`ConstantSides`).

    A correlation across queries is undefined when either side has one value: the E2E score at k (say an exact
    match of 0 for all 5 queries) or a label method's measure at cutoff k (say P@10 = 0.2 for all). ``measures``:
    method, measure, query_id, value (the measures at the cutoffs of interest, or all); ``e2e``: query_id, k, score.
    Non-finite values are left out, as the correlations leave them out."""
    import numpy as np

    finite = e2e[np.isfinite(e2e["score"].to_numpy(float))]
    scores = {int(at): group.drop_duplicates("query_id") for at, group in finite.groupby("k", sort=True)}

    def scored(at: int) -> set[str]:
        return set(scores[at]["query_id"]) if at in scores else set()

    varying = tuple(at for at, group in scores.items()
                    if group["score"].nunique() > 1 and _varies(measures, scored(at), at))
    at_k = scores.get(int(k))
    n = 0 if at_k is None else len(at_k)
    value = float(at_k["score"].iloc[0]) if n and at_k is not None and at_k["score"].nunique() == 1 else None
    return ConstantSides(int(k), n, value, _constant_measures(measures, scored(int(k)), int(k)), varying)
