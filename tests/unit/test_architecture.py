"""The design cannot drift back. Each test states one rule of docs/ARCHITECTURE.md ("Rules"), reads
the package with ``ast`` (or imports the function it is about), and fails naming the module and line
that broke it; beside each finder, a self-test on a made-up package shows it sees a violation.

The rules: every import points down the layers (so no cycle), the functional core touches no disk,
network or environment, ``load/`` reads user inputs only, one module reads the environment and only
the entry points ask it, the orchestrators take their adapters as keyword arguments, the token is
read in one place per forge, the tool's own files are read and written in ``artifacts/``, only ``main`` reports
errors and picks the exit code, each part's settings model lives with the part, measures come from
one registry, no test patches a library, and every function has a caller in the package. Rules of
spelling (which file may hold a string, line counts, argument styles) are left to review."""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
from jinja2 import Environment
from jinja2 import nodes as jinja_nodes

import retrieval_gate
from retrieval_gate.forge import FORGES

PACKAGE = Path(retrieval_gate.__file__).parent
ROOT = Path(__file__).resolve().parents[2]  # the repository: pyproject.toml
CORE = ("metrics", "stats", "score", "baseline", "compare", "audit", "history")
# golden/ (the golden-set loop) holds its pure steps beside their adapters: each of these modules
# is held to the core's rules, module by module (it may import the core and these modules only).
GOLDEN_PURE = ("golden/log_clean.py", "golden/masking.py", "golden/draw.py", "golden/draft_entry.py",
               "golden/decisions.py", "golden/sittings.py", "golden/agreement.py", "golden/topup.py")
# What the core may import from the package: itself, and the leaf modules of plain data.
CORE_MAY_IMPORT = frozenset({*CORE, "errors", "models", "filters", "lazy", "defaults", ""})
# Standard-library and third-party modules that mean disk, network, environment, processes or presentation.
SHELL_LIBRARIES = frozenset({
    "os", "sys", "pathlib", "io", "shutil", "tempfile", "glob", "subprocess", "socket", "ssl", "sqlite3", "fcntl",
    "ctypes", "importlib", "urllib", "http", "requests", "httpx", "yaml", "github", "gitlab", "chromadb", "torch",
    "chromadb_rust_bindings", "sentence_transformers", "jinja2", "markupsafe", "rich", "typer", "click",
})
# Built-ins that touch the disk or the terminal without an import.
SHELL_BUILTINS = frozenset({"open", "input", "breakpoint"})
ENVIRONMENT_READERS = frozenset({"environment.py"})
# The modules that may ask ``environment.py`` for the environment: the entry points (the commands
# in cli/, and the action's settings), which hand what they read to the parts as settings.
ENTRY_POINTS = ("cli/", "publish/action_settings.py")
# docs/ARCHITECTURE.md's layers, bottom first. A unit imports only units of lower layers.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    ("errors", "models", "filters", "clock", "environment", "release_pin", "lazy", "defaults",  # leaves
     "http_deadline"),
    ("files", "overrides"),  # atomic writes and hashes; the one override model of the suite's settings
    ("metrics", "stats", "load", "chunk", "embed", "scaffold"),
    ("score", "store"),
    ("baseline",),
    ("compare", "retrieve"),
    ("audit", "history"),
    ("render", "settings", "artifacts"),
    ("evaluation", "forge"),
    ("golden",),
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
            if target == "retrieval_gate":  # from retrieval_gate import files: the module named
                for alias in node.names:
                    dunder = alias.name.startswith("__")  # __version__
                    yield Import(rel, target if dunder else f"{target}.{alias.name}", node.lineno)
            else:
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




def layer_of(unit: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if unit in layer), None)


def units_without_a_layer(trees: Mapping[str, ast.Module]) -> list[str]:
    return sorted(u for u in unit_graph(trees) if u and layer_of(u) is None)


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


def parsed(sources: Mapping[str, str]) -> dict[str, ast.Module]:
    """A made-up package for the self-tests: ``{relative path: source}``."""
    return {rel: ast.parse(source) for rel, source in sources.items()}


@pytest.fixture(scope="module")
def trees() -> dict[str, ast.Module]:
    return modules()


# --- Layers and cycles ------------------------------------------------------------------------------

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


def test_the_cycle_finder_sees_a_cycle_through_a_relative_import_inside_a_function() -> None:
    made_up = parsed({"compare/gate.py": "def f():\n    from ..render import cells\n",
                      "render/cells.py": "from retrieval_gate.compare.gate import f\n"})
    assert cycles(unit_graph(made_up)) == [["compare", "render"]]


def test_no_package_imports_one_that_imports_it_back(trees) -> None:
    assert cycles(unit_graph(trees)) == []


def test_the_layer_finder_sees_a_unit_without_a_row() -> None:
    assert units_without_a_layer(parsed({"newpart/x.py": "", "files.py": ""})) == ["newpart"]


