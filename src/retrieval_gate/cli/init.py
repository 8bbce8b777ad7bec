"""``retrieval-gate init``: set a repository up in one command — find its KB and golden set,
validate them, write ``retrieval-gate.yml``, the two workflows and the ``.gitignore`` lines, run the
first eval and write ``baselines/<suite>.json`` with its audit, then print the commands to commit.
A retriever that needs the team's own code or packages (``scaffold.route``) gets the Python-job
workflow (the wheel in their own job) instead of the Docker action's two, and init says why.

The decisions are pure (``retrieval_gate.scaffold``); this module walks the tree, reads the files
that exist, writes atomically and runs the eval. It never replaces a file it finds with other
content unless ``--force``, and says what it kept."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from retrieval_gate import __version__, release_pin
from retrieval_gate.cli.app import CliProgress, app, console, err_console
from retrieval_gate.clock import now_iso
from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import write_text_atomic
from retrieval_gate.scaffold import plan as planning
from retrieval_gate.scaffold import texts
from retrieval_gate.scaffold.detect import Found, choose, detect
from retrieval_gate.scaffold.plan import KEEP, SAME, parse_action_ref
from retrieval_gate.scaffold.route import own_job_reason
from retrieval_gate.scaffold.texts import valid_image

if TYPE_CHECKING:
    from retrieval_gate.forge.base import Pipeline
    from retrieval_gate.scaffold.plan import ActionPin

SKIP_DIRS = frozenset({".git", ".retrieval-gate", "node_modules", ".venv", "venv", "env", "site-packages",
                       "__pycache__", "out", "build", "dist", "retrieval-gate-out", ".tox", ".mypy_cache"})
MAX_FILES = 50_000  # a listing, not an index: stop walking a huge tree early
MAX_DEPTH = 5


def list_files(root: Path) -> list[str]:
    """Relative POSIX paths of the regular files under ``root`` (hidden and tool folders skipped)."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        if len(rel.parts) >= MAX_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        out.extend((rel / name).as_posix() for name in sorted(files))
        if len(out) >= MAX_FILES:
            break
    return out


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, f"exists but cannot be read ({exc}); nothing was written")) from None


