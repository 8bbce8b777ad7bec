"""The team's index the store-adapter tests measure: a small KB, the rows a team's own pipeline
would have stored for it (several chunks per card, one row without a card id), and the expected
rankings computed here, independently of the adapters, by brute force over the same vectors."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.fake_embedder import bag_of_words

EN, PT = {"locale": "en-US"}, {"locale": "pt-BR"}
CARDS = [
    {"id": "refunds", "title": "Refunds", "text": "Refund a card payment.", "metadata": EN},
    {"id": "chargeback", "title": "Chargebacks", "text": "Card payment disputes.", "metadata": EN},
    {"id": "invoice", "title": "Invoices", "text": "Create an invoice.", "metadata": EN},
    {"id": "taxes", "title": "Taxes", "text": "Sales tax rates.", "metadata": PT},
    {"id": "password", "title": "Password", "text": "Reset your password.", "metadata": EN},
]


@dataclass(frozen=True)
class StoredRow:
    id: str
    card: str | None  # None: the team's pipeline forgot the card id on this row
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        return {**self.metadata, **({"card_id": self.card} if self.card is not None else {})}


_REFUND_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
ROWS = (
    # eight chunks of one card answer the refund query before any other card: over-fetch must grow
    [StoredRow(f"refunds#{i}", "refunds", f"refund card payment days {w}", EN) for i, w in enumerate(_REFUND_WORDS)]
    + [StoredRow("chargeback#0", "chargeback", "card payment dispute chargeback", EN),
       StoredRow("chargeback#1", "chargeback", "chargeback evidence deadline", EN),
       StoredRow("invoice#0", "invoice", "invoice line items client", EN),
       StoredRow("invoice#1", "invoice", "invoice client address", EN),
       StoredRow("taxes#0", "taxes", "sales tax rates state", PT),
       StoredRow("password#0", "password", "reset password link sign", EN),
       StoredRow("orphan#0", None, "vault credentials rotate quarterly", EN)]
)
CASES = [  # each query reaches three cards by shared words (no tie decides a cut), c4 the id-less row
    {"id": "c1", "query": "refund card payment chargeback invoice", "gold": ["refunds"]},
    {"id": "c2", "query": "invoice client password reset tax", "gold": ["invoice"]},
    {"id": "c3", "query": "sales tax card payment dispute invoice items", "gold": ["taxes"],
     "filter": {"locale": "en-US"}},
    {"id": "c4", "query": "rotate vault credentials", "gold": ["password"]},
    {"id": "c5", "query": "reset password link chargeback deadline evidence invoice", "gold": ["password"]},
]
K = (1, 3)


def vectors(embed: Callable[[str], np.ndarray] = bag_of_words) -> np.ndarray:
    return np.stack([embed(r.text) for r in ROWS])


def write_dataset(root: Path) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    kb, cases = root / "kb.jsonl", root / "cases.jsonl"
    kb.write_text("".join(json.dumps(c) + "\n" for c in CARDS), encoding="utf-8")
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    return kb, cases


def expected(query: str, where: dict[str, Any] | None, limit: int = max(K)) -> tuple[list[str], list[float]] | str:
    """Brute force: every row's cosine, best first; rows failing the filter skipped; each card's first
    row kept; the id-less row, when met before ``limit`` cards, fails the case ("missing")."""
    q = bag_of_words(query)
    scores = vectors() @ q
    order = sorted(range(len(ROWS)), key=lambda i: -float(scores[i]))
    cards: dict[str, float] = {}
    for i in order:
        row = ROWS[i]
        if where and any(row.metadata.get(k) != v for k, v in where.items()):
            continue
        if row.card is None:
            return "missing"
        cards.setdefault(row.card, float(scores[i]))
        if len(cards) == limit:
            break
    return list(cards), list(cards.values())


def rows_needed_for(query: str, limit: int) -> int:
    """How many rows, best first, hold ``limit`` distinct cards (the over-fetch the query needs)."""
    scores = vectors() @ bag_of_words(query)
    seen: set[str | None] = set()
    for n, i in enumerate(sorted(range(len(ROWS)), key=lambda i: -float(scores[i])), start=1):
        seen.add(ROWS[i].card)
        if len(seen) == limit:
            return n
    return len(ROWS)


def check_against_brute_force(results: Any, *, key: str = "card_id") -> None:
    """Each case's ranking equals the brute force's (cards and their scores; cards of equal score
    in any order), and the failing case names the missing key."""
    for case in results.cases:
        spec = next(c for c in CASES if c["id"] == case.id)
        want = expected(spec["query"], spec.get("filter"))
        if want == "missing":
            assert case.status == "failed" and case.error is not None and f"'{key}'" in case.error, case
            continue
        cards, scores = want
        assert case.error is None, case.error
        assert np.allclose(case.retrieved_scores, scores, atol=1e-4), (case.id, case.retrieved_scores, scores)
        by_score: dict[float, set[str]] = {}
        for card, score in zip(case.retrieved, case.retrieved_scores, strict=True):
            by_score.setdefault(round(score, 4), set()).add(card)
        want_by_score: dict[float, set[str]] = {}
        for card, score in zip(cards, scores, strict=True):
            want_by_score.setdefault(round(score, 4), set()).add(card)
        assert by_score == want_by_score, (case.id, case.retrieved, cards)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chroma_server(root: Path) -> Iterator[int | None]:
    """``chroma run`` (chromadb's own CLI) on 127.0.0.1 and a free port; None when it cannot start."""
    exe = shutil.which("chroma")
    if exe is None:
        yield None
        return
    port = free_port()
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([exe, "run", "--path", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            yield None
            return
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
