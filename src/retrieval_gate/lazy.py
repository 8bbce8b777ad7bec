"""The one home of lazy loading. Start-up stays light (``--help`` and ``validate`` import no
numpy, rich or click: ``tests/integration/test_import_boundaries.py``) because what is heavy is
loaded on first use, in one of three ways, all defined here:

- ``LazyModule("click")``: a module, imported on first attribute access;
- ``LazyObject(factory)``: an object (a rich console), made on first attribute access;
- ``lazy_exports(package, {name: module})``: a package's ``__getattr__`` that imports the module
  of a name when the name is first asked for.

Any other import that start-up must not pay for is inside the function that needs it: a heavy
package, or a module that imports one, or — in a module ``--help`` loads — a module ``--help``
does not load (docs/ARCHITECTURE.md, "Imports at the module's top")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


class LazyObject:
    """``factory()``'s object, made on first attribute access; every attribute is the real one's."""

    def __init__(self, factory: Callable[[], Any]):
        self._factory = factory
        self._real: Any = None

    @property
    def real(self) -> Any:
        if self._real is None:
            self._real = self._factory()
        return self._real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real, name)


class LazyModule(LazyObject):
    """The module ``name``, imported on first attribute access."""

    def __init__(self, name: str):
        super().__init__(lambda: import_module(name))


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: ``exports`` maps each name to the module
    that defines it, imported when the name is first asked for."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
