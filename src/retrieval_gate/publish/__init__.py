"""GitHub side: the PyGithub adapter, the action's settings and its flows (PR, baseline refresh,
report, comment)."""