def test_every_unit_has_a_layer(trees) -> None:
    """A new package gets a row in ``LAYERS`` (and in the drawing of docs/ARCHITECTURE.md)."""
    assert units_without_a_layer(trees) == []


def test_the_layer_check_sees_an_import_up_or_sideways() -> None:
    made_up = parsed({"metrics/hit.py": "def f():\n    from retrieval_gate.cli import app\n",
                      "load/kb.py": "from retrieval_gate.chunk import chunking\n",
                      "score/x.py": "from retrieval_gate.metrics import names\nfrom .. import __version__\n",
                      "files.py": "from . import errors, settings\n"})
    assert upward_imports(made_up) == ["metrics/hit.py:2: metrics imports retrieval_gate.cli (not below it)",
                                       "load/kb.py:1: load imports retrieval_gate.chunk (not below it)",
                                       "files.py:1: files imports retrieval_gate.settings (not below it)"]


def test_every_import_points_down_the_layers(trees) -> None:
    """The stronger form of "no cycles": the order docs/ARCHITECTURE.md draws is the imports' order."""
    assert upward_imports(trees) == []


# --- Module names -----------------------------------------------------------------------------------

# Names that several parts share because each holds the same kind of thing for its own part: its
# settings model, its data model, its interface, its run, a forge's API and CI pipeline, a plan, a
# cache, its HTML or its changes and side-by-side (core and presentation). A command module of cli/ is named after
# its command, so it may share a name with the part it drives (cli/audit.py, audit/…).
SHARED_MODULE_NAMES = frozenset({"settings", "model", "base", "run", "api", "ci", "plan", "cache", "html",
                                 "changes", "side_by_side", "__init__"})


def colliding_module_names(paths: Iterable[str]) -> dict[str, list[str]]:
    """Module name → its files, for each name held by two modules outside ``cli/`` (or by a cli
    command and another cli module), unless the name is one of ``SHARED_MODULE_NAMES``."""
    by_name: dict[str, list[str]] = {}
    for rel in paths:
        if rel.startswith("cli/"):
            continue
        by_name.setdefault(rel.rsplit("/", 1)[-1].removesuffix(".py"), []).append(rel)
    return {name: sorted(files) for name, files in sorted(by_name.items())
            if len(files) > 1 and name not in SHARED_MODULE_NAMES}


def test_the_name_check_sees_two_drafts() -> None:
    assert colliding_module_names(["audit/draft.py", "evaluation/draft.py", "embed/settings.py",
                                   "store/settings.py", "cli/draft.py"]) == {"draft": ["audit/draft.py",
                                                                                      "evaluation/draft.py"]}


def test_no_two_modules_share_a_name_unless_they_hold_the_same_kind_of_thing(trees) -> None:
    """Three ``draft.py`` or two ``querylog.py`` make a newcomer open the wrong file: a name says
    what a module holds (``SHARED_MODULE_NAMES``: the kinds every part may have one of)."""
    assert colliding_module_names(trees) == {}


# --- The pure core, and load/ -----------------------------------------------------------------------

def forbidden_imports(trees: Mapping[str, ast.Module], *, unit: str, units: Callable[[str], bool],
                      libraries: frozenset[str] = frozenset(), builtins: frozenset[str] = frozenset()) -> list[str]:
    """``module:line: what`` for each import in ``unit`` of a package unit ``units`` rejects or of
    one of ``libraries``, and each call of one of ``builtins`` (``open``: the disk without an import)."""
    wrong = []
    for rel, tree in sorted(trees.items()):
        if unit_of(rel) != unit:
            continue
        for imp in imports_of(rel, tree):
            internal = internal_unit(imp.target)
            if (internal is not None and units(internal)) or imp.target.split(".")[0] in libraries:
                wrong.append(f"{rel}:{imp.line}: imports {imp.target}")
        wrong += [f"{rel}:{node.lineno}: calls {node.func.id}()" for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in builtins]
    return wrong


def impure_core(trees: Mapping[str, ast.Module], unit: str) -> list[str]:
    return forbidden_imports(trees, unit=unit, units=lambda u: u not in CORE_MAY_IMPORT, libraries=SHELL_LIBRARIES,
                             builtins=SHELL_BUILTINS)


def test_the_core_check_sees_the_shell_disk_and_environment() -> None:
    made_up = parsed({"stats/x.py": "import os.path\nfrom ..files import write_text_atomic\nfrom . import power\n"
                                    "from retrieval_gate.models import Case\ntext = open('a').read()\n",
                      "compare/y.py": "def f():\n    from retrieval_gate.settings import SuiteConfig\n"})
    assert impure_core(made_up, "stats") == ["stats/x.py:1: imports os.path",
                                             "stats/x.py:2: imports retrieval_gate.files",
                                             "stats/x.py:5: calls open()"]
    assert impure_core(made_up, "compare") == ["compare/y.py:2: imports retrieval_gate.settings"]


