"""Shared fixtures. ``../shared`` (datasets) is optional: tests that need it skip when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATASETS = SHARED / "datasets"
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.is_dir():
        pytest.skip("../shared/datasets is not present")
    return DATASETS


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
