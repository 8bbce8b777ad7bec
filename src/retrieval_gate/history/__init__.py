"""The history of a suite's baseline: one point per committed version, the paired step between
neighbours, what changed at each step, flaky cases and cases lost for good. Pure (docs/history.md);
the versions are read from git by ``artifacts.git_history``."""
