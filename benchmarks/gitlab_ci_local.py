"""The ``.gitlab-ci.yml`` that ``init --ci gitlab`` writes, run by a real runner implementation
(gitlab-ci-local 4.73, shell executor) against the fake GitLab API of tests/e2e over real HTTP.

One repository (three Markdown cards, four cases, a ``python:`` retriever, so no model is loaded);
the variables file gives the note token to every job and the write token only to jobs that declare
the environment ``retrieval-gate-baseline`` (gitlab-ci-local's environment scoping). Measured:

1. a push to main (both jobs): the refresh commits once; the evaluation job's process had no write token;
2. the same push again (a retried refresh of the same commit): no second commit;
3. a push whose refresh meets a concurrent push: refused once, merged again, one commit on top;
4. a merge request (one lost hit, one gold card edited), twice: one note, updated not duplicated;
   the merge request's ``python:`` retriever saw the note token and no write token.

The shell executor runs the jobs in the checkout itself (one after another; ``CI_PROJECT_DIR`` set to
it), so the artifacts the refresh takes are the files the evaluation job left there.

Usage: PYTHONPATH=src python benchmarks/gitlab_ci_local.py  (needs gitlab-ci-local and rsync on PATH)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.fake_gitlab import serve_fake_gitlab  # noqa: E402

NOTE, WRITE = "glpat-NOTEtoken0123456789abcdef", "glpat-WRITEtoken0123456789abcdef"
IMAGE = "registry.example/acme/retrieval-gate:0.0.0@sha256:" + "0" * 64
CARDS = {"refunds": "# Refunds\n\nA card refund shows up on the statement in 5 to 10 business days.\n",
         "password": "# Reset your password\n\nClick 'forgot password' on the login page.\n",
         "export": "# Export reports\n\nExport any report to CSV or PDF from the Reports page.\n"}
CASES = [{"id": "c1", "query": "When does a card refund appear?", "gold": ["refunds"]},
         {"id": "c2", "query": "I forgot my password", "gold": ["password"]},
         {"id": "c3", "query": "Export a report as CSV", "gold": ["export"]}]
RETRIEVER = '''import json, os
WORDS = {"refund": "refunds", "password": "password", "export": "export"}
LOSE = {LOSE}
def search(query, limit):
    with open(os.path.join(os.environ.get("CI_PROJECT_DIR", "."), "probe.json"), "w") as f:
        json.dump(sorted(k for k in os.environ if "TOKEN" in k), f)  # what user code can reach
    hit = [card for word, card in WORDS.items() if word in query.lower() and card not in LOSE]
    return hit + [c for c in ("refunds", "password", "export") if c not in hit]
'''


def sh(*args: str, cwd: Path) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, timeout=120).stdout


def setup(root: Path) -> None:
    (root / "kb").mkdir()
    for name, text in CARDS.items():
        (root / "kb" / f"{name}.md").write_text(text, encoding="utf-8")
    (root / "eval").mkdir()
    (root / "eval" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (root / "ret.py").write_text(RETRIEVER.replace("{LOSE}", "set()"), encoding="utf-8")
    (root / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb\n    cases: eval/cases.jsonl\n"
                                             "    retriever: python:ret.py:search\n    k: [1, 3]\n", encoding="utf-8")
    sh("git", "init", "-q", "-b", "main", cwd=root)
    sh("git", "remote", "add", "origin", "git@gitlab.example:acme/rag.git", cwd=root)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-m", "retrieval_gate", "init", "--no-baseline", "--ci", "gitlab", "--image",
                    IMAGE], cwd=root, check=True, env=env, capture_output=True, timeout=120)
    (root / ".gitlab-ci-local-variables.yml").write_text(
        f"RETRIEVAL_GATE_GITLAB_TOKEN: {NOTE}\nRETRIEVAL_GATE_GITLAB_WRITE_TOKEN:\n  values:\n"
        f"    retrieval-gate-baseline: {WRITE}\n", encoding="utf-8")
    (root / ".gitignore").write_text(".gitlab-ci-local/\nretrieval-gate-out/\n.retrieval-gate/\nprobe.json\n"
                                     ".gitlab-ci-local-variables.yml\n", encoding="utf-8")
    sh("git", "add", "-A", cwd=root)
    sh("git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "set up", cwd=root)


def pipeline(root: Path, fake: object, *variables: str) -> tuple[int, str]:
    args = ["gitlab-ci-local", "--force-shell-executor", "--variable", "GITLAB_CI=true",
            "--variable", f"CI_API_V4_URL={fake.api_url}", "--variable", f"CI_SERVER_URL={fake.url}",  # type: ignore[attr-defined]
            "--variable", "CI_PROJECT_PATH=acme/rag", "--variable", "CI_DEFAULT_BRANCH=main",
            "--variable", f"PYTHONPATH={REPO / 'src'}", "--variable", f"CI_PROJECT_DIR={root}",
            "--ignore-predefined-vars", "GITLAB_CI,CI_API_V4_URL,CI_SERVER_URL,CI_PROJECT_PATH,CI_DEFAULT_BRANCH,"
            "CI_PIPELINE_SOURCE,CI_PROJECT_DIR,CI_MERGE_REQUEST_IID,CI_MERGE_REQUEST_DIFF_BASE_SHA,"
            "CI_MERGE_REQUEST_PROJECT_PATH,CI_MERGE_REQUEST_SOURCE_PROJECT_PATH"]
    for variable in variables:
        args += ["--variable", variable]
    done = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def main() -> None:
    if shutil.which("gitlab-ci-local") is None or shutil.which("rsync") is None:
        raise SystemExit("needs gitlab-ci-local and rsync on PATH")
    report: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, serve_fake_gitlab(token=NOTE, write_token=WRITE) as fake:
        root = Path(tmp)
        setup(root)
        code, log = pipeline(root, fake, "CI_PIPELINE_SOURCE=push")
        probe = json.loads((root / "probe.json").read_text())
        report["1 push: exit"] = code
        report["1 push: commits"] = len(fake.requests("POST", r"/repository/commits$"))
        report["1 push: tokens the evaluation's user code saw"] = probe
        report["1 push: commit token"] = sorted({"write" if r.token == WRITE else "note"
                                                 for r in fake.requests("POST", r"/repository/commits$")})
        code, log2 = pipeline(root, fake, "CI_PIPELINE_SOURCE=push")
        report["2 same push again: exit"] = code
        report["2 same push again: commits in all"] = len(fake.requests("POST", r"/repository/commits$"))
        sh("git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "next", cwd=root)
        fake.before("POST", r"/repository/commits$", lambda: fake.commit("main", {"src/app.py": "x = 1\n"}))
        fake.before("POST", r"/repository/commits$", lambda: fake.commit("main", {"baselines/default.json":
                                                                                   fake.file("main", "baselines/default.json") + " "}))  # noqa: E501
        code, log3 = pipeline(root, fake, "CI_PIPELINE_SOURCE=push")
        statuses = [r.status for r in fake.requests("POST", r"/repository/commits$")]
        report["3 concurrent push: exit"] = code
        report["3 concurrent push: commit answers in all"] = statuses
        base = fake.branches["main"]
        sh("git", "checkout", "-q", "-b", "feature", cwd=root)
        (root / "ret.py").write_text(RETRIEVER.replace("{LOSE}", "{'export'}"), encoding="utf-8")  # one lost hit
        (root / "kb" / "refunds.md").write_text(CARDS["refunds"].replace("5 to 10", "3 to 5"), encoding="utf-8")
        sh("git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qam", "the MR", cwd=root)
        fake.add_merge_request(7, base_sha=base)
        mr = ("CI_PIPELINE_SOURCE=merge_request_event", "CI_MERGE_REQUEST_IID=7",
              f"CI_MERGE_REQUEST_DIFF_BASE_SHA={base}", "CI_MERGE_REQUEST_PROJECT_PATH=acme/rag",
              "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH=acme/rag")
        first, log4 = pipeline(root, fake, *mr)
        second, log5 = pipeline(root, fake, *mr)
        probe = json.loads((root / "probe.json").read_text())
        notes = fake.notes.get(7, [])
        report["4 merge request: exits"] = [first, second]
        report["4 merge request: notes"] = len(notes)
        report["4 merge request: note POSTs, PUTs"] = [len(fake.requests("POST", r"/notes$")),
                                                       len(fake.requests("PUT", r"/notes/\d+$"))]
        report["4 merge request: tokens the MR's python: retriever saw"] = probe
        body = notes[0]["body"] if notes else ""
        report["4 merge request: note names the lost case / the edited card"] = ["c3" in body, "refunds" in body]
        everything = "\n".join([log, log2, log3, log4, log5])
        report["tokens in any log"] = [NOTE in everything, WRITE in everything]
        report["GitHub words in the logs"] = [w for w in ("workflow_run", "job summary", "sticky comment on #")
                                             if w in everything]
        (Path(tempfile.gettempdir()) / "gitlab_ci_local.log").write_text(everything, encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
