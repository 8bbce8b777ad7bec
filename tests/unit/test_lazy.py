"""The one home of lazy loading: nothing is imported or made before its first use, and then it
is the real thing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from retrieval_gate.lazy import LazyModule, LazyObject, lazy_exports


@pytest.fixture
def heavy(tmp_path: Path, monkeypatch) -> str:
    (tmp_path / "rg_heavy_mod.py").write_text("VALUE = 42\ndef twice(x):\n    return 2 * x\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rg_heavy_mod", raising=False)
    return "rg_heavy_mod"


def test_a_lazy_module_is_imported_on_first_attribute_access(heavy: str) -> None:
    module = LazyModule(heavy)
    assert heavy not in sys.modules
    assert module.twice(4) == 8 and module.VALUE == 42
    assert module.real is sys.modules[heavy]


def test_a_lazy_object_is_made_once_on_first_use() -> None:
    made: list[int] = []
    lazy = LazyObject(lambda: made.append(1) or {"a": 1})
    assert made == []
    assert lazy.get("a") == 1 and lazy.keys() == {"a"}
    assert made == [1]
    with pytest.raises(AttributeError):
        _ = lazy._private  # private names are the proxy's own, never forwarded


def test_lazy_exports_import_a_names_module_when_it_is_asked_for(heavy: str) -> None:
    getattr_ = lazy_exports("pkg", {"twice": heavy})
    assert heavy not in sys.modules
    assert getattr_("twice")(5) == 10
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'other'"):
        getattr_("other")
