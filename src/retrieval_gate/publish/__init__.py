"""The action: its settings and its flows (PR, baseline refresh, report, comment), written once
against the forge interface (``forge/``: GitHub, GitLab, Azure DevOps)."""