def current_branch(root: Path) -> str:
    """The branch checked out in ``root`` (a fresh ``git init`` has one before any commit), else main."""
    try:
        done = subprocess.run(["git", "-C", str(root), "symbolic-ref", "--short", "-q", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "main"
    name = done.stdout.strip()
    return name if done.returncode == 0 and name else "main"


def _pick(what: str, flag: str, candidates: list[Found]) -> Found:
    chosen = choose(candidates)
    if chosen is not None:
        return chosen
    listing = ", ".join(c.path for c in candidates[:8]) or "none found"
    if sys.stdin.isatty():
        answer = typer.prompt(f"Which is the {what}? (candidates: {listing})",
                              default=candidates[0].path if candidates else None)
        return Found(answer, "given at the prompt")
    raise UsageError(f"could not tell the {what} (candidates: {listing}); pass {flag} PATH")


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    except ValueError:  # another drive
        return path.resolve().as_posix()


def _pin(action_ref: str | None) -> ActionPin | None:
    if action_ref is not None:  # a version label only for the commit this release was built from
        known = release_pin.ACTION_REF is not None and parse_action_ref(release_pin.ACTION_REF, version="").sha \
            == parse_action_ref(action_ref, version="").sha
        return parse_action_ref(action_ref, version=(release_pin.ACTION_VERSION or f"v{__version__}") if known else "")
    if release_pin.ACTION_REF is not None:
        return parse_action_ref(release_pin.ACTION_REF, version=release_pin.ACTION_VERSION or f"v{__version__}")
    return None


@app.command("init")
def init_command(
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: detected: a BEIR folder, JSONL cards, a folder of Markdown cards)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (default: detected: cases.jsonl, golden*.jsonl, a BEIR folder)."),
    suite: str = typer.Option("default", "--suite", help="Suite name: the baseline is baselines/<suite>.json."),
    k: str | None = typer.Option(None, "--k", help="Cutoffs, comma-separated (default 1,3,5,10: then not written)."),
    action_ref: str | None = typer.Option(None, "--action-ref", help="The workflows' `uses:` pin, OWNER/REPO@<40-hex sha> (default: this release's commit, when it has one)."),
    branch: str | None = typer.Option(None, "--branch", help="The default branch the baseline is refreshed on (default: the checked-out branch, else main)."),
    directory: Path = typer.Option(Path("."), "--dir", help="The repository's root (default: the working folder)."),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="Run the first eval and write baselines/<suite>.json and its audit."),
    force: bool = typer.Option(False, "--force", help="Replace files that exist with other content (never done without it)."),
    ci: str = typer.Option("github", "--ci", help="github: the two workflows; another forge's name (gitlab, azure, …): its pipeline file instead, .gitlab-ci.yml, azure-pipelines.yml, … (docs/ci.md lists them)."),
    queries: Path | None = typer.Option(None, "--queries", help="A query log and no golden set yet: draft one to label (golden-draft/) and say what to run next."),
    image: str | None = typer.Option(None, "--image", help="--ci other than github: the retrieval-gate image pinned by its registry's digest, REGISTRY/NAME[:TAG]@sha256:<64 hex>."),
    retriever: str | None = typer.Option(None, "--retriever", help="The retriever to measure, written into a new retrieval-gate.yml (default: the config's, else dense). A retriever that needs your code or packages (python:, langchain:, llamaindex:, haystack:, chroma:, pgvector:, qdrant:) gets the Python-job workflow instead of the Docker action's."),
) -> None:
    """Set up this repository: retrieval-gate.yml, .github/workflows/retrieval.yml (+ the fork
    comment workflow; with --ci gitlab a .gitlab-ci.yml, with --ci azure an azure-pipelines.yml, with
    another forge's name its pipeline file instead: docs/ci.md), .gitignore lines, and the
    first baseline. A retriever that needs your own code or packages (python:, langchain:, …: the
    action's image does not hold them) gets the Python-job workflow instead (the wheel in your own
    job, installing your requirements; docs/action.md). Idempotent: a file that exists with
    other content is kept (say --force to replace it). Exit 2 when the KB or cases cannot be found
    or do not validate (nothing is written then)."""
    root = directory
    _check_names(root, suite=suite, branch=branch)
    ks = _parse_k(k)
    pipeline = _pipeline_choice(ci=ci, image=image, action_ref=action_ref)
    pin = _pin(action_ref) if pipeline is None else None
    located = _locate_inputs(root, kb=kb, cases=cases, queries=queries, suite=suite)
    if located is None:
        return  # no golden set yet: a draft from the query log was written instead
    kb_found, cases_found, from_config = located
    _validate_inputs(root, kb=kb_found, cases=cases_found)  # exit 2 before anything is written
    branch_name = branch or current_branch(root)
    pipeline_file = None if pipeline is None or image is None else (
        pipeline.path, pipeline.text(image=image, suite=suite, branch=branch_name, kb=kb_found.path,
                                     kb_is_file=(root / kb_found.path).is_file()))
    paths = [planning.CONFIG, planning.CALLER, planning.COMMENT, *_pipeline_paths(), planning.GITIGNORE]
    existing = {p: _read(root / p) for p in paths}
    measured = _measured_retriever(root, suite=suite, flag=retriever, existing=existing[planning.CONFIG],
                                   from_config=from_config, force=force,
                                   new_config=texts.config_text(suite=suite, kb=kb_found.path, kb_kind=kb_found.kind,
                                                                cases=cases_found.path, cases_kind=cases_found.kind,
                                                                k=ks, retriever=retriever))
    own_job = own_job_reason(measured)
    requirements = _requirements(root)
    # an --action-ref that is no release of this build (pin.version empty): the package from that commit
    package = (texts.python_job_package(version=__version__, repo=pin.repo, sha=pin.sha)
               if pin is not None and action_ref is not None and not pin.version
               else texts.python_job_package(version=__version__))
    python_job = (texts.python_job_workflow(version=__version__, branch=branch_name, suite=suite,
                                            requirements=requirements[0], package=package)
                  if own_job is not None and pipeline is None else None)
    steps = planning.plan(suite=suite, kb=kb_found.path, kb_kind=kb_found.kind, cases=cases_found.path,
                          cases_kind=cases_found.kind, k=ks, pin=pin, branch=branch_name,
                          existing=existing, force=force, pipeline=pipeline_file, retriever=retriever,
                          python_job=python_job)
    if from_config:  # its suite already names both: as it is
        steps = [planning.FileStep(s.path, planning.SAME, s.text) if s.path == planning.CONFIG else s for s in steps]
    for rel in [step.path for step in steps] + (list(_baseline_paths(suite)) if baseline else []):
        inside(root, rel)  # every path checked before anything is written
    written = _apply(root, steps, force=force)
    if own_job is not None:
        _say_why_the_python_job(root, ci=ci, reason=own_job, requirements=requirements, package=package,
                                comment_left=python_job is not None and existing[planning.COMMENT] is not None)
    else:
        _say_which_image(root, suite=suite)
        _say_what_was_not_written(ci=ci, pipeline=pipeline, image=image, pin=pin)
    if baseline:
        written += _first_baseline(root, suite=suite, force=force)
    if written:
        _print_commit(root, written=written, inputs=[kb_found.path, cases_found.path],
                      planned=[step.path for step in steps])
    else:
        _print_nothing_written(root, suite=suite, paths=paths)


