"""The layout cannot drift back: read every module's imports with ``ast`` and check the rules of
docs/ARCHITECTURE.md — every import points down the layers the doc draws (so no package imports
another that imports it back), the functional core (metrics, stats, score, baseline, compare, audit)
imports nothing of the shell, ``load/`` reads user inputs only, only one module reads the
environment and only the entry points ask it, each part's settings model lives with the part and no
part imports the config module, each rule and shared name is defined once, the tool's own files are
read and written in ``artifacts/``, a metric is wired where the doc says, tests patch no library,
the orchestrators take their adapters as arguments, no module is longer than 400 lines, every
function has a caller, an import sits inside a function only when start-up must not pay for it, and
a call to another module's function passes every argument after the first by name."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import retrieval_gate

PACKAGE = Path(retrieval_gate.__file__).parent
CORE = ("metrics", "stats", "score", "baseline", "compare", "audit")
# What the core may import from the package: itself, and the leaf modules of plain data.
CORE_MAY_IMPORT = frozenset({*CORE, "errors", "models", "filters", "lazy", "bounds", "defaults", ""})
# Standard-library and third-party modules that mean I/O, environment, network or presentation.
SHELL_LIBRARIES = frozenset({
    "os", "sys", "pathlib", "io", "shutil", "tempfile", "subprocess", "socket", "sqlite3", "fcntl",
    "urllib", "http", "requests", "yaml", "github", "chromadb", "torch", "sentence_transformers",
    "jinja2", "markupsafe", "rich", "typer", "click",
})
ENVIRONMENT_READERS = frozenset({"environment.py"})
# The modules that may ask ``environment.py`` for the environment: the entry points (the commands
# in cli/, and the action's settings), which hand what they read to the parts as settings.
ENTRY_POINTS = ("cli/", "publish/action_settings.py")
MAX_LINES = 400
# docs/ARCHITECTURE.md's layers, bottom first. A unit imports only units of lower layers.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    ("errors", "models", "filters", "clock", "environment", "release_pin", "lazy", "bounds", "defaults"),  # leaves
    ("files", "overrides"),  # atomic writes and hashes; the one override model of the suite's settings
    ("metrics", "stats", "load", "chunk", "embed", "scaffold"),
    ("score", "store"),
    ("baseline",),
    ("compare", "retrieve"),
    ("audit",),
    ("render", "settings", "artifacts"),
    ("evaluation",),
    ("publish", "sweep"),
    ("cli",),
    ("__main__",),
))


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


def layer_of(unit: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if unit in layer), None)


def test_every_unit_has_a_layer(trees) -> None:
    assert sorted(u for u in unit_graph(trees) if u and layer_of(u) is None) == []


def upward_imports(trees: Mapping[str, ast.Module]) -> list[str]:
    wrong = []
    for rel, tree in trees.items():
        source = unit_of(rel)
        for imp in imports_of(rel, tree):
            target = internal_unit(imp.target)
            if target is None or target in ("", source) or source == "":
                continue
            if not (layer_of(target) or 0) < (layer_of(source) or 0):
                wrong.append(f"{rel}:{imp.line}: {source} imports {imp.target} (not below it)")
    return wrong


def test_the_layer_check_sees_an_import_up_or_sideways() -> None:
    trees = {"metrics/hit.py": ast.parse("def f():\n    from retrieval_gate.cli import app\n"),
             "load/kb.py": ast.parse("from retrieval_gate.chunk import chunking\n"),
             "score/x.py": ast.parse("from retrieval_gate.metrics import names\n")}
    assert upward_imports(trees) == ["metrics/hit.py:2: metrics imports retrieval_gate.cli (not below it)",
                                     "load/kb.py:1: load imports retrieval_gate.chunk (not below it)"]


def test_every_import_points_down_the_layers(trees) -> None:
    """The stronger form of "no cycles": the order docs/ARCHITECTURE.md draws is the imports' order."""
    assert upward_imports(trees) == []


# An import inside a function is there for start-up's sake; everything else is at the module's top
# (docs/ARCHITECTURE.md, "Imports"). Heavy: tests/integration/test_import_boundaries.py's HEAVY, and what
# imports one of them or costs as much: datasketch (numpy, scipy), gitlab (requests), onnx (numpy), sklearn (scipy),
# huggingface_hub (its snapshot_download loads ~400 modules, ~0.2 s).
HEAVY_PACKAGES = frozenset({"torch", "sentence_transformers", "chromadb", "scipy", "numpy", "rich", "jinja2", "github",
                            "requests", "bm25s", "onnxruntime", "transformers", "datasketch", "gitlab", "onnx",
                            "sklearn", "huggingface_hub"})
