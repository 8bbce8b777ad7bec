"""The comparison of a run with its baseline: rows with paired deltas, the gate, what changed and
why, and retrievers side by side. Pure."""