def _locate_inputs(root: Path, *, kb: Path | None, cases: Path | None, queries: Path | None,
                   suite: str) -> tuple[Found, Found, bool] | None:
    """The KB and the golden set: as the config's suite names them (then ``True``: the config is kept
    as it is), as given, or detected. None when there is no golden set but a query log: a draft to
    label is written from it instead (``_start_from_log``)."""
    from retrieval_gate.settings import load_config

    config_path = root / planning.CONFIG
    if _read(config_path) is not None and kb is None and cases is None:
        config_file, _ = load_config(config_path, required=True)
        configured = config_file.suites.get(suite)
        if configured is not None and configured.kb and configured.cases:
            return Found(configured.kb, f"from {planning.CONFIG}"), Found(configured.cases, f"from {planning.CONFIG}"), True
    found = detect(list_files(root)) if kb is None or cases is None else None
    kb_found = (Found(_relative(kb, root), "given with --kb") if kb is not None
                else _pick("knowledge base", "--kb", found.kb if found else []))
    if queries is None and cases is None and found is not None and not found.cases and found.logs:
        queries = root / found.logs[0].path  # a KB and a query log, no golden set: start from the log
    if queries is not None:
        _start_from_log(root, kb=root / kb_found.path, log=queries, suite=suite)
        return None
    cases_found = (Found(_relative(cases, root), "given with --cases") if cases is not None
                   else _pick("golden set", "--cases", found.cases if found else []))
    return kb_found, cases_found, False


def _check_names(root: Path, *, suite: str, branch: str | None) -> None:
    """The folder, the suite's name and the branch's, each by its own rule (exit 2)."""
    from retrieval_gate.settings import suite_name_problem

    if not root.is_dir():
        raise UsageError(f"--dir {root}: not a folder")
    if (why := suite_name_problem(suite)) is not None:  # the action's own rule
        raise UsageError(f"--suite {suite!r} {why}")
    if branch is not None and (why := planning.branch_problem(branch)) is not None:  # git's own rule
        raise UsageError(f"--branch {branch!r} is not a branch name git takes: it {why}")


def _validate_inputs(root: Path, *, kb: Found, cases: Found) -> None:
    """Load the KB and the golden set as ``eval`` would (exit 2 on a problem) and say what was found."""
    from retrieval_gate.load.dataset import load_dataset

    case_set, loaded_kb = load_dataset(cases=root / cases.path, kb=root / kb.path)
    assert loaded_kb is not None
    n_gold = sum(1 for c in case_set.cases if c.gold)
    console.print(f"found: {kb.path} ({kb.kind}, {len(loaded_kb.card_ids)} cards) and "
                  f"{cases.path} ({cases.kind}, {len(case_set.cases)} cases, {n_gold} with gold); "
                  "every gold id resolves to a card", markup=False, highlight=False, soft_wrap=True)


def _measured_retriever(root: Path, *, suite: str, flag: str | None, existing: str | None, from_config: bool,
                        force: bool, new_config: str) -> str:
    """The retriever the suite will measure: ``--retriever`` when init writes the config (new, or
    ``--force``), else the config's own (read by name from its YAML, so a spec this build does not
    parse still picks the right workflow). ``--retriever`` against a kept config naming another one
    is exit 2, before anything is written."""
    config_is_new = not from_config and (existing is None or force or existing == new_config)
    if flag is not None:
        from retrieval_gate.retrieve.spec import parse_retriever_list

        parse_retriever_list(flag)  # an unknown spec: exit 2 before anything is written
    if config_is_new:
        return flag or "dense"
    configured = _configured_retriever(existing, suite=suite) or "dense"
    if flag is not None and flag.strip() != configured.strip():
        how = f"edit suites.{suite}.retriever in it" + ("" if from_config else ", or pass --force to write it anew")
        raise UsageError(f"--retriever {flag!r}: {planning.CONFIG} is kept as it is and its suite {suite!r} measures "
                         f"{configured!r}; {how}")
    return configured


