"""The files ``retrieval-gate init`` writes, as text: the config (only what differs from the
defaults, each key commented), the caller workflow (PR check, refresh on merge, manual rerun:
the reusable ``gate.yml``), the fork-comment workflow — or, for a retriever that needs the team's
own code or packages (``scaffold.route``), the Python-job workflow — and the ``.gitignore`` lines. Pure.

``@REPO@``, ``@SHA@``, ``@VERSION@`` and ``@BRANCH@`` are filled by :func:`fill`; the docs show the
same two workflows with ``<owner>/retrieval-gate`` and ``<sha>`` (a test keeps them equal)."""

from __future__ import annotations

import json
import re

MARKER = "# Written by retrieval-gate init"

# Checkouts keep no credentials; third-party actions are pinned by commit SHA (the version beside).
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683  # v4.2.2"
DOWNLOAD_ARTIFACT = "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093  # v4.3.0"

CALLER_WORKFLOW = f"""\
{MARKER}: the PR check (one sticky comment), the baseline
# refresh on a push to @BRANCH@, manual reruns. Each job of gate.yml takes only its part of these.
name: retrieval
on:
  pull_request:
  push:
    branches: [@BRANCH@]
  workflow_dispatch:
permissions: {{}}
jobs:
  retrieval:
    uses: @REPO@/.github/workflows/gate.yml@@SHA@  # @VERSION@
    permissions:
      contents: write       # only the baseline job, which runs no evaluation, writes baselines/
      pull-requests: write  # only the PR job comments
"""

SUITE_INPUT = """\
    with:
      suite: @SUITE@
"""

COMMENT_WORKFLOW = f"""\
{MARKER}: the sticky comment for pull requests from forks,
# whose own run gets a read-only token. It runs no code of the PR: the action validates the run's
# results.json / comparison.json and renders the comment itself (docs/action.md, "Fork pull requests").
name: retrieval-comment
on:
  workflow_run:  # zizmor: ignore[dangerous-triggers] the fork-comment pattern: no PR code runs, the data is validated
    workflows: [retrieval]
    types: [completed]
permissions: {{}}
jobs:
  comment:
    if: >-
      github.event.workflow_run.event == 'pull_request' &&
      (github.event.workflow_run.head_repository.full_name != github.repository ||
       github.event.workflow_run.actor.login == 'dependabot[bot]')
    runs-on: ubuntu-latest
    timeout-minutes: 15
    permissions:
      actions: read         # download the artifact of the other run
      contents: read        # the default branch's config
      pull-requests: write  # the sticky comment
    steps:
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - uses: {DOWNLOAD_ARTIFACT}
        with:
          name: retrieval-gate-pr
          path: pr-artifact
          run-id: ${{{{ github.event.workflow_run.id }}}}
          github-token: ${{{{ github.token }}}}
      - id: meta
        name: PR number (untrusted input - digits only) and whether the run compared
        run: |
          echo "number=$(tr -dc '0-9' < pr-artifact/pr-meta/pr_number | head -c 10)" >> "$GITHUB_OUTPUT"
          f=pr-artifact/retrieval-gate-out/comparison.json
          if [ -f "$f" ] && [ ! -L "$f" ]; then echo "comparison=$f" >> "$GITHUB_OUTPUT"; fi
      - uses: @REPO@@@SHA@  # @VERSION@
        with:
          mode: comment
          pr_number: ${{{{ steps.meta.outputs.number }}}}
          results_file: pr-artifact/retrieval-gate-out/results.json
          comparison_file: ${{{{ steps.meta.outputs.comparison }}}}
"""

SETUP_PYTHON = "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065  # v5.6.0"
UPLOAD_ARTIFACT = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02  # v4.6.2"
CPU_TORCH = "python -m pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0"

_INSTALL_YOURS = "Install (CPU torch first, then retrieval-gate and your retriever's packages)"
_INSTALL_ONLY = "Install retrieval-gate only (this job runs none of your code)"


def _python_steps(name: str, packages: str) -> str:
    """The steps each job of the Python-job workflow starts with: checkout (no credentials),
    Python 3.11, and the step ``name`` that installs CPU torch, then ``packages``."""
    return f"""\
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - uses: {SETUP_PYTHON}
        with:
          python-version: "3.11"
      - name: {name}
        run: |
          {CPU_TORCH}
          python -m pip install {packages}"""


