"""Statistics over per-query scores: rank correlations and bootstrap confidence intervals."""

from rageval.stats.correlation import (
                                      DEFAULT_CONFIDENCE,
                                      DEFAULT_RESAMPLES,
                                      DEFAULT_SEED,
                                      BootstrapResult,
                                      average_ranks,
                                      bootstrap_ci,
                                      bootstrap_rank_correlations,
                                      compute_correlation_table,
                                      kendall_tau_b,
                                      spearman_rho,
)

__all__ = ["DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "BootstrapResult", "average_ranks",
           "bootstrap_ci", "bootstrap_rank_correlations", "compute_correlation_table", "kendall_tau_b",
           "spearman_rho"]