def _configured_retriever(text: str | None, *, suite: str) -> str | None:
    """``suites.<suite>.retriever`` of the config's text as written (a list joined by commas), or None."""
    from retrieval_gate.load.yamltext import safe_load

    if text is None:
        return None
    try:
        data = safe_load(text, aliases=True)
    except Exception:  # an unreadable config is reported where it is loaded, not here
        return None
    value: object = data
    for key in ("suites", suite, "retriever"):
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value) if isinstance(value, str) else None


def _requirements(root: Path) -> tuple[str, bool]:
    """What the Python job installs beside retrieval-gate: ``-r requirements.txt`` when there is one,
    else ``.`` for a project with a pyproject.toml / setup.py, else ``-r requirements.txt`` still (the
    file to create); and whether it is there."""
    if (root / "requirements.txt").is_file():
        return "-r requirements.txt", True
    if (root / "pyproject.toml").is_file() or (root / "setup.py").is_file():
        return ".", True
    return "-r requirements.txt", False


def _say_why_the_python_job(root: Path, *, ci: str, reason: str, requirements: tuple[str, bool],
                            comment_left: bool, package: str) -> None:
    """Why the workflow is the Python job's, not the Docker action's (or, for another forge, that
    its pipeline runs the image, which lacks them)."""
    install, present = requirements
    if ci != "github":
        err_console.print(f"note: {reason}, which the retrieval-gate image does not hold: the {ci} pipeline runs the "
                          "image; run the wheel in a Python job of your own instead (docs/action.md, \"The wheel in "
                          "your own Python job\")", markup=False, highlight=False, soft_wrap=True)
        return
    console.print(f"{planning.CALLER}: the wheel in your own Python job, not the Docker action: {reason}, which the "
                  "action's image does not hold (examples/workflows/python-job.yml; docs/action.md, \"The wheel in "
                  f"your own Python job\"). It installs {package} and `{install}`.",
                  markup=False, highlight=False, soft_wrap=True)
    if not present:
        console.print("note: no requirements.txt here: create it with your retriever's packages (the workflow "
                      "installs `-r requirements.txt`)", markup=False, highlight=False, soft_wrap=True)
    if comment_left:
        console.print(f"note: {planning.COMMENT} is the Docker action's fork-comment workflow; the Python job does "
                      "not use it: delete it", markup=False, highlight=False, soft_wrap=True)


IMAGE_DEFAULT = "default"
IMAGE_FULL = "full"


def image_variant(*, model: str, retriever: str) -> tuple[str, str]:
    """Which of the action's two images a suite's ``model`` and ``retriever`` need, and why
    (docs/action.md, "Image variants"): ``default`` (torch-free; the bundled all-MiniLM-L6-v2 on the
    export checked when the image was built) or ``full`` (torch: any other model behind an
    embedding retriever — it has no checked export there — and the cross-encoder rerank). Pure."""
    from retrieval_gate.embed.resolve import BUNDLED_ALIASES, BUNDLED_NAME
    from retrieval_gate.retrieve.spec import parse_retriever_list

    reasons = []
    specs = parse_retriever_list(retriever)
    remote = model.strip().lower().startswith("openai:")  # an endpoint's model: no torch here either
    if not remote and model.strip().lower() not in BUNDLED_ALIASES and any(s.needs_embedder for s in specs):
        reasons.append(f"model {model.strip()!r} is not the bundled {BUNDLED_NAME} (no checked ONNX export)")
    reranked = [s.name for s in specs if s.rerank]
    if reranked:
        reasons.append(f"{', '.join(reranked)} runs the cross-encoder rerank (torch)")
    if reasons:
        return IMAGE_FULL, "; ".join(reasons)
    return IMAGE_DEFAULT, f"no torch needed: the bundled {BUNDLED_NAME} runs on its checked ONNX export"