@pytest.mark.parametrize("unit", CORE)
def test_the_core_touches_no_disk_network_or_environment(trees, unit: str) -> None:
    """The core imports only itself and the plain-data leaves: no settings, load, files, artifacts,
    no ``os``, ``pathlib``, ``yaml``, no network or presentation library, and it opens no file."""
    assert impure_core(trees, unit) == []


def impure_golden_step(trees: Mapping[str, ast.Module], module: str) -> list[str]:
    """The core's check for one module of ``golden/``: it may import the core, the plain-data leaves
    and the other pure steps of ``golden/`` (``GOLDEN_PURE``), no other module of ``golden/``."""
    pure_steps = {"retrieval_gate." + m.removesuffix(".py").replace("/", ".") for m in GOLDEN_PURE}
    wrong = []
    for imp in imports_of(module, trees[module]):
        internal = internal_unit(imp.target)
        if internal == "golden" and imp.target in pure_steps:
            continue
        if (internal is not None and internal not in CORE_MAY_IMPORT) or imp.target.split(".")[0] in SHELL_LIBRARIES:
            wrong.append(f"{module}:{imp.line}: imports {imp.target}")
    wrong += [f"{module}:{node.lineno}: calls {node.func.id}()" for node in ast.walk(trees[module])
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SHELL_BUILTINS]
    return wrong


def test_the_golden_step_check_sees_an_adapter_or_the_disk() -> None:
    made_up = parsed({"golden/draw.py": "from retrieval_gate.golden.log_clean import x\n"
                                        "from retrieval_gate.golden.cases_draft import y\n"
                                        "from retrieval_gate.audit.minhash import z\nimport pathlib\n",
                      "golden/topup.py": "def f():\n    return open('a')\n"})
    assert impure_golden_step(made_up, "golden/draw.py") == [
        "golden/draw.py:2: imports retrieval_gate.golden.cases_draft", "golden/draw.py:4: imports pathlib"]
    assert impure_golden_step(made_up, "golden/topup.py") == ["golden/topup.py:2: calls open()"]


@pytest.mark.parametrize("module", GOLDEN_PURE)
def test_the_golden_sets_pure_steps_touch_no_disk_network_or_environment(trees, module: str) -> None:
    """The golden-set loop's pure steps follow the core's rules, checked per module."""
    assert impure_golden_step(trees, module) == []


def test_load_reads_user_inputs_only(trees) -> None:
    """``load/`` knows no results, baselines or audits: the tool's own files are read by
    ``artifacts/``, beside the models they are written from (the same finder as the core's)."""
    assert forbidden_imports(trees, unit="load", units=lambda u: u in (*CORE, "settings", "artifacts")) == []


# --- The environment --------------------------------------------------------------------------------

ENVIRONMENT_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def environment_readers(trees: Mapping[str, ast.Module]) -> list[str]:
    """``module:line`` for each read of the process environment: ``os.environ`` / ``os.getenv`` / …
    through any name ``os`` is bound to, or those names imported from ``os``."""
    found = []
    for rel, tree in sorted(trees.items()):
        bound = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names if alias.name == "os"}
        for node in ast.walk(tree):
            through_os = isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_NAMES and \
                isinstance(node.value, ast.Name) and node.value.id in bound
            from_os = isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(alias.name in ENVIRONMENT_NAMES for alias in node.names)
            if through_os or from_os:
                found.append(f"{rel}:{node.lineno}")
    return found


def environment_askers(trees: Mapping[str, ast.Module]) -> list[str]:
    """Modules outside the entry points that import ``environment`` or name ``read_environment``."""
    askers = {rel for rel, tree in trees.items() for node in ast.walk(tree)
              if (isinstance(node, ast.Name) and node.id == "read_environment")
              or (isinstance(node, ast.Attribute) and node.attr == "read_environment")}
    askers |= {rel for rel, tree in trees.items() for imp in imports_of(rel, tree)
               if imp.target == "retrieval_gate.environment"}
    return sorted(a for a in askers if a != "environment.py" and not a.startswith(ENTRY_POINTS))


def test_the_environment_finder_sees_every_way_to_read_it() -> None:
    made_up = parsed({"environment.py": "import os\ndef read_environment():\n    return dict(os.environ)\n",
                      "store/a.py": "import os as o\nx = o.getenv('HOME')\n",
                      "store/b.py": "from os import environ\n",
                      "store/c.py": "import os\np = os.path.join('a')\n"})
    assert environment_readers(made_up) == ["environment.py:3", "store/a.py:2", "store/b.py:1"]


def test_only_one_module_reads_the_environment(trees) -> None:
    assert sorted({line.split(":")[0] for line in environment_readers(trees)}) == sorted(ENVIRONMENT_READERS)


