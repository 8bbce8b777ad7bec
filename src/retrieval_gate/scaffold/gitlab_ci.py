"""The ``.gitlab-ci.yml`` job ``retrieval-gate init --ci gitlab`` writes. Pure.

One job, ``retrieval``, in the retrieval-gate image pinned by digest, running the same entry point
as the GitHub Action (``retrieval-gate action``, which reads GitLab's predefined variables):

- on a merge-request pipeline: eval, judged by the baseline, KB manifest and gate settings read at
  the merge request's base through the API, one note on the merge request, the JUnit report for
  the merge-request widget;
- on a push to the default branch: the baseline, manifest and audit refreshed in one commit
  (``[skip ci]``, so that commit starts no pipeline);
- the store (``.retrieval-gate/``) cached, keyed by the config file (the settings) and, where the
  KB is one file, by the KB too; the embedding cache inside it is keyed by each chunk's text, so a
  changed KB re-embeds only the chunks that changed.
"""

from __future__ import annotations

import json
import re

from retrieval_gate.scaffold.texts import MARKER

DIGEST_RE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
TOKEN_HELP = ("Settings → CI/CD → Variables: RETRIEVAL_GATE_GITLAB_TOKEN, a project access token with the api "
              "scope (Reporter may comment, Developer may push the baseline), masked")


def valid_image(image: str) -> bool:
    """``registry/name[:tag]@sha256:<64 hex>``: an image pinned by its digest."""
    return bool(DIGEST_RE.match(image))


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's double-quoted one)."""
    return json.dumps(text, ensure_ascii=False)


def gitlab_ci(*, image: str, suite: str, kb: str, kb_is_file: bool) -> str:
    key_files = ["retrieval-gate.yml", kb] if kb_is_file else ["retrieval-gate.yml"]
    suite_line = f"    INPUT_SUITE: {_q(suite)}\n" if suite != "default" else ""
    return f"""\
{MARKER}: the merge-request check (one note, the JUnit
# report in the merge-request widget) and the baseline refresh on a push to the default branch.
# The token: {TOKEN_HELP}.
# A fork's merge-request pipeline gets no token: it posts nothing and says so in the job log.
retrieval:
  image:
    name: {_q(image)}
    entrypoint: [""]
  variables:
    INPUT_AUDIT: "true"
{suite_line}  script:
    - retrieval-gate action
  cache:
    key:
      files: [{", ".join(_q(f) for f in key_files)}]
      prefix: retrieval-gate-store
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
"""
