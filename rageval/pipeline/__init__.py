"""The one evaluation pipeline: questions -> candidates -> labels -> measures -> one run file.

``config.py`` the settings (:class:`~rageval.pipeline.config.EvaluateConfig`, flags and TOML); ``sources.py`` the
user's files or a shipped dataset slice -> a starting run; ``evaluate.py`` ``evaluate_run`` (eRAG, E2E, baselines,
LLM-retEval, measures, correlations); ``run.py`` ``evaluate`` / ``dry_run`` / ``complete_run_file``; ``demo.py``
the shipped demo runs; ``summary.py`` what a run file holds and lacks.
"""