# What ``retrieval-gate --help`` loads (it imports every command's module), listed by a fresh interpreter.
STARTUP_PROBE = ("import sys\nfrom retrieval_gate.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n"
                 "    pass\nprint(' '.join(sorted(sys.modules)))")


def module_name(rel: str) -> str:
    """``compare/gate.py`` → ``retrieval_gate.compare.gate``; ``audit/__init__.py`` → ``retrieval_gate.audit``."""
    parts = rel.removesuffix(".py").split("/")
    return ".".join(["retrieval_gate", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def lazy_exports_of(trees: Mapping[str, ast.Module]) -> dict[str, dict[str, str]]:
    """Per package, the names its ``lazy.lazy_exports`` ``__getattr__`` loads and their modules."""
    found = {}
    for rel, tree in trees.items():
        assigned = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_exports":
                table = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords
                                                                     if k.arg == "exports")
                found[module_name(rel)] = ast.literal_eval(assigned[table.id] if isinstance(table, ast.Name) else table)
    return found


def modules_loaded(rel: str, node: ast.Import | ast.ImportFrom, *, known: set[str],
                   exports: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The modules an import statement loads: the one named and its parent packages, and each imported
    name that is a submodule (``from retrieval_gate.audit import run``) or a lazy export of it."""
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    else:
        if node.level:
            package = rel.removesuffix(".py").split("/")[:-1]
            base = ".".join(["retrieval_gate", *package[: len(package) - node.level + 1]])
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        named = [source]
        for alias in node.names:
            if f"{source}.{alias.name}" in known:
                named.append(f"{source}.{alias.name}")
            elif alias.name in exports.get(source, {}):
                named.append(exports[source][alias.name])
    parts = [name.split(".") for name in named]
    return {".".join(p[:i]) for p in parts for i in range(1, len(p) + 1)}


def top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: outside functions and ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            stack.extend(node.orelse)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def imports_in_functions(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import inside a function, and whether an ``except ImportError`` guards it (an optional package)."""
    def visit(node: ast.AST, in_function: bool, guarded: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom) and in_function:
            yield node, guarded
        catches = isinstance(node, ast.Try) and any(
            handler.type is not None and {"ImportError", "ModuleNotFoundError"} & {
                n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} for handler in node.handlers)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef),
                             guarded or (catches and child in node.body))
    yield from visit(tree, False, False)


def needless_inner_imports(trees: Mapping[str, ast.Module], *, startup: frozenset[str]) -> list[str]:
    """``module:line: import`` for each import inside a function that could be at the module's top: it
    names no heavy package nor a module of ours that imports one at its top (transitively), no
    package that may be absent (guarded by ``except ImportError``), and it would not make
    ``--help`` load more (its module is not loaded by ``--help``, or what it names is)."""
    known = {module_name(rel) for rel in trees}
    exports = lazy_exports_of(trees)
    loads = {module_name(rel): set().union(*(modules_loaded(rel, node, known=known, exports=exports)
                                             for node in top_level_imports(tree)))
             for rel, tree in trees.items()}
    heavy = {name for name, loaded in loads.items() if any(n.split(".")[0] in HEAVY_PACKAGES for n in loaded)}
    while grown := {name for name, loaded in loads.items() if name not in heavy and loaded & heavy}:
        heavy |= grown
    found = []
    for rel, tree in trees.items():
        for node, guarded in imports_in_functions(tree):
            loaded = modules_loaded(rel, node, known=known, exports=exports)
            if guarded or loaded & heavy or any(name.split(".")[0] in HEAVY_PACKAGES for name in loaded):
                continue
            if module_name(rel) in startup and not loaded <= startup:
                continue
            found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