def _say_which_image(root: Path, *, suite: str) -> None:
    """One line: the action's default (torch-free) image or its full variant, and why."""
    from retrieval_gate.settings import SuiteConfig, load_config

    configured = None
    if _read(root / planning.CONFIG) is not None:
        configured = load_config(root / planning.CONFIG, required=True)[0].suites.get(suite)
    configured = configured or SuiteConfig()
    variant, why = image_variant(model=configured.model, retriever=configured.retriever)
    if variant == IMAGE_FULL:
        line = (f"image: the full variant (with torch): {why}; the action's default image is torch-free - run this "
                "suite on the full image (tag suffix -full, pinned by digest; docs/action.md, \"Image variants\")")
    else:
        line = f"image: the action's default (torch-free): {why}"
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def _say_what_was_not_written(*, ci: str, pipeline: Pipeline | None, image: str | None,
                              pin: ActionPin | None) -> None:
    if pipeline is not None and image is None:
        err_console.print(f"{ci} pipeline: not written - pass --image REGISTRY/retrieval-gate:X.Y.Z@sha256:<digest> "
                          "(the image pinned by its digest; docs/ci.md)", markup=False, highlight=False, soft_wrap=True)
    elif pipeline is None and pin is None:
        err_console.print("workflows: not written - this build of retrieval-gate carries no release pin; rerun "
                          "with --action-ref OWNER/retrieval-gate@<commit sha> (docs/action.md, \"Using a commit\")",
                          markup=False, highlight=False, soft_wrap=True)


def _print_commit(root: Path, *, written: list[str], inputs: list[str], planned: list[str] | None = None) -> None:
    """The commands that commit what was written. The golden set, its "not relevant" sidecar and the
    KB go in the same commit when git does not have them yet (a golden set just made by ``label
    apply``): the baseline is measured on them; so do .gitignore, the draft folder an earlier
    ``init`` wrote (the draft, its page, stale.jsonl) and the files of this run's plan an earlier run
    wrote (``planned``: the config and workflows kept unchanged after a first baseline refused)."""
    from retrieval_gate.artifacts.label_sidecar import not_relevant_path

    kb, cases = inputs
    candidates = list(dict.fromkeys([*(planned or []), cases, _relative(not_relevant_path(root / cases), root), kb,
                                     planning.GITIGNORE, DRAFT_FOLDER]))
    written = written + [p for p in (_uncommitted(root, [p for p in candidates if (root / p).exists()]) or [])
                         if p not in written]
    console.print("commit it:", markup=False, soft_wrap=True)
    for line in planning.commit_commands(written):
        console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _print_nothing_written(root: Path, *, suite: str, paths: list[str]) -> None:
    """Nothing written: whether what an earlier run wrote is committed yet."""
    from retrieval_gate.settings import suite_baseline_path

    stem = suite_baseline_path(suite=suite).removesuffix(".json")
    ours = [*paths, *(f"{stem}{end}" for end in (".json", ".kb.json", ".audit.json"))]
    pending = _uncommitted(root, [p for p in ours if (root / p).is_file()])
    if pending is None:
        console.print("nothing written: every file was already there", markup=False, soft_wrap=True)
    elif pending:  # written by an earlier run, never committed: "already there" is not "committed"
        console.print("nothing written: every file was already there, but not committed yet - commit it:",
                      markup=False, soft_wrap=True)
        for line in planning.commit_commands(pending):
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    else:
        console.print("nothing to commit: every file was already there and is committed", markup=False, soft_wrap=True)


DRAFT_FOLDER = "golden-draft"


