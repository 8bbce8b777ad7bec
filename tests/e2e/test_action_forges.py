"""The same pull / merge request through each forge, with the real engine (a ``python:``
retriever, so no model is loaded) and each forge's real adapter against its fake API over HTTP:
one lost hit and one edited gold card. Each forge: the refresh on the default branch commits once
(a retried one commits nothing), the PR gets one comment / note / thread that a rerun updates,
which names the lost case and the edited card, and the evaluation's user code (the retriever,
probing its own process) never sees a token that writes the default branch."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.publish import engine as engine_module
from tests.e2e import test_action_azure as az
from tests.e2e import test_action_gitlab as gl
from tests.e2e.action_harness import TOKEN as GH_TOKEN
from tests.e2e.action_harness import ActionWorld
from tests.e2e.fake_azure import serve_fake_azure
from tests.e2e.fake_github import serve_fake_github
from tests.e2e.fake_gitlab import serve_fake_gitlab

CARDS = {"refunds": "# Refunds\n\nA card refund shows up on the statement in 5 to 10 business days.\n",
         "password": "# Reset your password\n\nClick 'forgot password' on the login page.\n",
         "export": "# Export reports\n\nExport any report to CSV or PDF from the Reports page.\n"}
CASES = [{"id": "c1", "query": "When does a card refund appear?", "gold": ["refunds"]},
         {"id": "c2", "query": "I forgot my password", "gold": ["password"]},
         {"id": "c3", "query": "Export a report as CSV", "gold": ["export"]}]
RETRIEVER = '''import json, os
WORDS = {"refund": "refunds", "password": "password", "export": "export"}
LOSE = %s
def search(query, limit):
    with open("probe.json", "w") as f:
        json.dump(sorted(k for k in os.environ if "TOKEN" in k), f)
    hit = [card for word, card in WORDS.items() if word in query.lower() and card not in LOSE]
    return hit + [c for c in ("refunds", "password", "export") if c not in hit]
'''
WRITE_VARIABLES = {"RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", "RETRIEVAL_GATE_AZURE_WRITE_TOKEN"}


def _workspace(root: Path, *, pr: bool) -> None:
    (root / "kb").mkdir(exist_ok=True)
    for name, text in CARDS.items():
        edited = text.replace("5 to 10", "3 to 5") if pr and name == "refunds" else text
        (root / "kb" / f"{name}.md").write_text(edited, encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (root / "ret.py").write_text(RETRIEVER % ("{'export'}" if pr else "set()"), encoding="utf-8")
    suite = "suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n    k: [1, 3]\n"
    (root / "retrieval-gate.yml").write_text(suite + "    retriever: python:ret.py:search\n", encoding="utf-8")
    # the refresh job's config: the job that holds the write token refuses a suite naming a python:
    # retriever (docs/ci.md), so it is given one that names none (it loads no retriever either way)
    (root / "refresh.yml").write_text(suite, encoding="utf-8")


def _probe(root: Path) -> set[str]:
    return set(json.loads((root / "probe.json").read_text(encoding="utf-8")))


class Forge:
    """One forge's fake, its job runner, and how to read what was posted and committed."""

    def __init__(self, name: str, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], fake: Any, engine: Any) -> None:
        self.name, self.fake = name, fake
        if name == "github":
            self.job: Any = ActionWorld(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, github=fake,
                                        engine=engine)
        elif name == "gitlab":
            self.job = gl.GitLabJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, gitlab=fake,
                                    engine=engine)
        else:
            self.job = az.AzureJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, azure=fake,
                                   engine=engine)
        self.root: Path = self.job.workspace

    def refresh(self) -> tuple[int, str]:
        if self.name == "github":
            run = self.job.run(event_name="push", event=self.job.push_event(ref="refs/heads/main"),
                               ref="refs/heads/main", sha="a" * 40, inputs={"audit": "false"})
            return run.exit_code, run.stdout + run.stderr
        code, out, err = self.job.refresh(config="refresh.yml")
        return code, out + err

    def commits(self) -> int:
        if self.name == "github":
            return len(self.fake.requests("PATCH", r"/git/refs/heads/main$"))
        if self.name == "gitlab":
            return len([r for r in self.fake.requests("POST", r"/repository/commits$") if r.status == 201])
        return len([r for r in self.fake.requests("POST", r"/pushes$") if r.status == 201])

    def head(self) -> str:
        return self.fake.branches["main"]

    def pull_request(self, base: str) -> tuple[int, str]:
        if self.name == "github":
            if 7 not in getattr(self.fake, "pulls", {}):
                self.fake.add_pull(7, head_sha="f" * 40, base_sha=base)
            run = self.job.run(event_name="pull_request", event=self.job.pr_event(7, base_sha=base),
                               ref="refs/pull/7/merge", sha="f" * 40, inputs={"audit": "false"})
            return run.exit_code, run.stdout + run.stderr
        if self.name == "gitlab":
            code, out, err = self.job.merge_request(7, base_sha=base)
        else:
            code, out, err = self.job.pull_request(7, target=base)
        return code, out + err

    def posted(self) -> list[str]:
        if self.name == "github":
            return [c["body"] for c in self.fake.comments.get(7, [])]
        if self.name == "gitlab":
            return [n["body"] for n in self.fake.notes.get(7, [])]
        return [t["comments"][0]["content"] for t in self.fake.threads.get(7, [])]

    def writes_of_the_comment(self) -> tuple[int, int]:
        if self.name == "github":
            return len(self.fake.requests("POST", r"/comments$")), len(self.fake.requests("PATCH", r"/comments/\d+$"))
        if self.name == "gitlab":
            return len(self.fake.requests("POST", r"/notes$")), len(self.fake.requests("PUT", r"/notes/\d+$"))
        return len(self.fake.requests("POST", r"/threads$")), len(self.fake.requests("PATCH", r"/comments/\d+$"))


