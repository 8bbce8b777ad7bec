"""The ``.gitea/workflows/retrieval.yml`` ``retrieval-gate init --ci gitea`` writes (``Gitea.pipeline``;
Forgejo reads ``.gitea/workflows`` when a repository has no ``.forgejo/workflows``). Pure.

Two jobs; each checks out the repository (without credentials) and runs the retrieval-gate image,
pinned by its registry digest, as a ``docker://`` step (its entry point is ``retrieval-gate action``,
which reads the runner's variables; ``GITEA_ACTIONS`` is set in the step's env so a runner that does
not hand it to a container step still says where it is):

- ``retrieval`` evaluates and holds no token that can push: on a pull request it posts one comment
  with ``RETRIEVAL_GATE_GITEA_TOKEN`` (a bot's token, scopes ``write:issue`` and ``read:user``: it
  can comment and name its user, not push); on a push to the default branch it evaluates (mode
  ``report``); its ``retrieval-gate-out`` folder is kept as an artifact;
- ``refresh`` (a push to the default branch only) runs no evaluation: it downloads that artifact,
  checks it (mode ``write-baseline``) and commits the baseline, manifest and audit in one commit
  (``[skip ci]``) with ``RETRIEVAL_GATE_GITEA_WRITE_TOKEN``, mapped into this job alone (a separate
  job: a step's ``GITHUB_ENV`` cannot reach it).

The artifact actions are v3 (the artifact protocol Gitea and Forgejo serve), pinned by commit.
"""

from __future__ import annotations

from retrieval_gate.scaffold.texts import CHECKOUT, MARKER, quoted

UPLOAD_ARTIFACT = "actions/upload-artifact@a8a3f3ad30e3422c9c7b888a15615d19a852ae32  # v3.1.3"
DOWNLOAD_ARTIFACT = "actions/download-artifact@9bc31d5ccc31df68ecc42ccf4149144866c47d8a  # v3.0.2"
PATH = ".gitea/workflows/retrieval.yml"


def pipeline_text(*, image: str, suite: str, kb: str, kb_is_file: bool, branch: str) -> str:
    """The whole file (the KB's place changes nothing in it)."""
    suite_line = f"          INPUT_SUITE: {quoted(suite)}\n" if suite != "default" else ""
    step = f"docker://{image}"
    ref = "'" + f"refs/heads/{branch}".replace("'", "''") + "'"  # a string literal of the expressions
    refresh_if = quoted(f"github.event_name == 'push' && github.ref == {ref}")
    return f"""\
{MARKER}: the pull-request check (one comment) and,
# on a push to {quoted(branch)}, the baseline refresh in a job of its own that runs no evaluation.
# Secrets (Settings -> Actions -> Secrets; docs/ci.md, "Gitea and Forgejo", says what each can reach):
# - RETRIEVAL_GATE_GITEA_TOKEN: an access token of a bot account with read access to this repository,
#   scopes write:issue, read:repository and read:user (it posts the comment, and tells its own comment
#   by its user; it cannot push);
# - RETRIEVAL_GATE_GITEA_WRITE_TOKEN: a token that may push to {quoted(branch)} (scope write:repository).
# A pull request from a fork gets no secrets: the job passes, posts nothing, and the comment is in its
# artifact (retrieval-gate-out/comment.md).
name: retrieval
on:
  pull_request:
  push:
    branches: [{quoted(branch)}]

permissions:  # the jobs use no job token (GITEA_TOKEN): their own secrets post and push
  contents: read

jobs:
  retrieval:
    runs-on: ubuntu-latest
    steps:
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - uses: {quoted(step)}
        env:
          GITEA_ACTIONS: "true"
          RETRIEVAL_GATE_GITEA_TOKEN: ${{{{ secrets.RETRIEVAL_GATE_GITEA_TOKEN }}}}
          INPUT_AUDIT: "true"
          INPUT_MODE: ${{{{ github.event_name == 'push' && 'report' || 'auto' }}}}
{suite_line}      - uses: {UPLOAD_ARTIFACT}
        if: always()
        with:
          name: retrieval-gate-out
          path: retrieval-gate-out

  refresh:
    needs: retrieval
    if: {refresh_if}
    runs-on: ubuntu-latest
    steps:
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - uses: {DOWNLOAD_ARTIFACT}
        with:
          name: retrieval-gate-out
          path: retrieval-gate-in
      - uses: {quoted(step)}
        env:
          GITEA_ACTIONS: "true"
          RETRIEVAL_GATE_GITEA_WRITE_TOKEN: ${{{{ secrets.RETRIEVAL_GATE_GITEA_WRITE_TOKEN }}}}
          INPUT_MODE: write-baseline
          INPUT_RESULTS_FILE: retrieval-gate-in/results.json
          INPUT_AUDIT: "true"
{suite_line}"""