def _start_from_log(root: Path, *, kb: Path, log: Path, suite: str) -> None:
    """No golden set yet: draft one from the query log into golden-draft/ and print what to run next."""
    from retrieval_gate.forge.guard import refuse_user_code_here
    from retrieval_gate.golden.cases_draft import DraftOptions, draft_cases, pool_specs, write_draft_folder
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    # The store and the embedding cache (.retrieval-gate/) are ignored before the draft creates them.
    _apply(root, [planning.gitignore_step(_read(root / planning.GITIGNORE))], force=False)
    config_file, config_path = load_config(root / planning.CONFIG if (root / planning.CONFIG).is_file() else None)
    env = read_environment()
    settings = resolve_suite(config_file, suite=suite, config_path=config_path, overrides=SuiteOverrides(kb=str(kb)),
                             embed_exports=onnx_export_root(env))
    options = DraftOptions(log=log)
    refuse_user_code_here([spec for spec, _ in pool_specs(settings, pool=options.pool)], env=env, command="init")
    result = draft_cases(suite_config=settings, suite=suite, options=options,
                         progress=CliProgress(err_console))
    out = inside(root, DRAFT_FOLDER)
    for path in write_draft_folder(out, result=result, detect=options.detect):
        console.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"no golden set yet: drafted {len(result.entries)} queries of {log} to label. Next:", markup=False, soft_wrap=True)
    q = shlex.quote
    for line in (f"open {out / 'label.html'} (label with the keyboard, then Download labels)",
                 f"retrieval-gate label apply labels.jsonl --draft {q(str(out / 'draft.jsonl'))} "
                 f"--cases {q(str(root / 'cases.jsonl'))} --kb {q(str(kb))}",
                 f"retrieval-gate init --dir {q(str(root))} --kb {q(str(kb))} --cases {q(str(root / 'cases.jsonl'))}"):
        console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _uncommitted(root: Path, paths: list[str]) -> list[str] | None:
    """Which of ``paths`` (files, or folders: any file in it) are untracked or differ from the last
    commit (``git status``); None when git cannot tell (no git, not a repository)."""
    if not paths:
        return []
    try:
        done = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-z", "--untracked-files=all",
                               "--", *paths], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    listed = {entry[3:] for entry in done.stdout.split("\0") if len(entry) > 3}
    return [p for p in paths if p in listed or any(e.startswith(p.rstrip("/") + "/") for e in listed)]


def _pipelines() -> dict[str, Pipeline]:
    """The forges whose pipeline file ``init --ci <name>`` writes (``forge.base.Pipeline``), by name."""
    from retrieval_gate.forge import FORGES

    return {forge.name: forge.pipeline for forge in FORGES if forge.pipeline is not None}


def _pipeline_paths() -> list[str]:
    return [pipeline.path for pipeline in _pipelines().values()]


def _pipeline_choice(*, ci: str, image: str | None, action_ref: str | None) -> Pipeline | None:
    """The pipeline init writes instead of GitHub's workflows (``--ci gitlab``, ``azure``, …: one
    that pins the image), or None for ``--ci github``."""
    pipelines = _pipelines()
    if ci != "github" and ci not in pipelines:
        raise UsageError(f"--ci {ci!r}: expected one of {', '.join(['github', *pipelines])}")
    if ci == "github" and image is not None:
        raise UsageError(f"--image applies to --ci {' or '.join(pipelines)} (GitHub's workflows pin the action by "
                         "--action-ref)")
    if ci != "github" and action_ref is not None:
        raise UsageError(f"--action-ref applies to --ci github (the {ci} pipeline pins the image: --image)")
    if image is not None and not valid_image(image):
        raise UsageError(f"--image {image[:200]!r}: expected an image pinned by the digest its registry gave, "
                         "REGISTRY/NAME[:TAG]@sha256:<64 hex>, as docker inspect's RepoDigests shows after a push "
                         "(a tag can be moved; a local image id or name no runner can pull)")
    return pipelines.get(ci)


def _parse_k(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"--k {text!r}: expected positive integers, comma-separated (e.g. 1,3,5,10)") from None
    if not values or values[0] < 1:
        raise UsageError(f"--k {text!r}: expected positive integers, comma-separated (e.g. 1,3,5,10)")
    return values


def inside(root: Path, rel: str) -> Path:
    """``root / rel``, refused (UsageError, nothing written) when it resolves outside the repository
    root — through ``..`` or a symbolic link anywhere on the way (a symlinked ``.github/`` or
    ``baselines/``): everything init writes lands inside the repository, where ``git add`` finds it."""
    base = Path(os.path.realpath(root))
    real = Path(os.path.realpath(root / rel))
    if real != base and base not in real.parents:
        raise UsageError(f"{rel}: resolves to {real}, outside the repository {base} (a symbolic link on the way?); "
                         "nothing written there")
    return root / rel