def test_the_inner_import_finder_sees_an_import_that_belongs_at_the_top() -> None:
    trees = {rel: ast.parse(source) for rel, source in {
        "files.py": "import os\n",
        "store/__init__.py": "",
        "store/chroma.py": "import numpy\n",
        "store/base.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import numpy\n",
        "audit/__init__.py": "from retrieval_gate.lazy import lazy_exports\n"
                             "_EXPORTS = {'run_audit': 'retrieval_gate.audit.run'}\n"
                             "__getattr__ = lazy_exports('retrieval_gate.audit', _EXPORTS)\n",
        "audit/run.py": "from ..store import chroma\n",
        "cli/__init__.py": "",
        "cli/eval.py": "def f():\n    from retrieval_gate.files import x\n    import json\n",
        "cli/score.py": "def f():\n    from retrieval_gate.cli.eval import P\n    from retrieval_gate import files\n",
        "sweep/run.py": "class C:\n    def f(self):\n        import json\n"
                        "        try:\n            import extra\n        except ImportError:\n            pass\n"
                        "        from retrieval_gate.audit import run_audit\n"
                        "        from retrieval_gate.audit import other\n"
                        "        from retrieval_gate.store import base\n",
    }.items()}
    startup = frozenset({"retrieval_gate", "retrieval_gate.cli", "retrieval_gate.cli.eval", "retrieval_gate.cli.score",
                         "json"})
    assert needless_inner_imports(trees, startup=startup) == [
        "cli/eval.py:3: import json",
        "cli/score.py:2: from retrieval_gate.cli.eval import P",
        "sweep/run.py:10: from retrieval_gate.store import base",
        "sweep/run.py:3: import json",
        "sweep/run.py:9: from retrieval_gate.audit import other",
    ]


@pytest.fixture(scope="module")
def startup_modules() -> frozenset[str]:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run([sys.executable, "-c", STARTUP_PROBE], env=env, capture_output=True, text=True, check=True,
                          timeout=300)
    return frozenset(done.stdout.strip().splitlines()[-1].split())


def test_imports_inside_functions_are_heavy_optional_or_kept_from_start_up(trees, startup_modules) -> None:
    """lazy.py's rule: an import goes inside a function only when start-up must not pay for it."""
    assert "retrieval_gate.cli.eval" in startup_modules and "numpy" not in startup_modules
    assert needless_inner_imports(trees, startup=startup_modules) == []


def test_load_reads_user_inputs_only(trees) -> None:
    """``load/`` knows no results, baselines or audits: the tool's own files are read by
    ``artifacts/``, beside the models they are written from."""
    wrong = [f"{rel}:{imp.line}: imports {imp.target}" for rel, tree in trees.items() if unit_of(rel) == "load"
             for imp in imports_of(rel, tree) if internal_unit(imp.target) in (*CORE, "settings", "artifacts")]
    assert wrong == []


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


def test_only_the_entry_points_ask_for_the_environment(trees) -> None:
    """No module but the entry points calls ``read_environment`` or imports ``environment`` at all."""
    askers = {rel for rel, tree in trees.items() for node in ast.walk(tree)
              if isinstance(node, ast.Name | ast.Attribute)
              and (node.id if isinstance(node, ast.Name) else node.attr) == "read_environment"
              and rel != "environment.py"}
    importers = {rel for rel, tree in trees.items() for imp in imports_of(rel, tree)
                 if imp.target == "retrieval_gate.environment"}
    assert importers and sorted(a for a in askers | importers if not a.startswith(ENTRY_POINTS)) == []


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


def test_a_metric_is_wired_where_the_doc_says() -> None:
    """docs/ARCHITECTURE.md, "Where to add a metric": a function in ``metrics/<name>.py``, its
    name in ``metrics/names.py`` (MEASURES, DISPLAY), the function in ``metrics/__init__.py``'s
    FUNCTIONS, its column in ``metrics/grid.py``. A measure missing from one of them fails here."""
    from retrieval_gate.metrics import FUNCTIONS, grid, names

    assert set(FUNCTIONS) == set(names.MEASURES) == set(names.DISPLAY) == set(grid._ROW_ORDER)
    for name, function in FUNCTIONS.items():
        module = function.__module__
        assert module.startswith("retrieval_gate.metrics.") and module.count(".") == 2, (name, module)
        assert function.__doc__, f"{module}.{function.__name__}: the formula belongs in the docstring"


# Library attributes a test may set: a library's own switch, not a function replaced.
LIBRARY_SETTINGS_A_TEST_MAY_SET = frozenset({("huggingface_hub.constants", "HF_HUB_OFFLINE")})