def test_the_asker_finder_sees_a_part_asking_for_the_environment() -> None:
    made_up = parsed({"cli/eval.py": "from retrieval_gate.environment import read_environment\n",
                      "publish/action_settings.py": "from retrieval_gate import environment\n",
                      "embed/model.py": "def f():\n    from retrieval_gate.environment import read_environment\n",
                      "store/x.py": "from retrieval_gate import environment\n"})
    assert environment_askers(made_up) == ["embed/model.py", "store/x.py"]


def test_only_the_entry_points_ask_for_the_environment(trees) -> None:
    """No module but the entry points calls ``read_environment`` or imports ``environment`` at all:
    everything else receives its settings as arguments."""
    assert environment_askers(trees) == []


# --- Adapters handed in -----------------------------------------------------------------------------

def adapters_not_keyword_only(function: Callable[..., object], adapters: tuple[str, ...]) -> list[str]:
    parameters = inspect.signature(function).parameters
    return [name for name in adapters
            if name not in parameters or parameters[name].kind is not inspect.Parameter.KEYWORD_ONLY]


def test_the_adapter_check_sees_a_positional_or_missing_adapter() -> None:
    def made_up(suite, embedder, *, store):
        return suite, embedder, store

    assert adapters_not_keyword_only(made_up, ("embedder", "store", "progress")) == ["embedder", "progress"]


@pytest.mark.parametrize(("module", "function", "adapters"), [
    ("retrieval_gate.evaluation.run", "run_evals", ("embedder", "store", "progress")),
    ("retrieval_gate.publish.flows", "run_action", ("engine", "forge_api", "runner")),
])
def test_adapters_are_handed_in(module: str, function: str, adapters: tuple[str, ...]) -> None:
    """The orchestrators take their adapters as keyword arguments: tests hand in fakes of our
    interfaces (``Embedder``, ``VectorStore``, ``Engine``, ``ForgeApi``) instead of patching."""
    assert adapters_not_keyword_only(getattr(import_module(module), function), adapters) == []


# --- The tokens -------------------------------------------------------------------------------------

# Each forge's token variables and the one module that reads them (``read_tokens`` in its settings);
# outside ``forge/``, only the action's entry point calls ``read_tokens`` and hands the tokens on, to
# the settings and to the scrubbing, as a required argument.
# The registry says which (``Forge.token_variables``): a new forge's are checked without a line here.
TOKEN_VARIABLES = {name: f"forge/{forge.name}/settings.py" for forge in FORGES for name in forge.token_variables}
TOKEN_READER = "read_tokens"
TOKEN_ASKERS = ["cli/action.py"]


