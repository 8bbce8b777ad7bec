"""The ``.gitlab-ci.yml`` ``retrieval-gate init --ci gitlab`` writes (``GitLab.pipeline``). Pure.

Two jobs in the retrieval-gate image pinned by its registry digest, both running the same entry
point as the GitHub Action (``retrieval-gate action``, which reads GitLab's predefined variables):

- ``retrieval`` evaluates, and holds no token that can write:
  on a merge-request pipeline it is judged by the baseline, KB manifest and gate settings read at
  the merge request's base (its ``diff_refs``, through the API), posts one note with
  ``RETRIEVAL_GATE_GITLAB_TOKEN`` (Reporter: notes only; absent → the note is in the artifacts) and
  gives the merge-request widget its JUnit report; on a push to the default branch it evaluates
  (mode ``report``) and keeps ``results.json`` as an artifact;
- ``retrieval-refresh`` (default branch only) runs no evaluation: it takes that job's artifacts,
  checks them (mode ``write-baseline``) and commits the baseline, manifest and audit in one
  commit (``[skip ci]``) with ``RETRIEVAL_GATE_GITLAB_WRITE_TOKEN``, a protected variable scoped to
  the environment only this job declares (``ENVIRONMENT``).

The store (``.retrieval-gate/``) is cached keyed by the KB when it is one file, never by the config
file: a gate-only edit keeps the store warm, and what the index depends on (model, chunking) is
checked by the store itself; the embedding cache inside it is keyed by each chunk's text, so a
changed KB re-embeds only the chunks that changed.
"""

from __future__ import annotations

import json

from retrieval_gate.scaffold.texts import MARKER, quoted

ENVIRONMENT = "retrieval-gate-baseline"
TOKEN_HELP = f"""\
# Tokens (Settings → CI/CD → Variables; docs/ci.md says what each can reach):
# - RETRIEVAL_GATE_GITLAB_TOKEN: masked; a project access token, role Reporter, scope api (it may
#   post the merge-request note, not push);
# - RETRIEVAL_GATE_GITLAB_WRITE_TOKEN: masked, protected, environment scope {ENVIRONMENT}
#   (declared by retrieval-refresh alone; protect that environment too); role Developer, scope api."""


def gitlab_ci(*, image: str, suite: str, kb: str, kb_is_file: bool) -> str:
    key = (f"key:\n      files: [{quoted(kb)}]\n      prefix: retrieval-gate-store" if kb_is_file
           else "key: retrieval-gate-store")
    suite_line = f"    INPUT_SUITE: {quoted(suite)}\n" if suite != "default" else ""
    return f"""\
{MARKER}: the merge-request check (one note, the JUnit
# report in the merge-request widget) and, on a push to the default branch, the baseline refresh
# in a job of its own that runs no evaluation.
{TOKEN_HELP}
# A fork's merge request gets no token (and a protected one is withheld from a merge request whose
# source branch is unprotected): the job passes, posts nothing, says so in its log, and the note
# is in its artifacts (retrieval-gate-out/comment.md). docs/ci.md says what each token can reach.
retrieval:
  image:
    name: {quoted(image)}
    entrypoint: [""]
  variables:
    INPUT_AUDIT: "true"
{suite_line}  script:
    - retrieval-gate action
  cache:
    {key}
    paths: [.retrieval-gate/]
  artifacts:
    when: always
    expire_in: 30 days
    paths: [retrieval-gate-out/]
    reports:
      junit: retrieval-gate-out/junit.xml
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"
      variables:
        INPUT_MODE: report

retrieval-refresh:
  image:
    name: {quoted(image)}
    entrypoint: [""]
  needs:
    - job: retrieval
      artifacts: true
  environment:
    name: {ENVIRONMENT}
  variables:
    INPUT_MODE: write-baseline
    INPUT_RESULTS_FILE: retrieval-gate-out/results.json
    INPUT_AUDIT: "true"
    GIT_DEPTH: "1"
{suite_line}  script:
    - retrieval-gate action
  resource_group: {ENVIRONMENT}
  artifacts:
    when: always
    expire_in: 30 days
    paths: [retrieval-gate-out/]
    reports:
      junit: retrieval-gate-out/junit.xml
  rules:
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"
"""


# --- The pages job ----------------------------------------------------------------------------
# The ``pages`` job of the ``.gitlab-ci.yml`` that ``retrieval-gate init --ci gitlab`` writes: the
# history site (``retrieval-gate history``, docs/history.md) published to GitLab Pages after the
# baseline refresh. Pure.
#
# The refresh pushes the baseline with ``[skip ci]``, so the site is built in the same pipeline,
# after the ``retrieval-refresh`` job: with the whole history (``GIT_DEPTH: 0``; a shallow clone is exit 2)
# and the branch's tip fetched, which holds the commit that job just pushed. GitLab publishes the
# job's ``public/`` artifact. The job runs in the same image, pinned by digest; it needs no token
# beyond the job's own (a read of the project's repository).
#
# ``pipeline_text`` appends it after the ``retrieval-refresh`` job.

def gitlab_pages_job(*, image: str, config: str = "retrieval-gate.yml") -> str:
    """The ``pages`` job's YAML text, to append to the ``.gitlab-ci.yml`` (module docstring)."""
    image_q, config_q = json.dumps(image, ensure_ascii=False), json.dumps(config, ensure_ascii=False)
    return f"""\
# The history site (retrieval-gate history: every suite's baseline over its commits, a badge per
# suite) on GitLab Pages, after the baseline refresh on the default branch.
pages:
  image:
    name: {image_q}
    entrypoint: [""]
  needs: [retrieval-refresh]
  variables:
    GIT_DEPTH: "0"
  script:
    - git fetch --quiet origin "$CI_DEFAULT_BRANCH"
    - git checkout --quiet --detach FETCH_HEAD
    - retrieval-gate history --all --config {config_q} --out public
  artifacts:
    paths: [public]
    expire_in: 30 days
  rules:
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"
"""


def pipeline_text(*, image: str, suite: str, kb: str, kb_is_file: bool, branch: str) -> str:
    """The whole file: the two jobs, then the history site's ``pages`` job (docs/history.md,
    "Publishing"); the refresh runs on the project's default branch, whatever ``branch`` says."""
    return gitlab_ci(image=image, suite=suite, kb=kb, kb_is_file=kb_is_file) + gitlab_pages_job(image=image)