SERVERS: dict[str, Callable[[], Any]] = {
    "github": lambda: serve_fake_github(token=GH_TOKEN),
    "gitlab": lambda: serve_fake_gitlab(token=gl.TOKEN, write_token=gl.WRITE_TOKEN),
    "azure": lambda: serve_fake_azure(token=az.TOKEN, write_token=az.WRITE_TOKEN),
}


@pytest.fixture(params=sorted(SERVERS))
def forge(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[Forge]:
    real = engine_module.real_engine()
    with SERVERS[request.param]() as fake:
        yield Forge(request.param, tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, fake=fake, engine=real)


def test_the_same_pull_request_through_each_forge(forge: Forge) -> None:
    _workspace(forge.root, pr=False)
    code, log = forge.refresh()
    assert code == 0, log
    assert forge.commits() == 1
    if forge.name != "github":  # GitHub's token reach is the workflow's permissions (docs/action.md)
        assert not _probe(forge.root) & WRITE_VARIABLES  # the evaluation's user code: no write token
    again, log = forge.refresh()
    assert again == 0, log
    assert forge.commits() == 1  # a retried refresh of the same commit writes nothing
    base = forge.head()

    _workspace(forge.root, pr=True)  # one lost hit (c3), one gold card edited (refunds)
    first, log1 = forge.pull_request(base)
    second, log2 = forge.pull_request(base)
    assert first == second == 0, log1 + log2
    (body,) = forge.posted()  # one comment / note / thread …
    assert forge.writes_of_the_comment() == (1, 1)  # … created once, then updated
    assert "**c3**" in body and "gold export 1 → 3" in body  # the lost case (hit@1) …
    assert '1 card edited (refunds "Refunds")' in body  # … and the edited card, from the base's manifest
    assert not _probe(forge.root) & WRITE_VARIABLES
    for secret in (GH_TOKEN, gl.TOKEN, gl.WRITE_TOKEN, az.TOKEN, az.WRITE_TOKEN):
        assert secret not in log1 + log2 + body