def patched_libraries(tree: ast.Module) -> list[tuple[str, str, int]]:
    """``monkeypatch.setattr(obj, "name", …)`` where ``obj`` is a module the test imported from
    outside the project (the standard library or a third party): ``(module, name, line)``."""
    outside: dict[str, str] = {}  # local name → the module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith(("retrieval_gate", "tests")):
                    local = alias.asname or alias.name.split(".")[0]  # import a.b binds a; import a.b as c binds a.b
                    outside[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                not node.module.startswith(("retrieval_gate", "tests")):
            for alias in node.names:
                outside[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            target = ast.unparse(node.args[0])
            root = target.split(".")[0]
            if root in outside:
                module = ".".join([outside[root], *target.split(".")[1:]])
                found.append((module, node.args[1].value, node.lineno))
    return sorted(found)


def test_the_library_patch_finder_sees_a_patched_function() -> None:
    tree = ast.parse("import os\nfrom retrieval_gate import files\ndef test(monkeypatch):\n"
                     "    monkeypatch.setattr(os, 'replace', None)\n    monkeypatch.setattr(files, 'X', 1)\n")
    assert patched_libraries(tree) == [("os", "replace", 4)]


def test_no_test_patches_a_library() -> None:
    """"Tests hand in fakes of our interfaces or real adapters against local fakes, never patched
    libraries": a failing disk is a real one (a file-size limit), a slow server a real server."""
    tests = Path(__file__).resolve().parents[1]
    found = [f"{p.relative_to(tests).as_posix()}:{line}: sets {module}.{name}"
             for p in sorted(tests.rglob("*.py"))
             for module, name, line in patched_libraries(ast.parse(p.read_text(encoding="utf-8")))
             if (module, name) not in LIBRARY_SETTINGS_A_TEST_MAY_SET]
    assert found == []


# Each rule or shared constant, and the one module that defines it (docs/ARCHITECTURE.md, "One
# home per rule"). Others import it.
ONE_HOME = {
    "BAD_STATUSES": "compare/model.py",
    "BatchSize": "embed/settings.py",  # the batch-size rule: the suite's key and the embedder's model use it
    "CORRECTIONS": "stats/multiplicity.py",
    "Correction": "stats/multiplicity.py",
    "DEFAULT_BASELINE_DIR": "settings.py",
    "MAX_BATCH_SIZE": "bounds.py",
    "MAX_OVERFETCH": "bounds.py",
    "MIN_CHUNK_SIZE": "bounds.py",
    "CACHE_FILE": "embed/__init__.py",
    "DEFAULT_HISTORY_LIMIT": "defaults.py",
    "DEFAULT_RESAMPLES": "defaults.py",
    "FLAT_KEYS": "retrieve/settings.py",
    "MISSING_FROM_RUN": "models.py",
    "MODES": "publish/modes.py",
    "PRIVILEGED_MODES": "publish/modes.py",
    "REDACTED": "publish/untrusted.py",
    "WRITE_MODES": "publish/modes.py",
}


def rule_homes(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
    """Where each rule is written: assignments of the ``ONE_HOME`` names, functions named ``mde``
    and classes named ``Mode``, the mode names and the missing-case error as literal strings, calls
    that parse YAML, reads of the token's input variable, uses of the ``REDACTED`` mark, and lazy
    proxies (a ``__getattr__`` that loads on first use)."""
    places: dict[str, list[str]] = {name: [] for name in ONE_HOME}
    places.update({"def mde": [], "class Mode": [], "mode names": [], "'missing from the run'": [],
                   "YAML parsing": [], "INPUT_GITHUB_TOKEN": [], "REDACTED used": [], "lazy proxies": [],
                   "def shown": [], "def suite_name_problem": [], "workflow commands": [],
                   "def headline_k_problem": [], "def suite_baseline_path": [], "override models": [],
                   "overlap < size": [], "headline_k in k": []})
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            places_hit = [t.id for t in targets if isinstance(t, ast.Name) and t.id in ONE_HOME]
            places_hit += ["def mde"] if isinstance(node, ast.FunctionDef) and node.name == "mde" else []
            places_hit += ["class Mode"] if isinstance(node, ast.ClassDef) and node.name == "Mode" else []
            places_hit += ["lazy proxies"] if isinstance(node, ast.FunctionDef) and node.name == "__getattr__" else []
            places_hit += [f"def {node.name}"] if isinstance(node, ast.FunctionDef) \
                and node.name in ("shown", "suite_name_problem", "headline_k_problem", "suite_baseline_path") else []
            # a typed override of the suite's settings (flags, action inputs, sweep points): one model
            places_hit += ["override models"] if isinstance(node, ast.ClassDef) and node.name.endswith("Overrides") \
                else []
            if isinstance(node, ast.Constant):
                places_hit += ["mode names"] if node.value in ("pr", "update-baseline", "write-baseline") else []
                places_hit += ["'missing from the run'"] if node.value == "missing from the run" else []
                places_hit += ["INPUT_GITHUB_TOKEN"] if node.value == "INPUT_GITHUB_TOKEN" else []
                if isinstance(node.value, str):  # cross-field rules, each stated (and so checked) once
                    places_hit += ["overlap < size"] if "must be smaller than chunk size" in node.value else []
                    places_hit += ["headline_k in k"] if "is not one of the cutoffs" in node.value else []
                # a workflow command (``::error …``) is built in one place: the runner's writer
                places_hit += ["workflow commands"] if isinstance(node.value, str) and node.value.startswith("::") \
                    else []
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml" \
                    and node.attr in ("load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all"):
                places_hit.append("YAML parsing")
            if isinstance(node, ast.Name) and node.id == "REDACTED" and isinstance(node.ctx, ast.Load):
                places_hit.append("REDACTED used")
            for name in places_hit:
                if rel not in places[name]:
                    places[name].append(rel)
    return places


def test_each_rule_has_one_definition(trees) -> None:
    assert rule_homes(trees) == {
        **{name: [home] for name, home in ONE_HOME.items()},
        "def mde": ["stats/power.py"],
        "class Mode": ["publish/modes.py"],
        "mode names": ["publish/modes.py"],
        "'missing from the run'": ["models.py"],
        "YAML parsing": ["load/yamltext.py"],
        "INPUT_GITHUB_TOKEN": ["publish/action_settings.py"],
        "REDACTED used": ["publish/untrusted.py"],  # the one scrubber, scrub_text
        "lazy proxies": ["lazy.py"],  # LazyObject / LazyModule / lazy_exports
        "def shown": ["render/escape.py"],  # the one escaper of text for a terminal or a CI log
        "def suite_name_problem": ["settings.py"],  # init and the action take the same suite names
        "workflow commands": ["publish/runner.py"],
        "def headline_k_problem": ["metrics/names.py"],  # the suite, the action's base settings, compare
        "def suite_baseline_path": ["settings.py"],  # compare, report and the action find it alike
        "override models": ["overrides.py"],  # flags, action inputs, sweep points
        "overlap < size": ["chunk/chunking.py"],  # ChunkSettings, when the config is read
        "headline_k in k": ["metrics/names.py"],
    }


# The text forms of the tool's own files (the core's codecs, the models' validation) and their
# callers: only the file's reader and writer in artifacts/ (the action commits ``*_text`` through the API).
TEXT_FORMS = ("parse_baseline", "dumps_baseline", "parse_manifest", "dumps_manifest")
VALIDATED_FILES = ("Results", "Comparison", "AuditReport", "Baseline")


def text_form_callers(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """``{name: [module, ...]}``: who calls a file's codec or validates a file's model from data."""
    found: dict[str, list[str]] = {}
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = None
            if isinstance(func, ast.Name) and func.id in TEXT_FORMS:
                name = func.id
            elif (isinstance(func, ast.Attribute) and func.attr == "model_validate"
                  and isinstance(func.value, ast.Name) and func.value.id in VALIDATED_FILES):
                name = f"{func.value.id}.model_validate"
            if name is not None and rel not in found.setdefault(name, []):
                found[name].append(rel)
    return found


def test_the_tools_files_are_read_and_written_in_artifacts(trees) -> None:
    """One reader and one writer per file the tool writes and reads back, in ``artifacts/``, used by
    the CLI and the action alike; the codecs live in the core (``baseline/``) beside the models."""
    callers = text_form_callers(trees)
    assert callers == {
        "parse_baseline": ["artifacts/baseline.py"],
        "dumps_baseline": ["artifacts/baseline.py"],
        "parse_manifest": ["artifacts/baseline.py"],
        "dumps_manifest": ["artifacts/baseline.py"],
        "Results.model_validate": ["artifacts/results.py"],
        "Comparison.model_validate": ["artifacts/results.py"],
        "AuditReport.model_validate": ["artifacts/results.py"],
        "Baseline.model_validate": ["baseline/codec.py"],  # the codec, after its migrations
    }


def test_the_text_form_finder_sees_a_codec_called_outside_artifacts() -> None:
    trees = {"publish/x.py": ast.parse("from retrieval_gate.baseline.codec import parse_baseline\n"
                                       "parse_baseline('{}', source='s')\nResults.model_validate({})\n")}
    assert text_form_callers(trees) == {"parse_baseline": ["publish/x.py"], "Results.model_validate": ["publish/x.py"]}


def test_the_rule_counter_counts_a_second_home() -> None:
    trees = {"a.py": ast.parse("BAD_STATUSES = ()\ndef mde(): pass\nimport yaml\nyaml.safe_load('x')\n"),
             "b.py": ast.parse("BAD_STATUSES: tuple = ()\nx = 'write-baseline'\n")}
    homes = rule_homes(trees)
    assert homes["BAD_STATUSES"] == ["a.py", "b.py"] and homes["def mde"] == ["a.py"]
    assert homes["YAML parsing"] == ["a.py"] and homes["mode names"] == ["b.py"]
    more = rule_homes({"c.py": ast.parse("def shown(t): pass\nline = f'::error file={x}::{y}'\n")})
    assert more["def shown"] == ["c.py"] and more["workflow commands"] == ["c.py"]
    rules = rule_homes({"d.py": ast.parse("class GateOverrides: pass\nMIN_CHUNK_SIZE = 1\n"
                                          "m = f'headline_k {h} is not one of the cutoffs k {k}'\n")})
    assert rules["override models"] == ["d.py"] and rules["MIN_CHUNK_SIZE"] == ["d.py"]
    assert rules["headline_k in k"] == ["d.py"] and rules["overlap < size"] == []


# Decorators that do not register a function with a framework: a function under them is called by name.
PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "cache", "lru_cache", "cached_property",
                              "contextmanager"})
# Called from outside the package's source by name: the console script (pyproject.toml's
# ``[project.scripts]``).
CALLED_FROM_OUTSIDE = frozenset({"cli/__init__.py:main"})


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def uncalled_functions(trees: Mapping[str, ast.Module], templates: str = "") -> list[str]:
    """``module:function`` (or ``module:Class.method``) for each function nothing in the package names:
    no call, no reference (a callback, a dict of handlers, ``__all__`` or a lazy export's string) and no
    use in a template. Dunder methods and functions a decorator registers (CLI commands, pydantic
    validators) are called by their framework and are left out."""
    used: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                used.update(word for word in node.value.replace(",", " ").split() if word.isidentifier())
    used.update(word for word in templates.replace(".", " ").replace("(", " ").replace("|", " ").split())
    found = []
    for rel, tree in sorted(trees.items()):
        owners: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
        owners += [(f"{node.name}.", node.body) for node in tree.body if isinstance(node, ast.ClassDef)]
        for prefix, body in owners:
            for node in body:
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("__"):
                    continue
                if any(_decorator_name(d) not in PLAIN_DECORATORS for d in node.decorator_list):
                    continue
                name = f"{rel}:{prefix}{node.name}"
                if node.name not in used and name not in CALLED_FROM_OUTSIDE:
                    found.append(name)
    return sorted(found)


def test_the_caller_finder_sees_a_function_nothing_calls() -> None:
    trees = {"a.py": ast.parse("def used(): pass\ndef unused(): pass\nclass C:\n    def m(self): pass\n"
                               "    @property\n    def p(self): pass\n"),
             "b.py": ast.parse("from a import used\nused()\n@app.command()\ndef registered(): pass\n")}
    assert uncalled_functions(trees) == ["a.py:C.m", "a.py:C.p", "a.py:unused"]
    assert uncalled_functions(trees, templates="{{ c.m() }} {{ c.p }}") == ["a.py:unused"]


def test_every_function_has_a_caller_in_the_package(trees) -> None:
    """Code nothing calls is deleted, or — a reference the tests check against — lives in tests/reference.py."""
    templates = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE / "templates").rglob("*.j2"))
    assert uncalled_functions(trees, templates) == []


