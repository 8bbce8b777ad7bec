"""Two ``eval`` runs of the same inputs give the same results file except the fields that
docs/formats.md lists as differing between identical runs — read from the docs themselves, so a
new timing field that the docs do not name fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.cli import main
from tests.conftest import REPO


def documented_fields() -> list[str]:
    text = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    block = text.split("<!-- non-deterministic fields: start -->")[1].split("<!-- non-deterministic fields: end -->")[0]
    fields = []
    for line in block.splitlines():
        if line.startswith("- "):
            fields.extend(re.findall(r"`([a-z0-9_\[\].]+)`", line.split(" — ")[0]))
    return fields


def mask(data: Any, path: str) -> None:
    """Replace the value at a dotted path (``cases[].latency_ms``; a path naming an object masks
    all of it) with ``"<masked>"``, where present."""
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        for item in data.get(head[:-2], []):
            mask(item, rest)
        return
    if not isinstance(data, dict) or head not in data:
        return
    if rest:
        mask(data[head], rest)
    else:
        data[head] = "<masked>"


CARDS = {
    "refund": "Refunds to a credit card show up on the statement within 5 to 10 business days.",
    "password": "To reset your password, open Settings, choose Security and click Reset password.",
    "invoice": "Invoices are emailed on the first day of each month and can be downloaded as PDF.",
    "delete": "Deleting an account removes all projects after a 30 day grace period.",
    "roles": "Team admins can invite members and change their roles from the Team page.",
    "twofa": "Two-factor authentication can use an authenticator app or a hardware key.",
}
QUERIES = {"q1": ("How long until my refund appears?", ["refund"]),
           "q2": ("I forgot my password", ["password"]),
           "q3": ("Where do I download invoices?", ["invoice"]),
           "q4": ("What is the capital of France?", [])}


def _dataset(tmp_path: Path) -> tuple[Path, Path]:
    kb, cases = tmp_path / "kb.jsonl", tmp_path / "cases.jsonl"
    kb.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CARDS.items()), encoding="utf-8")
    cases.write_text("".join(json.dumps({"id": i, "query": q, "gold": g}) + "\n" for i, (q, g) in QUERIES.items()),
                     encoding="utf-8")
    return kb, cases


def _eval(tmp_path: Path, name: str, retriever: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    kb, cases = _dataset(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["eval", "--kb", str(kb), "--cases", str(cases), "--retriever", retriever, "--ephemeral",
              "--out", str(out)])
    capsys.readouterr()
    assert info.value.code in (0, None)
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_docs_list_the_timing_fields() -> None:
    fields = documented_fields()
    assert "created_at" in fields and "cases[].latency_ms" in fields and "extras.timings" in fields


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_two_evals_differ_only_in_the_documented_fields(retriever: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = _eval(tmp_path, "a", retriever, capsys), _eval(tmp_path, "b", retriever, capsys)
    assert first != second  # timings really differ: the mask below is what makes them equal
    for data in (first, second):
        for field in documented_fields():
            mask(data, field)
    assert first == second
