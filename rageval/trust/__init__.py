"""How far the automatic labels can be trusted: human labels that correct them (PPI, PPI++), calibration."""