# The wheel in the team's own Python job (examples/workflows/python-job.yml, with this build's version
# and the repository's requirements): for a retriever that imports the team's code or packages.
PYTHON_JOB_WORKFLOW = f"""\
{MARKER}: retrieval-gate from its wheel in your own
# Python job, because your retriever needs your code and packages, which the action's image does not
# hold (docs/action.md, "The wheel in your own Python job"). The jobs that run your code hold
# read-only tokens (+ pull-requests: write for the comment); the one job that writes the baseline
# installs only retrieval-gate and evaluates nothing.
name: retrieval
on:
  pull_request:
  push:
    branches: [@BRANCH@]
permissions: {{}}
env:
  INPUT_CONFIG: retrieval-gate.yml
  INPUT_SUITE: @SUITE@
  INPUT_BASELINE_DIR: baselines
  INPUT_OUT_DIR: retrieval-gate-out
  HF_HUB_OFFLINE: "1"
jobs:
  compare:
    if: github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    timeout-minutes: 30
    permissions:
      contents: read        # the base's baseline, read through the contents API
      pull-requests: write  # the sticky comment
    steps:
{_python_steps(_INSTALL_YOURS, "@PACKAGE@ @REQUIREMENTS@")}
      - name: retrieval-gate action (compare with the base's baseline, comment)
        env:
          INPUT_GITHUB_TOKEN: ${{{{ github.token }}}}
          INPUT_MODE: pr
        run: retrieval-gate action
  baseline-eval:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    timeout-minutes: 30
    permissions:
      contents: read
    steps:
{_python_steps(_INSTALL_YOURS, "@PACKAGE@ @REQUIREMENTS@")}
      - name: retrieval-gate action (evaluate only)
        env:
          INPUT_MODE: report
        run: retrieval-gate action
      - uses: {UPLOAD_ARTIFACT}
        with:
          name: retrieval-gate-baseline-results
          path: retrieval-gate-out/results.json
          if-no-files-found: error
          retention-days: 14
  baseline:
    needs: baseline-eval
    runs-on: ubuntu-latest
    timeout-minutes: 15
    permissions:
      contents: write  # write baselines/<suite>.json back to the default branch
    concurrency:
      group: retrieval-baseline-${{{{ github.ref }}}}
      cancel-in-progress: false
    steps:
{_python_steps(_INSTALL_ONLY, "@PACKAGE@")}
      - uses: {DOWNLOAD_ARTIFACT}
        with:
          name: retrieval-gate-baseline-results
          path: baseline-results
      - name: retrieval-gate action (write the baseline from the validated results; no eval)
        env:
          INPUT_GITHUB_TOKEN: ${{{{ github.token }}}}
          INPUT_MODE: write-baseline
          INPUT_RESULTS_FILE: baseline-results/results.json
        run: retrieval-gate action
"""

GITIGNORE_HEADER = "# retrieval-gate: the store, the action's checkout, local and CI outputs, the history site"
GITIGNORE_LINES = (".retrieval-gate/", "out/", "retrieval-gate-out/", "site/")  # site/: `history --out site`


def fill(template: str, *, repo: str = "", sha: str = "", version: str = "", branch: str = "main",
         suite: str = "default") -> str:
    if not version:  # a commit this build does not know: no version label beside it
        template = template.replace("  # @VERSION@", "")
    return (template.replace("@REPO@", repo).replace("@SHA@", sha).replace("@VERSION@", version)
            .replace("@BRANCH@", branch).replace("@SUITE@", suite))


def caller_workflow(*, repo: str, sha: str, version: str, branch: str, suite: str) -> str:
    """The caller workflow; the branch and the suite name, values a user typed, are written as
    YAML scalars (``_yaml_str``: quoted unless only safe characters), never pasted as YAML."""
    text = fill(CALLER_WORKFLOW, repo=repo, sha=sha, version=version, branch=_yaml_str(branch))
    if suite != "default":
        text += fill(SUITE_INPUT, suite=_yaml_str(suite))
    return text


