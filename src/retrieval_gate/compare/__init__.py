"""Baseline and comparison: versioned baseline files, paired deltas with uncertainty, the gate."""
