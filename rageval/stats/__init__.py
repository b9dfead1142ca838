"""Statistics over per-query scores: rank correlations and bootstrap confidence intervals."""

from rageval.stats.correlation import (BootstrapResult, average_ranks, bootstrap_ci, compute_correlation_table,
                                      kendall_tau_b, spearman_rho)

__all__ = ["BootstrapResult", "average_ranks", "bootstrap_ci", "compute_correlation_table", "kendall_tau_b",
           "spearman_rho"]
