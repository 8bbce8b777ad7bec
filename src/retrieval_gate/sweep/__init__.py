"""``retrieval-gate sweep``: many retrieval settings measured on the suite's own cases, with
paired statistics against its current settings (docs/sweep.md)."""