def python_job_package(*, version: str, repo: str | None = None, sha: str | None = None) -> str:
    """What the Python job's ``pip install`` names: this release (``retrieval-gate==version``), or,
    given the commit of an ``--action-ref`` that is no release of this build, the package from that
    commit (``retrieval-gate @ git+https://github.com/REPO@SHA``: the README's install; ``repo`` and
    ``sha`` are ``plan.parse_action_ref``'s, safe characters only)."""
    if repo is not None and sha is not None:
        return f"retrieval-gate @ git+https://github.com/{repo}@{sha}"
    return f"retrieval-gate=={version}"


def python_job_workflow(*, version: str, branch: str, suite: str, requirements: str,
                        package: str | None = None) -> str:
    """The Python-job workflow: the wheel pinned to ``version`` (this build's) or ``package``
    (``python_job_package``), the team's ``requirements`` (what follows ``pip install`` after it:
    ``-r requirements.txt``, ``.``) in the jobs that run their retriever. Branch and suite are
    written as YAML scalars (``_yaml_str``)."""
    spec = package or f"retrieval-gate=={version}"
    spec = f'"{spec}"' if " " in spec else spec
    text = PYTHON_JOB_WORKFLOW.replace("@PACKAGE@", spec).replace("@REQUIREMENTS@", requirements)
    return text.replace("@BRANCH@", _yaml_str(branch)).replace("@SUITE@", _yaml_str(suite))


def comment_workflow(*, repo: str, sha: str, version: str) -> str:
    return fill(COMMENT_WORKFLOW, repo=repo, sha=sha, version=version)


def config_text(*, suite: str, kb: str, kb_kind: str, cases: str, cases_kind: str, k: list[int] | None,
                retriever: str | None = None) -> str:
    """``retrieval-gate.yml`` with only the keys that differ from the defaults (kb and cases have
    none), each commented. Paths are relative to the file (the repository root)."""
    width = max(len(kb), len(cases)) + 8
    lines = [
        f"{MARKER}. Every key left out has its default (docs/eval.md);",
        "# flags override these. The gate is off (report first): see docs/baseline.md to turn it on.",
        "suites:",
        f"  {_yaml_key(suite)}:",
        f"    {('kb: ' + _yaml_str(kb)).ljust(width)}  # the knowledge base: {kb_kind}",
        f"    {('cases: ' + _yaml_str(cases)).ljust(width)}  # the golden set: {cases_kind}",
    ]
    if k is not None:
        lines.append(f"    {('k: [' + ', '.join(str(v) for v in k) + ']').ljust(width)}  # the cutoffs measured")
    if retriever is not None and retriever.strip().lower() != "dense":
        line = f"    {('retriever: ' + _yaml_str(retriever)).ljust(width)}"
        lines.append(f"{line}  # the retriever measured (docs/retrievers.md)")
    return "\n".join(lines) + "\n"


# Plain scalars YAML (1.1, as PyYAML and the runner read it) would take for a boolean or null.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")


def _yaml_str(text: str) -> str:
    """A path or name as a YAML scalar: plain when it is only safe characters, else double-quoted
    (JSON's string syntax is YAML's double-quoted one; a text with a character that is not printable
    — a control, a line or paragraph separator, NEL — is written all in escapes)."""
    if text and set(text) <= _PLAIN and (text[0].isalpha() or text[0] == "_") and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=not text.isprintable())


def _yaml_key(text: str) -> str:
    return _yaml_str(text)


# REGISTRY/NAME[:TAG]@sha256:<64 hex> or NAMESPACE/NAME…: the digest a registry gave (docker inspect's
# RepoDigests after a push). A bare local name (``retrieval-gate@sha256:…``, an image id) no runner can pull.
DIGEST_RE = re.compile(r"^[a-z0-9][a-z0-9._:-]*(/[a-z0-9][a-z0-9._-]*)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                       r"@sha256:[0-9a-f]{64}$")


def valid_image(image: str) -> bool:
    """An image pinned by the digest of a registry: ``registry/name[:tag]@sha256:<64 hex>`` (the
    ``--image`` of every forge's pipeline, ``forge.base.Pipeline``)."""
    return bool(DIGEST_RE.match(image))


def quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's double-quoted one); a text with a
    character that is not printable (a control, U+2028, NEL: YAML would fold them) all in escapes.
    The forges' pipeline texts (``forge/*/ci.py``) write every user value through it."""
    return json.dumps(text, ensure_ascii=not text.isprintable())
