"""The layout cannot drift back: read every module's imports with ``ast`` and check the rules of
docs/ARCHITECTURE.md — no package imports another that imports it back, the functional core
(metrics, score, compare, audit) imports nothing of the shell, only one module reads the environment,
and no module is longer than 400 lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import retrieval_gate

PACKAGE = Path(retrieval_gate.__file__).parent
CORE = ("metrics", "score", "compare", "audit")
# What the core may import from the package: itself, and the leaf modules of plain data.
CORE_MAY_IMPORT = frozenset({*CORE, "errors", "models", "filters", ""})
# Standard-library and third-party modules that mean I/O, environment, network or presentation.
SHELL_LIBRARIES = frozenset({
    "os", "sys", "pathlib", "io", "shutil", "tempfile", "subprocess", "socket", "sqlite3", "fcntl",
    "urllib", "http", "requests", "yaml", "github", "chromadb", "torch", "sentence_transformers",
    "jinja2", "markupsafe", "rich", "typer", "click",
})
ENVIRONMENT_READERS = frozenset({"environment.py"})
MAX_LINES = 400


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, relative path: "compare/gate.py"
    target: str  # dotted name imported: "retrieval_gate.metrics.names", "numpy"
    line: int


def modules(root: Path = PACKAGE) -> dict[str, ast.Module]:
    return {p.relative_to(root).as_posix(): ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
            for p in sorted(root.rglob("*.py"))}


def imports_of(rel: str, tree: ast.Module) -> Iterator[Import]:
    """Every import in the module, at any depth (lazy imports inside functions count too)."""
    package = rel.removesuffix(".py").split("/")[:-1]  # the folder: relative imports start there
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(rel, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(["retrieval_gate", *base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield Import(rel, target, node.lineno)


def unit_of(rel: str) -> str:
    """The package or top-level module a file belongs to: ``compare/gate.py`` → ``compare``,
    ``models.py`` → ``models``, ``__init__.py`` → ``""`` (the package root)."""
    first = rel.split("/")[0]
    return "" if first == "__init__.py" else first.removesuffix(".py")


def internal_unit(target: str) -> str | None:
    """``retrieval_gate.compare.gate`` → ``compare``; ``retrieval_gate`` → ``""``; else None."""
    if target == "retrieval_gate":
        return ""
    if target.startswith("retrieval_gate."):
        return target.split(".")[1]
    return None


def unit_graph(trees: Mapping[str, ast.Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        source = unit_of(rel)
        graph.setdefault(source, set())
        for imp in imports_of(rel, tree):
            target = internal_unit(imp.target)
            if target is not None and target not in (source, ""):
                graph[source].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


@pytest.fixture(scope="module")
def trees() -> dict[str, ast.Module]:
    return modules()


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_the_import_reader_sees_relative_and_lazy_imports() -> None:
    tree = ast.parse("from . import x\nfrom ..metrics import names\ndef f():\n    import chromadb\n")
    targets = [i.target for i in imports_of("compare/gate.py", tree)]
    assert targets == ["retrieval_gate.compare", "retrieval_gate.metrics", "chromadb"]


def test_no_package_imports_one_that_imports_it_back(trees) -> None:
    assert cycles(unit_graph(trees)) == []


@pytest.mark.parametrize("unit", CORE)
def test_the_core_imports_nothing_of_the_shell(trees, unit: str) -> None:
    wrong = []
    for rel, tree in trees.items():
        if unit_of(rel) != unit:
            continue
        for imp in imports_of(rel, tree):
            internal = internal_unit(imp.target)
            top = imp.target.split(".")[0]
            if (internal is not None and internal not in CORE_MAY_IMPORT) or top in SHELL_LIBRARIES:
                wrong.append(f"{rel}:{imp.line}: imports {imp.target}")
    assert wrong == []


def test_only_one_module_reads_the_environment(trees) -> None:
    readers = set()
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                    isinstance(node.value, ast.Name) and node.value.id == "os":
                readers.add(rel)
    assert readers <= ENVIRONMENT_READERS


def test_each_shared_name_has_one_definition(trees) -> None:
    """The headline measures and the names of the two special slices are written once."""
    places: dict[str, list[str]] = {"headline measures": [], "'overall'": [], "'no-answer'": []}
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts] == \
                    ["hit", "recall", "ndcg"]:
                places["headline measures"].append(rel)
            elif isinstance(node, ast.Constant) and node.value in ("overall", "no-answer"):
                places[repr(node.value)].append(rel)
    assert places == {"headline measures": ["metrics/headline.py"], "'overall'": ["score/scoring.py"],
                      "'no-answer'": ["score/scoring.py"]}


def test_no_module_is_over_400_lines() -> None:
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