def token_reads(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
    """``{variable: [modules that read it]}`` — a ``.get(…)`` / ``.pop(…)`` or a subscript whose key is
    the variable's name, written out or through a constant holding it — and ``{"reader called":
    [modules outside forge/ that call read_tokens]}``."""
    constants = {module_name(rel): {target.id: node.value.value for node in tree.body
                                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                                    and node.value.value in TOKEN_VARIABLES
                                    for target in node.targets if isinstance(target, ast.Name)}
                 for rel, tree in trees.items()}

    def held_in(rel: str, tree: ast.Module) -> dict[str, str]:
        """The names bound to a token variable in this module: its own constants and those it imports."""
        held = dict(constants[module_name(rel)])
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = constants.get(next(imports_of(rel, ast.Module(body=[node], type_ignores=[]))).target, {})
                held.update({alias.asname or alias.name: source[alias.name] for alias in node.names
                             if alias.name in source})
        return held

    found: dict[str, list[str]] = {name: [] for name in TOKEN_VARIABLES}
    found["reader called"] = []
    for rel, tree in sorted(trees.items()):
        held = held_in(rel, tree)
        for node in ast.walk(tree):
            key = node.args[0] if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop") and node.args else \
                node.slice if isinstance(node, ast.Subscript) else None
            read = key.value if isinstance(key, ast.Constant) and key.value in TOKEN_VARIABLES else \
                held.get(key.id) if isinstance(key, ast.Name) else None
            if read is not None and rel not in found[read]:
                found[read].append(rel)
            if isinstance(node, ast.Call) and not rel.startswith("forge/") and rel not in found["reader called"] \
                    and TOKEN_READER in (getattr(node.func, "id", None), getattr(node.func, "attr", None)):
                found["reader called"].append(rel)
    return found


def test_the_token_finder_sees_a_second_reader() -> None:
    made_up = parsed({"forge/github/settings.py": "def read_tokens(env):\n    return env['INPUT_GITHUB_TOKEN']\n",
                      "forge/gitlab/settings.py": "NOTE = 'RETRIEVAL_GATE_GITLAB_TOKEN'\nt = env.get(NOTE)\n",
                      "forge/github/__init__.py": "t = settings.read_tokens(env)\n",
                      "publish/flows.py": "from retrieval_gate.forge.gitlab.settings import NOTE\n"
                                          "t = env.pop(NOTE)\nu = forge.read_tokens(env)\n",
                      "scaffold/texts.py": "HELP = 'set RETRIEVAL_GATE_GITLAB_TOKEN'\n",
                      "cli/action.py": "tokens = forge.read_tokens(env)\n"})
    found = token_reads(made_up)
    assert found["INPUT_GITHUB_TOKEN"] == ["forge/github/settings.py"]
    assert found["RETRIEVAL_GATE_GITLAB_TOKEN"] == ["forge/gitlab/settings.py", "publish/flows.py"]
    assert found["reader called"] == ["cli/action.py", "publish/flows.py"]


def test_the_tokens_are_read_in_one_place_per_forge_and_asked_for_by_the_entry_point_only(trees) -> None:
    """Each token variable is read by its forge's settings module alone; outside ``forge/``, the
    action's entry point alone calls ``read_tokens``."""
    assert token_reads(trees) == {**{name: [home] for name, home in TOKEN_VARIABLES.items()},
                                  "reader called": TOKEN_ASKERS}


# --- A forge is one folder ---------------------------------------------------------------------------

FORGE_FOLDERS = frozenset(forge.name for forge in FORGES)
FORGE_REGISTRY = "forge/__init__.py"


def forge_folder_reaches(trees: Mapping[str, ast.Module], folders: frozenset[str] = FORGE_FOLDERS) -> list[str]:
    """``module:line → retrieval_gate.forge.<name>…`` for each import of a forge's folder from outside
    it, but the registry's import of the folder's package (``from retrieval_gate.forge.gitea import
    Gitea``). What forges share lives beside them in ``forge/`` (``base``, ``http``, ``wait``, ``event``)."""
    found = []
    for rel, tree in sorted(trees.items()):
        targets = [(i.target, i.line) for i in imports_of(rel, tree)]
        targets += [(f"retrieval_gate.forge.{alias.name}", node.lineno) for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module == "retrieval_gate.forge"
                    for alias in node.names]
        for target, line in targets:
            parts = target.split(".")
            if parts[:2] != ["retrieval_gate", "forge"] or len(parts) < 3 or parts[2] not in folders:
                continue
            if rel.startswith(f"forge/{parts[2]}/") or (rel == FORGE_REGISTRY and len(parts) == 3):
                continue
            found.append(f"{rel}:{line} → {target}")
    return found


def test_the_forge_folder_finder_sees_a_forge_reached_from_outside() -> None:
    made_up = parsed({"forge/__init__.py": "from retrieval_gate.forge.gitea import Gitea\n",
                      "forge/gitea/settings.py": "from retrieval_gate.forge.gitea.api import X\n"
                                                 "from retrieval_gate.forge.github.settings import read_event\n",
                      "forge/event.py": "from retrieval_gate.forge.base import Forge\n",
                      "publish/action_settings.py": "from retrieval_gate.forge import gitea\n",
                      "cli/init.py": "def f():\n    from retrieval_gate.forge.gitlab.ci import gitlab_ci\n"})
    assert forge_folder_reaches(made_up, frozenset({"gitea", "github", "gitlab"})) == [
        "cli/init.py:2 → retrieval_gate.forge.gitlab.ci",
        "forge/gitea/settings.py:2 → retrieval_gate.forge.github.settings",
        "publish/action_settings.py:1 → retrieval_gate.forge.gitea"]


def test_a_forge_is_one_folder_that_only_the_registry_imports(trees) -> None:
    """docs/ARCHITECTURE.md, "Where to add … a forge": the rest of the package reaches a forge through
    the registry (``FORGES``) and the ``Forge`` interface, and no forge through another's folder."""
    assert forge_folder_reaches(trees) == []


# --- The tool's own files ---------------------------------------------------------------------------

# The text forms of the tool's own files (the core's codecs, the models' validation) and their
# callers: only the file's reader and writer in artifacts/ (the action commits ``*_text`` through the API).
TEXT_FORMS = ("parse_baseline", "baseline_data", "parse_manifest", "dumps_manifest")
VALIDATED_FILES = ("Results", "Comparison", "AuditReport", "Baseline")


def text_form_callers(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
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


def test_the_text_form_finder_sees_a_codec_called_outside_artifacts() -> None:
    made_up = parsed({"publish/x.py": "from retrieval_gate.baseline.codec import parse_baseline\n"
                                      "parse_baseline('{}', source='s')\nResults.model_validate({})\n"})
    assert text_form_callers(made_up) == {"parse_baseline": ["publish/x.py"],
                                          "Results.model_validate": ["publish/x.py"]}


def test_the_tools_files_are_read_and_written_in_artifacts(trees) -> None:
    """One reader and one writer per file the tool writes and reads back, in ``artifacts/``, used by
    the CLI and the action alike; the codecs live in the core (``baseline/``) beside the models."""
    assert text_form_callers(trees) == {
        "parse_baseline": ["artifacts/baseline.py"],
        "baseline_data": ["artifacts/baseline.py"],
        "parse_manifest": ["artifacts/baseline.py"],
        "dumps_manifest": ["artifacts/baseline.py"],
        "Results.model_validate": ["artifacts/run_files.py"],
        "Comparison.model_validate": ["artifacts/run_files.py"],
        "AuditReport.model_validate": ["artifacts/run_files.py"],
        "Baseline.model_validate": ["baseline/codec.py"],  # the codec, after its migrations
    }


# --- Errors and exit codes --------------------------------------------------------------------------

def error_reporting(trees: Mapping[str, ast.Module]) -> dict[str, list[str]]:
    """Where the process's exit code is picked (``sys.exit``, ``os._exit``, the ``exit`` built-in) and
    where an internal error is reported (``report_internal_error`` called)."""
    places: dict[str, list[str]] = {"exit": [], "report_internal_error": []}
    for rel, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                    and (func.value.id, func.attr) in (("sys", "exit"), ("os", "_exit"))) or \
                    (isinstance(func, ast.Name) and func.id in ("exit", "quit")):
                key = "exit"
            elif isinstance(func, ast.Name) and func.id == "report_internal_error":
                key = "report_internal_error"
            else:
                continue
            if rel not in places[key]:
                places[key].append(rel)
    return places


def test_the_error_reporting_finder_sees_an_exit_and_a_report() -> None:
    made_up = parsed({"a.py": "import sys\nsys.exit(2)\nraise typer.Exit(report_internal_error(exc))\n",
                      "b.py": "import os\nos._exit(1)\n", "c.py": "exit(3)\n"})
    assert error_reporting(made_up) == {"exit": ["a.py", "b.py", "c.py"], "report_internal_error": ["a.py"]}


def test_only_main_reports_errors_and_picks_the_exit_code(trees) -> None:
    """``cli/__init__.py:main`` turns every error into a message and an exit code; the action hands a
    bug it caught to it (``errors.InternalError``, with how to mask the secrets) instead of reporting it."""
    assert error_reporting(trees) == {"exit": ["cli/__init__.py"], "report_internal_error": ["cli/__init__.py"]}


# --- Each part's settings, one registry of measures -------------------------------------------------

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


def test_the_settings_finder_sees_a_second_home() -> None:
    made_up = parsed({"chunk/chunking.py": "class ChunkSettings: pass\n",
                      "evaluation/x.py": "class ChunkSettings: pass\n"})
    assert settings_homes(made_up)["ChunkSettings"] == ["chunk/chunking.py", "evaluation/x.py"]


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


NUMBER_WORDS = dict(enumerate(("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")))


def test_a_metric_is_wired_where_the_doc_says() -> None:
    """docs/ARCHITECTURE.md, "Where to add a metric": a function and a ``Measure`` record in
    ``metrics/measures.py`` (formula in the docstring), nothing else in the package; the grid and
    the names read the registry (tests/unit/test_measure_registry.py checks the docs' table and
    README's list, tests/unit/test_metrics_pytrec.py reads ``Measure.trec_eval``). The walk-through
    lists as many files as it says, each one that exists."""
    from retrieval_gate.metrics import measures, names

    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text[text.index("- **a metric**"):text.index("- **a retriever**")]
    files = re.findall(r"^  \d+\. `([^`]+)`", section, flags=re.MULTILINE)
    count = re.search(r"^  (\w+) files —", section, flags=re.MULTILINE)
    assert count is not None and count.group(1) == NUMBER_WORDS[len(files)], (count, files)
    assert all((ROOT / f).is_file() for f in files), files
    pytrec = (ROOT / "tests" / "unit" / "test_metrics_pytrec.py").read_text(encoding="utf-8")
    assert "REGISTRY" in pytrec and "TREC_NAME" not in pytrec, "the parity test reads the registry's trec_eval names"

    assert set(names.DISPLAY) == set(measures.REGISTRY) == set(measures.MEASURES)
    for name, measure in measures.REGISTRY.items():
        assert measure.value.__module__ == "retrieval_gate.metrics.measures", name
        assert measure.value.__doc__, f"{name}: the formula belongs in the docstring"
    grid = ast.parse((PACKAGE / "metrics" / "grid.py").read_text(encoding="utf-8"))
    assert "REGISTRY" in {node.id for node in ast.walk(grid) if isinstance(node, ast.Name)}, \
        "the grid iterates the registry"
    assert sorted(p.name for p in (PACKAGE / "metrics").glob("*.py")) == [
        "__init__.py", "grid.py", "measures.py", "names.py"]


# --- Tests patch no library -------------------------------------------------------------------------

# Library attributes a test may set: a library's own switch, not a function replaced.
LIBRARY_SETTINGS_A_TEST_MAY_SET = frozenset({("huggingface_hub.constants", "HF_HUB_OFFLINE")})
OURS = ("retrieval_gate", "tests")


def patched_libraries(tree: ast.Module) -> list[tuple[str, str, int]]:
    """``(module, name, line)`` for each library attribute a test replaces: ``monkeypatch.setattr(obj,
    "name", …)`` where ``obj`` is a module the test imported from outside the project (the standard
    library or a third party), ``monkeypatch.setattr("module.name", …)``, and ``mock.patch("module.name")``
    / ``patch.object(module, "name")``."""
    outside: dict[str, str] = {}  # local name → the module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith(OURS):
                    local = alias.asname or alias.name.split(".")[0]  # import a.b binds a; import a.b as c binds a.b
                    outside[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                not node.module.startswith(OURS):
            for alias in node.names:
                outside[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        dotted = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if called in ("setattr", "patch") and dotted and "." in dotted:  # the "module.name" form
            if not dotted.startswith(OURS):
                module, _, name = dotted.rpartition(".")
                found.append((module, name, node.lineno))
        elif called in ("setattr", "object") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            target = ast.unparse(first)
            root = target.split(".")[0]
            if root in outside:
                module = ".".join([outside[root], *target.split(".")[1:]])
                found.append((module, node.args[1].value, node.lineno))
    return sorted(found)


def test_the_library_patch_finder_sees_a_patched_function() -> None:
    tree = ast.parse("import os\nfrom unittest import mock\nfrom retrieval_gate import files\n"
                     "def test(monkeypatch):\n    monkeypatch.setattr(os, 'replace', None)\n"
                     "    monkeypatch.setattr(files, 'X', 1)\n    monkeypatch.setattr('shutil.move', None)\n"
                     "    monkeypatch.setattr('retrieval_gate.files.X', 1)\n    mock.patch('requests.get')\n"
                     "    mock.patch.object(os, 'fsync')\n")
    assert patched_libraries(tree) == [("os", "fsync", 10), ("os", "replace", 5), ("requests", "get", 9),
                                       ("shutil", "move", 7)]


def test_no_test_patches_a_library() -> None:
    """"Tests hand in fakes of our interfaces or real adapters against local fakes, never patched
    libraries": a failing disk is a real one (a file-size limit), a slow server a real server."""
    tests = Path(__file__).resolve().parents[1]
    found = [f"{p.relative_to(tests).as_posix()}:{line}: sets {module}.{name}"
             for p in sorted(tests.rglob("*.py"))
             for module, name, line in patched_libraries(ast.parse(p.read_text(encoding="utf-8")))
             if (module, name) not in LIBRARY_SETTINGS_A_TEST_MAY_SET]
    assert found == []


# --- Every function has a caller --------------------------------------------------------------------

# Decorators that do not register a function with a framework: a function under them is called by name.
PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "cache", "lru_cache", "cached_property",
                              "contextmanager", "override", "abstractmethod"})


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _strings(node: ast.expr) -> Iterator[str]:
    """The string constants of a literal: a string, the items of a list / tuple / set, a dict's keys."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        for item in node.elts:
            yield from _strings(item)
    elif isinstance(node, ast.Dict):
        for key in node.keys:
            if key is not None:
                yield from _strings(key)


def referenced_names(tree: ast.Module) -> Iterator[tuple[str, ast.AST | None]]:
    """``(name, the function it is referenced from)`` for each way Python code reaches a function by
    name: a name read (``f(…)``, ``handlers = [f]``), an attribute (``module.f``, ``self.m``), a name
    imported (``from x import f``: a re-export), a string in ``__all__`` or in the table handed to
    ``lazy_exports``, and ``getattr(obj, "f")``. Words inside other strings are not references."""
    assigned = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}

    def visit(node: ast.AST, owner: ast.AST | None) -> Iterator[tuple[str, ast.AST | None]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            owner = node
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id, owner
        elif isinstance(node, ast.Attribute):
            yield node.attr, owner
        elif isinstance(node, ast.ImportFrom):
            yield from ((alias.name, owner) for alias in node.names)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            yield from ((name, owner) for name in _strings(node.value))
        elif isinstance(node, ast.Call) and _decorator_name(node) in ("lazy_exports", "getattr"):
            for given in [*node.args[1:], *(k.value for k in node.keywords)]:
                table = assigned.get(given.id, given) if isinstance(given, ast.Name) else given
                yield from ((name, owner) for name in _strings(table))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, owner)

    yield from visit(tree, None)


def template_names(source: str) -> set[str]:
    """What a jinja2 template reaches by name, read by jinja2's own parser: ``{{ view.cells() }}``,
    ``{{ row.label }}``, ``{{ row["label"] }}``, ``{{ rows | f }}``."""
    found: set[str] = set()
    for node in Environment().parse(source).find_all((jinja_nodes.Getattr, jinja_nodes.Name, jinja_nodes.Getitem,
                                                      jinja_nodes.Filter, jinja_nodes.Test)):
        if isinstance(node, jinja_nodes.Getattr):
            found.add(node.attr)
        elif isinstance(node, jinja_nodes.Getitem):
            found.update({node.arg.value} if isinstance(node.arg, jinja_nodes.Const) else set())
        else:
            found.add(node.name)
    return found


def console_scripts() -> set[str]:
    """``module:function`` for each of pyproject.toml's ``[project.scripts]``: called from outside."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    found = set()
    for target in scripts.values():
        module, function = target.split(":")
        path = module.removeprefix("retrieval_gate").lstrip(".").replace(".", "/")
        found.add(f"{path}/__init__.py:{function}" if (PACKAGE / path).is_dir() else f"{path}.py:{function}")
    return found


def overrides_a_library_method(rel: str, cls: str, method: str) -> bool:
    """Whether ``cls.method`` overrides a method of a class from outside the package (a yaml loader's
    ``compose_node``, urllib3's ``Retry.increment``), which that library calls: imports the module."""
    module = import_module(module_name(rel))
    return any(method in vars(base) for base in getattr(module, cls).__mro__[1:]
               if not base.__module__.startswith("retrieval_gate"))


def module_name(rel: str) -> str:
    """``compare/gate.py`` → ``retrieval_gate.compare.gate``; ``audit/__init__.py`` → ``retrieval_gate.audit``."""
    parts = rel.removesuffix(".py").split("/")
    return ".".join(["retrieval_gate", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def uncalled_functions(trees: Mapping[str, ast.Module], *, templates: set[str] = frozenset(),
                       outside: set[str] = frozenset(),
                       overrides: Callable[[str, str, str], bool] = lambda rel, cls, method: False) -> list[str]:
    """``module:function`` (or ``module:Class.method``) for each function of the package nothing else
    in the package references (``referenced_names``; a function naming itself, or named only by dead
    functions, does not count) and no template reaches. Dunder methods, functions a decorator
    registers (CLI commands, pydantic validators), the console scripts (``outside``) and methods a
    library calls (``overrides``) are called from outside and left out. Names are matched as names,
    not resolved: a function shares its callers with any other function of its name."""
    callers: dict[str, set[ast.AST | None]] = {}
    for tree in trees.values():
        for name, owner in referenced_names(tree):
            callers.setdefault(name, set()).add(owner)
    candidates: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
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
                if node.name in templates or name in outside:
                    continue
                if prefix and not callers.get(node.name, set()) - {node} and overrides(rel, prefix[:-1], node.name):
                    continue  # (asked only of a method nothing names: it imports the module)
                candidates.append((name, node))
    dead: set[ast.AST | None] = set()
    while grown := {node for _, node in candidates if node not in dead
                    and not callers.get(node.name, set()) - {node} - dead}:  # called by dead code only: dead
        dead |= grown
    return sorted(name for name, node in candidates if node in dead)


def test_the_caller_finder_sees_a_function_nothing_calls() -> None:
    made_up = parsed({
        "a.py": "def used(): pass\ndef unused(): only_unused_calls_me()\ndef only_unused_calls_me(): pass\n"
                "def recursive(n): return recursive(n - 1)\n"
                "def in_a_string(): pass\ndef exported(): pass\ndef lazy(): pass\ndef main(): pass\n"
                "class C:\n    def m(self): pass\n    @property\n    def p(self): pass\n"
                "    def in_template(self): pass\n    def compose_node(self): pass\n    def __len__(self): pass\n",
        "b.py": "from a import used\nused()\nhelp = 'call in_a_string() or unused'\n__all__ = ['exported']\n"
                "@app.command()\ndef registered(): pass\n",
        "c/__init__.py": "_EXPORTS = {'lazy': 'a'}\n__getattr__ = lazy_exports('c', exports=_EXPORTS)\n",
    })
    assert uncalled_functions(made_up) == ["a.py:C.compose_node", "a.py:C.in_template", "a.py:C.m", "a.py:C.p",
                                           "a.py:in_a_string", "a.py:main", "a.py:only_unused_calls_me",
                                           "a.py:recursive", "a.py:unused"]
    assert uncalled_functions(made_up, templates=template_names("{% for r in c.m() %}{{ r.p }}{% endfor %}"
                                                                "{{ x['in_template'] }}"),
                              outside={"a.py:main"}, overrides=lambda rel, cls, method: method == "compose_node") == \
        ["a.py:in_a_string", "a.py:only_unused_calls_me", "a.py:recursive", "a.py:unused"]


def test_every_function_has_a_caller_in_the_package(trees) -> None:
    """Code nothing in ``src/`` calls is deleted (tests do not count as callers), or — a reference the
    tests check against — lives in tests/reference.py."""
    templates = set().union(*(template_names(p.read_text(encoding="utf-8"))
                              for p in (PACKAGE / "render" / "templates").rglob("*.j2")))
    assert uncalled_functions(trees, templates=templates, outside=console_scripts(),
                              overrides=overrides_a_library_method) == []
