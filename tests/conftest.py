"""Shared fixtures, and the test tiers. ``../shared`` (datasets) is optional: tests that need it
skip when absent.

Tiers (README, "To work on it"): a test that loads the real model, starts a browser, Docker, npm
tools or builds the wheel is **slow**, added here at collection so test files need no edit:

- ``model``: marked in the module (``pytestmark``) or listed in ``MODEL_MODULES`` (modules that
  run ``eval``/``cases draft``/``init`` on the real model without saying so);
- ``browser``: every test of a module that imports ``tests.browser`` (headless Chromium);
- ``npm``: ``NPM_MODULES`` (the JUnit consumers from tests/consumers); ``wheel``: ``WHEEL_MODULES``;
- ``image``: tests/image (its conftest marks them; opt-in there).

``pytest -m "not slow"`` is the fast loop; ``pytest`` runs every tier.

Parallel runs (pytest-xdist, ``-n auto --dist loadgroup`` in pyproject.toml): each test file is one
group, run whole by one worker (module fixtures, servers and folders a file shares stay in one
process); tests/image is one group (one image build per run, not one per worker).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATASETS = SHARED / "datasets"
EXAMPLES = REPO / "examples"

# Test modules (relative to tests/) that embed with the real bundled model but carry no ``model``
# mark of their own (found by running the unmarked tests with torch and ONNX Runtime unimportable).
MODEL_MODULES = frozenset({
    "integration/test_cases_draft.py",
})
NPM_MODULES = frozenset({"integration/test_junit_consumers.py"})
WHEEL_MODULES = frozenset({"e2e/test_wheel.py"})
SLOW_MARKS = ("model", "browser", "npm", "wheel", "image")


def _uses_browser(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    browser = sys.modules.get("tests.browser")
    return module is not None and browser is not None and any(
        value is browser or getattr(value, "__module__", None) == "tests.browser" for value in vars(module).values())


def pytest_itemcollected(item: pytest.Item) -> None:
    """The tier marks and the xdist group, added as each test is collected (before ``-m`` selects
    and xdist groups)."""
    try:
        rel = Path(str(item.fspath)).relative_to(Path(__file__).parent).as_posix()
    except ValueError:
        return
    item.add_marker(pytest.mark.xdist_group("image" if rel.startswith("image/") else rel))
    if rel in MODEL_MODULES:
        item.add_marker(pytest.mark.model)
    if rel in NPM_MODULES:
        item.add_marker(pytest.mark.npm)
    if rel in WHEEL_MODULES:
        item.add_marker(pytest.mark.wheel)
    if rel.startswith("image/"):
        item.add_marker(pytest.mark.image)  # tests/image/conftest.py marks them too (and decides the opt-in)
    if _uses_browser(item):
        item.add_marker(pytest.mark.browser)
    if any(item.get_closest_marker(mark) is not None for mark in SLOW_MARKS):
        item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.is_dir():
        pytest.skip("../shared/datasets is not present")
    return DATASETS


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