P_NAMES = frozenset({"p", "p_value", "p_adjusted", "p_one_sided", "p_family", "p_raw"})


def p_value_formats(trees: Mapping[str, ast.Module]) -> list[str]:
    """``module`` for each f-string that formats a p-value itself (a name or attribute called ``p``,
    ``p_value``, ``p_adjusted``, … with a format spec) — instead of calling ``compare.gate.format_p``."""
    found = []
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                value = node.value
                name = value.attr if isinstance(value, ast.Attribute) else \
                    value.id if isinstance(value, ast.Name) else ""
                if name in P_NAMES and rel not in found:
                    found.append(rel)
    return sorted(found)


def test_the_p_value_finder_sees_a_formatted_p_value() -> None:
    tree = ast.parse("a = f'p = {cell.p_value:.3g}'\nb = f'{p:.3f}'\nc = f'{n:.3f} {p}'\n")
    assert p_value_formats({"a.py": tree}) == ["a.py"]
    assert p_value_formats({"b.py": ast.parse("c = f'{n:.3f} {p}'\n")}) == []


def test_p_value_text_has_one_home(trees) -> None:
    assert p_value_formats(trees) == ["compare/gate.py"]  # format_p


def error_reporting(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
    """Where the process's exit code is picked (``sys.exit``) and where an internal error is
    reported (``report_internal_error`` called)."""
    places: dict[str, list[str]] = {"sys.exit": [], "report_internal_error": []}
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "exit" and isinstance(func.value, ast.Name) \
                    and func.value.id == "sys":
                key = "sys.exit"
            elif isinstance(func, ast.Name) and func.id == "report_internal_error":
                key = "report_internal_error"
            else:
                continue
            if rel not in places[key]:
                places[key].append(rel)
    return places


def test_the_error_reporting_finder_sees_an_exit_and_a_report() -> None:
    tree = ast.parse("import sys\nsys.exit(2)\nraise typer.Exit(report_internal_error(exc))\n")
    assert error_reporting({"a.py": tree}) == {"sys.exit": ["a.py"], "report_internal_error": ["a.py"]}


def test_only_main_reports_errors_and_picks_the_exit_code(trees) -> None:
    """``cli/__init__.py:main`` turns every error into a message and an exit code; the action hands a
    bug it caught to it (``errors.InternalError``, with how to mask the secrets) instead of reporting it."""
    assert error_reporting(trees) == {"sys.exit": ["cli/__init__.py"], "report_internal_error": ["cli/__init__.py"]}


def test_the_token_is_read_by_the_entry_point_only(trees) -> None:
    """``github_token`` (the one reader of the input) is called by ``cli/action.py`` alone; the settings
    take the token it read as a required argument."""
    callers = sorted(rel for rel, tree in trees.items() for node in ast.walk(tree)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
                     and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "github_token")
    assert callers == ["cli/action.py"]


def _names_imported(rel: str, tree: ast.Module) -> Iterator[tuple[str, str, str]]:
    """``(local name, module, name)`` for each ``from <package module> import name [as local]``
    and ``(local, module, "")`` for each ``import retrieval_gate.x as local``, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = next(imports_of(rel, ast.Module(body=[node], type_ignores=[]))).target
            for alias in node.names:
                yield alias.asname or alias.name, target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and internal_unit(alias.name) is not None:
                    yield alias.asname, alias.name, ""


def _lazy_exports(tree: ast.Module) -> Iterator[tuple[str, str, str]]:
    """``(name, module, name)`` for each name a package loads on first use:
    ``lazy_exports(package, exports={name: module})``, the mapping written in the call or assigned to a name."""
    assigned = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_exports":
            for given in [*node.args[1:], *(k.value for k in node.keywords if k.arg == "exports")]:
                mapping = assigned.get(given.id) if isinstance(given, ast.Name) else given
                if isinstance(mapping, ast.Dict):
                    pairs = zip(mapping.keys, mapping.values, strict=True)
                    yield from ((key.value, value.value, key.value) for key, value in pairs
                                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant))


def package_functions(trees: Mapping[str, ast.Module]) -> dict[str, dict[str, ast.FunctionDef]]:
    """Each module's functions by the names another module imports them under: its own top-level
    functions, and those it re-exports (a package's ``__init__`` importing them from its modules, or
    loading them on first use with ``lazy_exports``)."""
    functions = {module_name(rel): {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
                 for rel, tree in trees.items()}
    changed = True
    while changed:
        changed = False
        for rel, tree in trees.items():
            own = functions[module_name(rel)]
            for local, target, name in [*_names_imported(rel, tree), *_lazy_exports(tree)]:
                function = functions.get(target, {}).get(name)
                if function is not None and local not in own:
                    own[local] = function
                    changed = True
    return functions


def positional_calls_between_modules(trees: Mapping[str, ast.Module]) -> list[str]:
    """``module:line callee`` for each call to a function of another package module — imported by
    name (``from retrieval_gate.files import write_text_atomic``, or relative) or called through its
    imported module (``from retrieval_gate.scaffold import plan as planning; planning.f(…)``) — that
    passes more than one argument by position. The first argument (the subject) may be positional;
    a callee's ``*args`` and positional-only parameters, and a call that splats ``*args``, are left out."""
    functions = package_functions(trees)
    found: list[tuple[str, int, str]] = []
    for rel, tree in sorted(trees.items()):
        here = module_name(rel)
        by_name: dict[str, ast.FunctionDef] = {}
        by_module: dict[str, str] = {}
        for local, target, name in _names_imported(rel, tree):
            if target == here:
                continue
            if name and name in functions.get(target, {}):
                by_name[local] = functions[target][name]
            elif f"{target}.{name}".rstrip(".") in functions:
                by_module[local] = f"{target}.{name}".rstrip(".")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or any(isinstance(arg, ast.Starred) for arg in node.args):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in by_name:
                callee, shown = by_name[func.id], func.id
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id in by_module and func.attr in functions[by_module[func.value.id]]:
                callee, shown = functions[by_module[func.value.id]][func.attr], f"{func.value.id}.{func.attr}"
            else:
                continue
            if callee.args.vararg is None and len(node.args) > max(1, len(callee.args.posonlyargs)):
                found.append((rel, node.lineno, shown))
    return [f"{rel}:{line} {shown}" for rel, line, shown in sorted(found)]


def test_the_keyword_finder_sees_a_second_positional_argument() -> None:
    trees = {"files.py": ast.parse("def write(path, text, *, mode='w'): pass\ndef join(*parts): pass\n"
                                   "def local(a, b): pass\nlocal(1, 2)\n"),
             "plan/__init__.py": ast.parse("from .steps import step\n"
                                           "__getattr__ = lazy_exports('x', {'late': 'retrieval_gate.plan.steps'})\n"),
             "plan/steps.py": ast.parse("def step(a, b): pass\ndef only(a, b, /): pass\ndef late(a, b): pass\n"),
             "cli/run.py": ast.parse("from retrieval_gate.files import write, join\nfrom ..plan import step\n"
                                     "from retrieval_gate.plan import steps as s\nwrite(p, text=t)\n"
                                     "write(p, t)\njoin(a, b, c)\nstep(*pair)\nstep(1, b=2)\n"
                                     "def f():\n    s.step(1, 2)\n    s.only(1, 2)\n    step(x, y)\n"
                                     "    from retrieval_gate.plan import late\n    late(1, 2)\n")}
    assert positional_calls_between_modules(trees) == ["cli/run.py:5 write", "cli/run.py:10 s.step",
                                                      "cli/run.py:12 step", "cli/run.py:14 late"]


def test_calls_between_modules_name_their_arguments(trees) -> None:
    """A call to another module's function passes its subject by position and every further
    argument by name, so a reordered or inserted parameter cannot shift a value into the wrong one."""
    assert positional_calls_between_modules(trees) == []


# Each part's settings model, and the module that holds it (docs/ARCHITECTURE.md, "Rules").
PART_SETTINGS = {
    "ChunkSettings": "chunk/chunking.py",
    "EmbedSettings": "embed/settings.py",
    "StoreSettings": "store/settings.py",
    "RetrieverOptions": "retrieve/settings.py",
    "GateSettings": "compare/gate.py",
    "AuditParams": "audit/params.py",
}


def settings_homes(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
    """``{class name: [modules defining it]}`` for the parts' settings models."""
    homes: dict[str, list[str]] = {name: [] for name in PART_SETTINGS}
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in homes:
                homes[node.name].append(rel)
    return homes


def test_each_part_settings_model_lives_with_the_part(trees) -> None:
    """Each part's settings model is defined once, in the part; ``settings.py`` composes them all;
    no part imports ``settings.py`` (each receives its slice, never the whole suite config)."""
    assert settings_homes(trees) == {name: [home] for name, home in PART_SETTINGS.items()}
    composed = {imp.target for imp in imports_of("settings.py", trees["settings.py"])}
    parts = {home.removesuffix(".py").replace("/", ".") for home in PART_SETTINGS.values()}
    assert {f"retrieval_gate.{p}" for p in parts} <= composed
    part_units = {home.split("/")[0] for home in PART_SETTINGS.values()}
    readers = sorted(f"{imp.module}:{imp.line}" for rel, tree in trees.items()
                     if unit_of(rel) in part_units or rel == "evaluation/dense_parts.py"  # the dense side too
                     for imp in imports_of(rel, tree) if imp.target == "retrieval_gate.settings")
    assert readers == []


def test_the_settings_finder_sees_a_second_home() -> None:
    trees = {"chunk/chunking.py": ast.parse("class ChunkSettings: pass\n"),
             "evaluation/x.py": ast.parse("class ChunkSettings: pass\n")}
    assert settings_homes(trees)["ChunkSettings"] == ["chunk/chunking.py", "evaluation/x.py"]


def test_adapters_are_handed_in() -> None:
    """The orchestrators take their adapters as keyword arguments: tests hand in fakes of our
    interfaces (``Embedder``, ``VectorStore``, ``Engine``, ``GitHubPort``) instead of patching."""
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.publish.flows import run_action

    for function, adapters in ((run_evals, ("embedder", "store", "progress")),
                               (run_action, ("engine", "github", "runner"))):
        parameters = inspect.signature(function).parameters
        assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in adapters), function
