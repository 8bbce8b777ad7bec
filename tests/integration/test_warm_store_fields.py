"""A warm store is the cold store: an edit of any field a search or a score reads — a card's filter
field (changed, removed, added, or of another type), its ``parent_id`` (the card id) — without a
change of its text gives a warm eval the numbers, rankings and stored rows of a cold build, through
chromadb's Rust core (``chroma_direct``) and through chromadb's client alike; and the edit is
written without embedding anything again (real chromadb, a fake of our Embedder that counts what
it embeds). The cold store is the independent check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.cli.eval import summary_lines
from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store import chroma_direct
from retrieval_gate.store.chroma import CHROMA_DIR, ChromaStore, collection_name
from retrieval_gate.store.chroma_direct import DirectClient
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder
from tests.integration.test_chroma_direct import client_rows

# card id → (title, body, front matter lines). Bag-of-words similarities: for the query
# "beta apple banana cherry date" the chunks rank b > c > a > d.
CARDS = {
    "a": ("Alpha", "apple banana", "category: billing\npriority: 1\n"),
    "b": ("Beta", "apple banana cherry date", "category: billing\n"),
    "c": ("Gamma", "apple banana cherry", "category: billing\n"),
    "d": ("Delta", "apple", "category: billing\n"),
}
CASES = [
    {"id": "q-category", "query": "alpha apple banana", "gold": ["a"], "filter": {"category": "billing"}},
    {"id": "q-priority", "query": "alpha apple banana", "gold": ["a"], "filter": {"priority": {"$gte": 1}}},
    {"id": "q-tier", "query": "gamma apple banana cherry", "gold": ["c"], "filter": {"tier": "gold"}},
    # with b a chunk of card c, the top 3 cards are c, a, d; with b its own card, b, c, a
    {"id": "q-parent", "query": "beta apple banana cherry date", "gold": ["d"]},
]

# Each edit alone, and the case whose cold numbers it changes.
EDITS = {
    "a filter field changed": ("a", "category: billing\n", "category: support\n", "q-category"),
    "a filter field removed": ("a", "category: billing\n", "", "q-category"),
    "a filter field of another type": ("a", "priority: 1\n", "priority: '1'\n", "q-priority"),
    "a filter field added": ("c", "category: billing\n", "category: billing\ntier: gold\n", "q-tier"),
    "the card id (parent_id) changed": ("b", "category: billing\n", "category: billing\nparent_id: c\n", "q-parent"),
}


def write_kb(root: Path, edit: tuple[str, str, str, str] | None = None) -> Path:
    kb = root / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    for card_id, (title, body, front) in CARDS.items():
        if edit is not None and edit[0] == card_id:
            assert edit[1] in front
            front = front.replace(edit[1], edit[2])
        (kb / f"{card_id}.md").write_text(f"---\nid: {card_id}\ntitle: {title}\n{front}---\n# {title}\n\n{body}\n")
    return kb


def evaluate(root: Path, store_dir: Path) -> tuple[object, HashEmbedder, bool]:
    """One eval over ``store_dir``; the results, the embedder (what it embedded) and whether the
    store was opened through the Rust core."""
    cases = root / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    settings = StoreSettings(path=str(store_dir))
    store = ChromaStore(settings, collection=collection_name("t"))
    embedder = HashEmbedder()
    try:
        results = run_eval(suite_config=SuiteConfig(kb=str(root / "kb"), cases=str(cases), store=settings, k=(1, 3),
                                                    overfetch=1),
                           suite="t", embedder=embedder, store=store)
        direct = isinstance(store._client, DirectClient)
    finally:
        store.close()
    return results, embedder, direct


def numbers(results) -> tuple:
    return (results.aggregates, [(c.id, c.retrieved, c.retrieved_scores, c.scores) for c in results.cases])


@pytest.mark.parametrize("path", ["core", "client"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_of_one_field_without_its_text_gives_a_warm_eval_the_cold_numbers_and_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str, path: str) -> None:
    if path == "core" and not chroma_direct._tested_version():
        pytest.skip("this chromadb is not one the direct path is checked against (TESTED)")
    if path == "client":
        monkeypatch.setattr(chroma_direct, "TESTED", ("no such version",))
    _card, _old, _new, case_id = EDITS[edit]
    write_kb(tmp_path)
    before, _emb, _direct = evaluate(tmp_path, tmp_path / "warm")
    write_kb(tmp_path, EDITS[edit])
    warm, warm_embedder, direct = evaluate(tmp_path, tmp_path / "warm")
    cold, _emb, _direct = evaluate(tmp_path, tmp_path / "cold")
    assert direct is (path == "core")
    # the edit matters: a cold store scores its case differently than before it
    by_id = {c.id: c for c in before.cases}
    (edited,) = [c for c in cold.cases if c.id == case_id]
    assert (edited.retrieved, edited.scores) != (by_id[case_id].retrieved, by_id[case_id].scores)
    assert numbers(warm) == numbers(cold)
    # never embedded again: rewritten with the vector the store held
    assert warm_embedder.documents == [] and warm.extras["embedding"]["passages"] == 0
    store = warm.extras["store"]
    assert (store["added"], store["deleted"], store["relabeled"], store["unchanged"]) == (0, 0, 1, 3)
    assert any("1 rewritten with new metadata (not embedded)" in line for line in summary_lines(warm))
    # and the warm store holds what a cold build writes, row for row
    warm_rows, cold_rows = client_rows(tmp_path / "warm" / CHROMA_DIR), client_rows(tmp_path / "cold" / CHROMA_DIR)
    assert warm_rows["ids"] == cold_rows["ids"] == [f"{c}#0" for c in CARDS]
    assert warm_rows["metadatas"] == cold_rows["metadatas"]
    assert (warm_rows["embeddings"] == cold_rows["embeddings"]).all()


def test_an_unchanged_kb_rewrites_nothing(tmp_path: Path) -> None:
    write_kb(tmp_path)
    evaluate(tmp_path, tmp_path / "s")
    again, embedder, _direct = evaluate(tmp_path, tmp_path / "s")
    assert embedder.documents == []
    store = again.extras["store"]
    assert (store["added"], store["deleted"], store["relabeled"], store["unchanged"]) == (0, 0, 0, 4)
