"""What ``retrieval-gate init`` does to each file, decided before anything is written. Pure.

The rule (idempotent, never destructive): a file that is missing is created; one that already
holds exactly the text is left alone; one that holds something else is kept as it is — even a file
init wrote earlier, since the user may have edited it — unless ``force``. ``.gitignore`` is the
exception: its missing lines are appended, nothing of it is ever removed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from retrieval_gate.errors import UsageError
from retrieval_gate.scaffold import texts

CREATE, SAME, KEEP, REPLACE, APPEND = "create", "unchanged", "kept", "replace", "append"
CONFIG = "retrieval-gate.yml"
CALLER = ".github/workflows/retrieval.yml"
COMMENT = ".github/workflows/retrieval-comment.yml"
GITIGNORE = ".gitignore"

_ACTION_REF = re.compile(r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@(?P<sha>[0-9a-f]{40})")


@dataclass(frozen=True)
class ActionPin:
    repo: str  # owner/retrieval-gate
    sha: str  # the commit, 40 hex digits
    version: str  # the comment beside the pin


def parse_action_ref(text: str, *, version: str) -> ActionPin:
    """``OWNER/REPO@SHA`` (a full commit SHA: a tag can be moved) → the pin; exit 2 otherwise."""
    m = _ACTION_REF.fullmatch(text.strip())
    if m is None:
        raise UsageError(f"--action-ref {text!r}: expected OWNER/REPO@SHA with the full 40-hex commit SHA "
                         "(e.g. acme/retrieval-gate@" + "0" * 40 + "); a tag or branch can be moved")
    return ActionPin(repo=m["repo"], sha=m["sha"], version=version)


# git-check-ref-format(1)'s rules for refs/heads/NAME, as ``git check-ref-format --branch`` applies them.
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def branch_problem(name: str) -> str | None:
    """Why ``name`` is not a branch name git accepts (``git check-ref-format --branch``), or None.
    Also refused: a character that is not printable (U+2028, NEL, …: YAML reads them as line breaks),
    which git would take."""
    bad = _REF_FORBIDDEN.search(name)
    if not name:
        return "is empty"
    if bad is not None:
        return f"holds {bad.group()!r} (no control character, space, ~ ^ : ? * [ \\, '..', '@{{' or '//')"
    if not name.isprintable():
        return "holds a character that is not printable"
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")) or name == "HEAD":
        return "may not start with '-' or '/', end with '/', '.' or '.lock', or be 'HEAD'"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "has a part that starts with '.' or ends with '.lock'"
    return None


@dataclass(frozen=True)
class FileStep:
    path: str  # relative to the repository root, POSIX
    action: str  # create | unchanged | kept | replace | append
    text: str  # what is written (for append: the whole new file)
    why: str = ""


def decide(*, path: str, wanted: str, existing: str | None, force: bool) -> FileStep:
    if existing is None:
        return FileStep(path, CREATE, wanted)
    if existing == wanted:
        return FileStep(path, SAME, wanted)
    if force:
        return FileStep(path, REPLACE, wanted, "--force")
    return FileStep(path, KEEP, existing, "exists with other content; --force replaces it")


def gitignore_step(existing: str | None) -> FileStep:
    """Append the lines ``.gitignore`` lacks (a line counts as present with or without a leading
    ``/``); never rewrite what is there."""
    have = {line.strip().lstrip("/") for line in (existing or "").splitlines()}
    missing = [line for line in texts.GITIGNORE_LINES if line not in have and line.rstrip("/") not in have]
    if not missing:
        return FileStep(GITIGNORE, SAME, existing or "")
    head = existing or ""
    if head and not head.endswith("\n"):
        head += "\n"
    block = ("\n" if head else "") + texts.GITIGNORE_HEADER + "\n" + "".join(f"{line}\n" for line in missing)
    return FileStep(GITIGNORE, CREATE if existing is None else APPEND, head + block)


def plan(*, suite: str, kb: str, kb_kind: str, cases: str, cases_kind: str, k: list[int] | None,
         pin: ActionPin | None, branch: str, existing: Mapping[str, str | None], force: bool,
         pipeline: tuple[str, str] | None = None, retriever: str | None = None,
         python_job: str | None = None) -> list[FileStep]:
    """Every file init writes, in the order it reports them. ``existing[path]`` is the file's text
    (None: absent). ``pipeline``: another forge's pipeline file, ``(path, text)`` (``--ci gitlab``,
    ``azure``, …: the forge's ``Pipeline``; the shell plans none without an image pinned by digest);
    else ``python_job``: the Python-job workflow's text (``texts.python_job_workflow``: a retriever
    the action's image cannot run, ``scaffold.route``) as the one workflow, needing no pin; else
    GitHub's two workflows, not planned without a ``pin`` (the shell says why either way). A
    ``branch`` git would not take is exit 2 (``branch_problem``): it is written into YAML.
    ``retriever``: written into the config when given (not ``dense``)."""
    problem = branch_problem(branch)
    if problem is not None:
        raise UsageError(f"--branch {branch!r} is not a branch name git takes: it {problem}")
    wanted = {CONFIG: texts.config_text(suite=suite, kb=kb, kb_kind=kb_kind, cases=cases, cases_kind=cases_kind, k=k,
                                        retriever=retriever)}
    if pipeline is not None:
        path, text = pipeline
        wanted[path] = text
    elif python_job is not None:
        wanted[CALLER] = python_job
    elif pin is not None:
        wanted[CALLER] = texts.caller_workflow(repo=pin.repo, sha=pin.sha, version=pin.version, branch=branch,
                                               suite=suite)
        wanted[COMMENT] = texts.comment_workflow(repo=pin.repo, sha=pin.sha, version=pin.version)
    steps = [decide(path=path, wanted=text, existing=existing.get(path), force=force) for path, text in wanted.items()]
    steps.append(gitignore_step(existing.get(GITIGNORE)))
    return steps


def commit_commands(paths: list[str]) -> list[str]:
    """The three commands that commit what init wrote."""
    quoted = " ".join(p if re.fullmatch(r"[\w./-]+", p) else "'" + p.replace("'", "'\\''") + "'" for p in paths)
    return [f"git add {quoted}", 'git commit -m "Measure retrieval with retrieval-gate"', "git push"]
