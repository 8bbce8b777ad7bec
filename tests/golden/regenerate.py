"""Rewrite the golden files from the scenarios: ``python -m tests.golden.regenerate``.

Then read ``git diff tests/golden``: golden files are not self-validating, a human checks them.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.render.markdown import render_comment
from tests.golden.scenarios import SCENARIOS, Scenario

GOLDEN_DIR = Path(__file__).resolve().parent


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"comment_{name}.md"


def render(scenario: Scenario) -> str:
    return render_comment(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          links=scenario.links)


def main() -> None:
    for name, build in SCENARIOS.items():
        path = golden_path(name)
        path.write_text(render(build()), encoding="utf-8", newline="\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
