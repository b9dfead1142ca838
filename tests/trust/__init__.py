"""Tests of rageval.trust: PPI against ppi-python, coverage, calibration against sklearn, imports, the report."""
