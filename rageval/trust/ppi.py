"""Prediction-powered estimates of a mean: a few human labels correct the automatic labels of every item.

The setting (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, *Prediction-powered inference*, Science 2023; used by
ARES, Saad-Falcon et al., NAACL 2024): a population of ``N`` items, each with an automatic value ``f_i`` (a label
method's 0/1 label, or a per-query measure computed from them), and a uniformly random sample of ``n`` of them
with a human value ``y_i``. The target is the mean of ``y`` over the population. Then::

    PPI           theta = mean_N(f) + mean_n(y - f)
    PPI++         theta = lambda * mean_N(f) + mean_n(y - lambda * f)          (Angelopoulos, Duchi and Zrnic,
                                                                               *PPI++*, 2023, arXiv:2311.01453)
    human only    theta = mean_n(y)                                          (lambda = 0: the classical estimate)

    se(theta)^2 = var(lambda * f over N) / N + var(y - lambda * f over n) / n     (variances with divisor N, n)
    95% interval  theta -/+ z_0.975 * se

``mean_n(y - f)`` is the *rectifier*: the automatic labels' bias measured on the human sample. The interval is
valid whatever the automatic labels' quality; good labels make ``var(y - f)`` small and the interval narrow.
``lambda`` (PPI++'s power tuning) minimises the variance: ``lambda = cov_n(y, f) / ((1 + n / N) var(f over the n
sample and N population values))``, clipped to [0, 1], so PPI++ is never wider than either PPI (lambda = 1) or the
human-only interval (lambda = 0) beyond the noise of estimating lambda.

These are the formulas of the ``ppi-python`` package (``ppi_mean_pointestimate``, ``ppi_mean_ci``,
``classical_mean_ci``; the tests check the equality). The ``N`` automatic values are those of every item of the
run, the sampled ones included, as ARES does: the run's items are treated as a draw from the queries the system
will face, so the term ``var(f) / N`` counts; against the run's own finite mean it makes the interval slightly
conservative (no finite-population correction either).

**Stratified samples.** When the population is split into strata ``h`` (``N_h`` items, ``n_h`` sampled uniformly
within each; :class:`rageval.stats.design.SamplingDesign`), the estimate is the population-weighted sum of the
per-stratum estimates and the variances add with squared weights (strata are sampled independently)::

    theta = sum_h (N_h / N) theta_h          se^2 = sum_h (N_h / N)^2 se_h^2

With PPI++ each stratum gets its own lambda (the sum is minimised term by term). A stratum with fewer than 2 human
labels leaves the estimate undefined (NaN, with the reason): its variance cannot be estimated. A stratum whose
labelled sample shows no variance of ``y - lambda * yhat`` (the part its labels estimate) keeps the estimate but
gives no interval, with the reason: its ``se_h`` would be 0 and the interval too narrow (on HotpotQA's crowd
labels such intervals held the true share in 0-5% of draws; docs/results.md, Trust).

Pure numpy functions of arrays; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
#: The three estimators, by the name the report and ``rageval trust --json`` use.
PPI, PPI_PLUS_PLUS, HUMAN_ONLY = "ppi", "ppi_plus_plus", "human_only"
ESTIMATORS = (PPI, PPI_PLUS_PLUS, HUMAN_ONLY)
#: Below this many human labels in a stratum its variance (and so the interval) is not estimated.
MIN_LABELS_PER_STRATUM = 2


@dataclass(frozen=True)
class Estimate:
    """A mean estimated with its 95% (``confidence``) interval: ``n_human`` human labels, ``n_auto`` automatic
    values (0 for the human-only estimate), ``lam`` the power-tuning weight (1 for PPI, 0 for human only; one per
    stratum for a stratified PPI++, ``lam`` is then their population-weighted mean), ``se`` the standard error.
    ``reason`` says why the estimate is undefined (NaN); empty when it is defined."""

    estimate: float
    low: float
    high: float
    se: float
    n_human: int
    n_auto: int
    lam: float
    confidence: float = CONFIDENCE
    reason: str = ""
    clipped: bool = False  # the estimate or an end was outside [0, 1] and set to its edge (bounded)

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def as_dict(self) -> dict:
        """``estimate, low, high, n_human, n_auto`` (what ``rageval trust --json`` prints), with se, lam and the
        reason; NaN as None."""
        def clean(value: float) -> float | None:
            return None if value is None or not math.isfinite(value) else float(value)

        row: dict[str, float | int | str | None] = {
            "estimate": clean(self.estimate), "low": clean(self.low), "high": clean(self.high),
            "n_human": int(self.n_human), "n_auto": int(self.n_auto), "se": clean(self.se), "lam": clean(self.lam)}
        if self.reason:
            row["reason"] = self.reason
        if self.clipped:
            row["clipped"] = True
        return row


#: The one rule for values outside [0, 1] (a share estimated by PPI can be negative or above 1).
BOUNDS_RULE = ("every measure here is a share in [0, 1]: an estimate or interval end outside it is set to the "
               "nearer edge, in the table, the chart and --json alike (marked clipped)")


def bounded(estimate: Estimate) -> Estimate:
    """``estimate`` with its point and interval ends set into [0, 1] (:data:`BOUNDS_RULE`): the true share lies
    there, so the interval keeps its coverage; ``clipped`` says whether anything moved. NaN stays NaN."""
    def clip(value: float) -> float:
        return min(1.0, max(0.0, value)) if math.isfinite(value) else value

    values = (clip(estimate.estimate), clip(estimate.low), clip(estimate.high))
    if values == (estimate.estimate, estimate.low, estimate.high):
        return estimate
    from dataclasses import replace

    return replace(estimate, estimate=values[0], low=values[1], high=values[2], clipped=True)


def undefined(reason: str, n_human: int = 0, n_auto: int = 0) -> Estimate:
    """An estimate that cannot be made, and why."""
    return Estimate(math.nan, math.nan, math.nan, math.nan, n_human, n_auto, math.nan, reason=reason)


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _arrays(y, yhat, yhat_all) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, yhat, yhat_all = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_all))
    if len(y) != len(yhat):
        raise ValueError(f"{len(y)} human labels against {len(yhat)} automatic ones of the same items")
    if not (np.isfinite(y).all() and np.isfinite(yhat).all() and np.isfinite(yhat_all).all()):
        raise ValueError("the human and automatic values must be finite numbers")
    return y, yhat, yhat_all


def power_tuned_lambda(y, yhat, yhat_all) -> float:
    """PPI++'s variance-minimising weight of the automatic values for a mean, clipped to [0, 1]::

        lambda = cov(y, f over the n labelled items) / ((1 + n / N) var(f over the n + N values))

    (covariance with divisor n, variance with divisor n + N - 1, as ppi-python computes them). 0 when the automatic
    values do not vary (they carry no information) or there is no labelled item."""
    y, yhat, yhat_all = _arrays(y, yhat, yhat_all)
    n, big_n = len(y), len(yhat_all)
    if n == 0 or big_n == 0:
        return 0.0
    covariance = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    pooled = np.concatenate([yhat, yhat_all])
    variance = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
    if variance <= 0:
        return 0.0
    return float(np.clip(covariance / ((1 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(y, yhat, yhat_all, lam: float = 1.0, confidence: float = CONFIDENCE, *,
             allow_degenerate: bool = False) -> Estimate:
    """The prediction-powered estimate of the mean of ``y`` over the population (module docstring): ``y`` the
    human values of the sample, ``yhat`` the automatic values of the same items, ``yhat_all`` the automatic values
    of every item of the population. ``lam=1``: PPI; ``lam=0``: the human-only estimate; otherwise PPI++ with that
    weight (:func:`ppi_plus_plus_mean` tunes it).

    When the standard error is 0 (every sampled ``y - lam * yhat`` the same, 30 queries all with a hit, say, and
    no variance from the automatic values) the normal interval would be a point: the estimate is kept, the
    interval is NaN and ``reason`` says why (``allow_degenerate``: keep the zero, as a stratum of a stratified
    estimate does). With a perfect sample agreement PPI's interval is the automatic values' part alone, as
    ppi-python's is."""
    y, yhat, yhat_all = _arrays(y, yhat, yhat_all)
    n, big_n = len(y), len(yhat_all)
    if n < MIN_LABELS_PER_STRATUM:
        return undefined(f"{n} human label{'s' if n != 1 else ''}: at least {MIN_LABELS_PER_STRATUM} are needed "
                         "for an interval", n, big_n)
    if big_n == 0:
        return undefined("no automatic value", n, 0)
    imputed = lam * float(yhat_all.mean())
    rectifier = float(np.mean(y - lam * yhat))
    estimate = imputed + rectifier
    se = math.sqrt(float(np.var(lam * yhat_all)) / big_n + float(np.var(y - lam * yhat)) / n)
    if not allow_degenerate and se == 0:
        what = "human value" if lam == 0 else "difference between the human and the automatic value"
        return Estimate(estimate, math.nan, math.nan, math.nan, n, big_n if lam else 0, float(lam), confidence,
                        f"the {what} is the same on all {n} sampled items (and the automatic values do not vary): "
                        "the normal interval would be a point; label more")
    half = _z(confidence) * se
    return Estimate(estimate, estimate - half, estimate + half, se, n, big_n if lam else 0, float(lam), confidence)