def _apply(root: Path, steps: list, *, force: bool) -> list[str]:
    """Write the planned files (atomically); one line per file; the paths created or changed. A
    file that is a symbolic link is kept without ``--force`` (with it, the file it points to is
    written, when that lies inside the repository)."""
    changed = []
    for step in steps:
        if step.action == SAME:
            console.print(f"unchanged {step.path}", markup=False, highlight=False, soft_wrap=True)
            continue
        if step.action == KEEP:
            console.print(f"kept {step.path} ({step.why})", markup=False, highlight=False, soft_wrap=True)
            continue
        target = inside(root, step.path)
        if target.is_symlink() and not force:
            console.print(f"kept {step.path} (a symbolic link; --force writes to the file it points to)",
                          markup=False, highlight=False, soft_wrap=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text=step.text)
        verb = {"create": "wrote", "replace": "replaced", "append": "appended to"}[step.action]
        console.print(f"{verb} {step.path}", markup=False, highlight=False, soft_wrap=True)
        changed.append(step.path)
    return changed


def _baseline_paths(suite: str) -> tuple[str, ...]:
    """What the first eval writes: the baseline, its audit, the results and the store."""
    from retrieval_gate.settings import suite_baseline_path

    baseline = suite_baseline_path(suite=suite)
    return baseline, baseline.removesuffix(".json") + ".audit.json", "out/results.json", ".retrieval-gate/store"


def _first_baseline(root: Path, *, suite: str, force: bool) -> list[str]:
    """The first eval of the suite as configured → out/results.json, baselines/<suite>.json and
    baselines/<suite>.audit.json (kept when they exist, unless --force)."""
    from retrieval_gate.artifacts.baseline import write_baseline, write_kb_manifest
    from retrieval_gate.artifacts.run_files import write_audit, write_results
    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.evaluation.audit_suite import audit_suite
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.forge.guard import refuse_user_code_here
    from retrieval_gate.overrides import StoreOverrides, SuiteOverrides
    from retrieval_gate.render.terminal import print_results
    from retrieval_gate.score.kb_manifest import manifest_path
    from retrieval_gate.settings import load_config, resolve_suite


    rel_baseline, rel_audit, *_ = _baseline_paths(suite)
    if (root / rel_baseline).exists() and not force:
        console.print(f"kept {rel_baseline} (exists; --force evaluates again and replaces it)", markup=False,
                      highlight=False, soft_wrap=True)
        return []
    config_file, config_path = load_config(root / "retrieval-gate.yml", required=True)
    store = StoreOverrides(mode="persistent", path=str(root / ".retrieval-gate" / "store"))
    env = read_environment()
    suite_config = resolve_suite(config_file, suite=suite, overrides=SuiteOverrides(store=store), config_path=config_path,
                                 embed_exports=onnx_export_root(env))
    refuse_user_code_here(suite_config.retrievers, env=env, command="init")
    progress = CliProgress(err_console)
    try:
        all_results = run_evals(suite_config=suite_config, suite=suite, progress=progress, created_at=now_iso())
    finally:
        progress.close()
    results = all_results[suite_config.retrievers[0].name]
    write_results(root / "out" / "results.json", results=results)
    print_results(results, console=console)
    console.print("wrote out/results.json (ignored by git)", markup=False, soft_wrap=True)
    write_baseline(root / rel_baseline, baseline=update_baseline(baseline=None, results=results, sha=None, ref=None,
                                                        timestamp=now_iso()))
    console.print(f"wrote {rel_baseline}", markup=False, soft_wrap=True)
    written = [rel_baseline]
    if results.kb_cards is not None:  # the KB manifest beside it: the first PR's causes name edited cards
        rel_manifest = manifest_path(rel_baseline)
        write_kb_manifest(root / rel_baseline, cards=results.kb_cards, suite=suite)
        console.print(f"wrote {rel_manifest} (the KB's card hashes: which cards a PR edits)", markup=False,
                      soft_wrap=True)
        written.append(rel_manifest)
    write_audit(root / rel_audit, report=audit_suite(suite_config=suite_config))
    console.print(f"wrote {rel_audit} (the golden-set audit: `retrieval-gate audit --out out/audit.json` explains "
                  "it)", markup=False, soft_wrap=True)
    here = Path(os.path.abspath(root)) == Path.cwd()
    command = ("retrieval-gate compare --results out/results.json" if here else
               f"retrieval-gate compare --results {shlex.quote(str(root / 'out' / 'results.json'))} "
               f"--baseline {shlex.quote(str(root / rel_baseline))} --config {shlex.quote(str(root / 'retrieval-gate.yml'))}")
    console.print(f"check it: {command}  (against {rel_baseline})", markup=False, highlight=False, soft_wrap=True)
    return [*written, rel_audit]
