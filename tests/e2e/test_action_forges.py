"""The same pull / merge request through each forge of the registry (``forge.FORGES``: each one's
kit in ``tests/e2e/kits/<name>.py``), with the real engine (a ``python:``
retriever, so no model is loaded) and each forge's real adapter against its fake API over HTTP:
one lost hit and one edited gold card. Each forge: the refresh on the default branch commits once
(a retried one commits nothing), the PR gets one comment / note / thread that a rerun updates,
which names the lost case and the edited card, and the evaluation's user code (the retriever,
probing its own process) never sees a token that writes the default branch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from types import ModuleType

import pytest

from retrieval_gate.forge import FORGES
from retrieval_gate.publish import engine as engine_module
from tests.e2e.kits import Kit

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


def _kit_module(name: str) -> ModuleType:
    return import_module(f"tests.e2e.kits.{name}")


WRITE_VARIABLES = {variable for forge in FORGES if (variable := _kit_module(forge.name).Kit.write_variable)}
SECRETS = tuple(secret for forge in FORGES for secret in _kit_module(forge.name).SECRETS)


@pytest.fixture(params=[forge.name for forge in FORGES])
def forge(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[Kit]:
    kit = _kit_module(request.param)
    real = engine_module.real_engine()
    with kit.serve() as fake:
        yield kit.Kit(fake=fake, tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, engine=real)


def test_the_same_pull_request_through_each_forge(forge: Kit) -> None:
    _workspace(forge.root, pr=False)
    code, log = forge.refresh()
    assert code == 0, log
    assert forge.commits() == 1
    if forge.write_variable is not None:  # GitHub's token reach is the workflow's permissions (docs/action.md)
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
    for secret in SECRETS:
        assert secret not in log1 + log2 + body


def test_a_marker_someone_else_wrote_is_never_adopted_when_the_token_s_identity_is_refused(forge: Kit) -> None:
    """A pull request's author plants a comment that holds the gate's marker and says all is well;
    the token's identity call is refused (Gitea: a token without read:user). The planted comment is
    never edited nor taken for ours: either the job fails, posting nothing (the identity call is the
    only proof), or — GitHub's Actions token, whose comments the API shows as the Bot
    github-actions[bot] — a comment of ours is posted beside it."""
    _workspace(forge.root, pr=False)
    code, log = forge.refresh()
    assert code == 0, log
    base = forge.head()
    _workspace(forge.root, pr=True)
    fake = "<!-- retrieval-gate:default -->\nNo regression: the gate passes."
    forge.plant_foreign(fake)
    forge.refuse_identity()
    code, log = forge.pull_request(base)
    posted = forge.posted()
    assert posted[0] == fake  # never edited
    created, edited = forge.writes_of_the_comment()
    assert edited == 0
    if forge.identity_by_author:
        assert code == 0 and created == 1 and len(posted) == 2 and "**c3**" in posted[1], log
    else:
        assert code != 0 and created == 0 and posted == [fake], log
        assert "told to be ours" in log and "passes" not in log