def ppi_plus_plus_mean(y, yhat, yhat_all, confidence: float = CONFIDENCE) -> Estimate:
    """PPI++: :func:`ppi_mean` with the power-tuned ``lam`` (:func:`power_tuned_lambda`)."""
    return ppi_mean(y, yhat, yhat_all, power_tuned_lambda(y, yhat, yhat_all), confidence)


def human_only_mean(y, confidence: float = CONFIDENCE) -> Estimate:
    """The classical estimate from the human sample alone: mean(y) -/+ z * sd(y) / sqrt(n) (sd with divisor n)."""
    y = np.asarray(y, dtype=float).ravel()
    return ppi_mean(y, np.zeros_like(y), np.zeros(1), lam=0.0, confidence=confidence)


@dataclass(frozen=True)
class StratumData:
    """One stratum's values: ``y`` and ``yhat`` of its human-labelled items, ``yhat_all`` of all its items (its
    population size is ``len(yhat_all)`` unless ``population`` says otherwise, as when only its size is known)."""

    name: str
    y: np.ndarray
    yhat: np.ndarray
    yhat_all: np.ndarray
    population: int | None = None

    @property
    def size(self) -> int:
        return len(self.yhat_all) if self.population is None else int(self.population)


def estimate(estimator: str, y, yhat, yhat_all, confidence: float = CONFIDENCE, *,
             allow_degenerate: bool = False) -> Estimate:
    """One of :data:`ESTIMATORS` on a uniform sample."""
    lam = {PPI: 1.0, HUMAN_ONLY: 0.0}.get(estimator)
    if estimator == PPI_PLUS_PLUS:
        lam = power_tuned_lambda(y, yhat, yhat_all)
    if lam is not None:
        if estimator == HUMAN_ONLY:
            y = np.asarray(y, dtype=float).ravel()
            yhat, yhat_all = np.zeros_like(y), np.zeros(1)
        return ppi_mean(y, yhat, yhat_all, lam, confidence, allow_degenerate=allow_degenerate)
    raise ValueError(f"unknown estimator {estimator!r}; expected one of {', '.join(ESTIMATORS)}")


