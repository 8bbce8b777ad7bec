"""The ``pages`` job of the ``.gitlab-ci.yml`` that ``retrieval-gate init --ci gitlab`` writes: the
history site (``retrieval-gate history``, docs/history.md) published to GitLab Pages after the
baseline refresh. Pure.

The refresh pushes the baseline with ``[skip ci]``, so the site is built in the same pipeline,
after the ``retrieval-refresh`` job: with the whole history (``GIT_DEPTH: 0``; a shallow clone is exit 2)
and the branch's tip fetched, which holds the commit that job just pushed. GitLab publishes the
job's ``public/`` artifact. The job runs in the same image, pinned by digest; it needs no token
beyond the job's own (a read of the project's repository).

To be wired into ``scaffold/gitlab_ci.py``'s ``gitlab_ci`` (appended after the ``retrieval-refresh`` job)."""

from __future__ import annotations

import json


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