def stratified_estimate(estimator: str, strata: Sequence[StratumData], confidence: float = CONFIDENCE) -> Estimate:
    """One of :data:`ESTIMATORS` on a stratified sample (module docstring): the population-weighted sum of the
    per-stratum estimates, their variances added with squared weights. Empty strata (no item) are left out; a
    stratum with items and fewer than 2 human labels makes the estimate undefined."""
    present = [s for s in strata if s.size > 0]
    total = sum(s.size for s in present)
    n_human = sum(len(s.y) for s in present)
    n_auto = sum(len(s.yhat_all) for s in present) if estimator != HUMAN_ONLY else 0
    if total == 0:
        return undefined("no item in the population", n_human, n_auto)
    thin = [s.name for s in present if len(s.y) < MIN_LABELS_PER_STRATUM]
    if thin:
        return undefined(f"stratum {', '.join(thin)} has fewer than {MIN_LABELS_PER_STRATUM} human labels",
                         n_human, n_auto)
    point, variance, lam = 0.0, 0.0, 0.0
    flat: list[str] = []
    for s in present:
        weight = s.size / total
        part = estimate(estimator, s.y, s.yhat, s.yhat_all if len(s.yhat_all) else np.zeros(1), confidence,
                        allow_degenerate=len(present) > 1)
        point += weight * part.estimate
        variance += weight ** 2 * part.se ** 2
        lam += weight * part.lam
        if float(np.var(np.asarray(s.y, dtype=float) - part.lam * np.asarray(s.yhat, dtype=float))) == 0:
            flat.append(s.name)  # the part estimated from the stratum's labels shows no variance
    if not math.isfinite(variance):  # one stratum: its degenerate interval, and why
        return Estimate(point, math.nan, math.nan, math.nan, n_human, n_auto, lam, confidence, part.reason)
    if flat and len(present) > 1:
        # A stratum whose labelled sample shows no variance (of y - lam * yhat: the part its labels estimate) adds
        # none to the interval, which is then too narrow: on the HotpotQA crowd labels, stratified samples of
        # 15 + 15 with such a stratum held the truth 0-5% of the time (docs/results.md, Trust). The estimate
        # stays and the interval is not given, as for a uniform sample without variance.
        why = ("every stratum's sample shows no variance: the normal interval would be a point" if len(flat) ==
               len(present) else f"the sample of stratum {', '.join(flat)} shows no variance: the normal interval "
               "would leave it out and be too narrow")
        return Estimate(point, math.nan, math.nan, math.nan, n_human, n_auto, lam, confidence, f"{why}; label more")
    se = math.sqrt(variance)
    half = _z(confidence) * se
    return Estimate(point, point - half, point + half, se, n_human, n_auto, lam, confidence)
