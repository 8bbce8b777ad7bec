"""run_eval end to end over a real embedded Chroma, with a fake of OUR Embedder interface
(hashed bag of words) so rankings are predictable and embedding calls can be counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.errors import UsageError
from retrieval_gate.evaluation.run import run_eval, run_evals
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder

CARDS = {
    "refund-card": ("Refund a card payment", "## Card refunds\n\nA card refund reaches the customer in five to ten "
                    "business days.\n\n## Partial card refunds\n\nYou can refund part of a card payment."),
    "refund-bank": ("Refund a bank transfer", "## Bank transfer refunds\n\nBank transfer refunds return to the "
                    "paying account in three to five days."),
    "invoice-create": ("Create an invoice", "## New invoice\n\nClick New invoice, pick a client and add line items."),
    "tax-rates": ("Sales tax rates", "## Tax rates\n\nSet sales tax rates per state in Settings, Taxes."),
    "password": ("Reset your password", "## Forgot password\n\nUse the reset link on the sign in page."),
}

CASES = [
    {"id": "q1", "query": "card refund business days", "gold": ["refund-card"], "form": "MATCH", "locale": "en"},
    {"id": "q2", "query": "bank transfer refund paying account", "gold": ["refund-bank", "refund-card"],
     "form": "MATCH", "locale": "en"},
    {"id": "q3", "query": "new invoice line items client", "gold": ["invoice-create"], "form": "GAP", "locale": "pt"},
    {"id": "q4", "query": "state sales tax", "gold": ["tax-rates"], "kind": "adversarial", "locale": "pt"},
    {"id": "q5", "query": "quantum chromodynamics lecture", "gold": []},
]

# Expected top-1 card per gold-bearing case, by inspection of the shared words (bag of words).
TOP1 = {"q1": "refund-card", "q2": "refund-bank", "q3": "invoice-create", "q4": "tax-rates"}


def write_dataset(root: Path, cases: list[dict] | None = None) -> tuple[Path, Path]:
    kb = root / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    for card_id, (title, body) in CARDS.items():
        (kb / f"{card_id}.md").write_text(f"---\nid: {card_id}\ntitle: {title}\n---\n# {title}\n\n{body}\n")
    path = root / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in (cases or CASES)))
    return kb, path


def config_for(root: Path, **over: object) -> SuiteConfig:
    kb, cases = write_dataset(root)
    store = over.pop("store", StoreSettings(path=str(root / "store")))
    return SuiteConfig(kb=str(kb), cases=str(cases), store=store, **over)


def test_eval_ranks_every_case_and_scores_it_through_the_shared_path(tmp_path: Path) -> None:
    emb = HashEmbedder()
    results = run_eval(suite_config=config_for(tmp_path), suite="t", embedder=emb)
    by_id = {c.id: c for c in results.cases}
    assert {cid: by_id[cid].retrieved[0] for cid in TOP1} == TOP1
    assert all(len(set(c.retrieved)) == len(c.retrieved) == 5 for c in results.cases)  # 5 cards, k=10
    assert by_id["q1"].scores["hit@1"] == 1.0 and by_id["q2"].scores["recall@1"] == 0.5  # 1 of 2 gold
    assert by_id["q5"].status == "no_gold" and by_id["q5"].scores == {}
    c = results.completeness
    assert (c.expected, c.scored, c.no_gold, c.failed) == (5, 4, 1, 0)
    assert results.aggregates["overall"]["hit@1"].value == 1.0 and results.aggregates["overall"]["hit@1"].n == 4
    assert results.aggregates["form=GAP"]["hit@1"].n == 1
    assert results.latency is not None and results.latency.n == 5
    assert results.config["retriever"] == "dense" and results.config["model"] == "fake-bow"
    assert results.config["model_sha256"] == "f" * 64 and results.config["k"] == [1, 3, 5, 10]
    assert results.config["chunking"]["strategy"] == "markdown"
    assert results.config["store"]["search"] == "exact"  # auto: a small KB is searched exactly
    assert set(results.inputs) == {"kb", "cases"}
    emb_stats = results.extras["embedding"]
    assert emb_stats["passages_embedded"] == len(emb.documents) > 0 and emb_stats["queries_embedded"] == 5


def test_a_warm_rerun_embeds_nothing_and_gives_the_same_numbers(tmp_path: Path) -> None:
    cold = run_eval(suite_config=config_for(tmp_path), suite="t", embedder=HashEmbedder())
    again = HashEmbedder()
    warm = run_eval(suite_config=config_for(tmp_path), suite="t", embedder=again)
    assert again.documents == [] and again.queries == []
    assert warm.extras["store"]["added"] == 0 and warm.extras["store"]["unchanged"] == cold.extras["store"]["chunks"]
    assert warm.aggregates == cold.aggregates
    assert [c.retrieved for c in warm.cases] == [c.retrieved for c in cold.cases]


def test_a_gold_id_naming_no_card_is_scored_as_a_loss_and_recorded(tmp_path: Path) -> None:
    """A gold id the KB does not hold (a card deleted, or a typo) no longer stops the eval: the case
    is scored with that card in its denominator, and the results say which id is missing
    (``compare`` tells a deleted card from a typo by the baseline's KB manifest)."""
    bad = [*CASES[:2], {"id": "q9", "query": "x", "gold": ["no-such-card"]}]
    kb, cases = write_dataset(tmp_path, bad)
    results = run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases),
                                                store=StoreSettings(path=str(tmp_path / "store"))),
                       suite="t", embedder=HashEmbedder())
    assert results.gold_missing == {"q9": ["no-such-card"]}
    (q9,) = [c for c in results.cases if c.id == "q9"]
    assert q9.status == "scored" and all(v == 0.0 for v in q9.scores.values())


def test_bm25_never_touches_the_embedder_or_the_store(tmp_path: Path) -> None:
    emb = HashEmbedder()
    results = run_eval(suite_config=config_for(tmp_path, retriever="bm25"), suite="t", embedder=emb)
    assert emb.documents == [] and emb.queries == []
    assert not (tmp_path / "store").exists()
    assert results.config["retriever"] == "bm25" and "model" not in results.config
    assert {c.id: c.retrieved[0] for c in results.cases if c.id in TOP1} == TOP1


def test_several_retrievers_share_one_sync_and_get_one_results_each(tmp_path: Path) -> None:
    emb = HashEmbedder()
    out = run_evals(suite_config=config_for(tmp_path, retriever="dense,bm25,hybrid"), suite="t", embedder=emb)
    assert list(out) == ["dense", "bm25", "hybrid"]
    assert sorted(emb.queries) == sorted(c["query"] for c in CASES)  # queries embedded once
    assert out["hybrid"].config["model"] == "fake-bow" and "details" in out["hybrid"].config
    with pytest.raises(UsageError, match=r"names 2 retrievers \(dense, bm25\); a gate judges one retriever"):
        run_eval(suite_config=config_for(tmp_path, retriever="dense,bm25"), suite="t", embedder=emb)


def test_exact_mode_and_the_ann_check_are_recorded(tmp_path: Path) -> None:
    store = StoreSettings(path=str(tmp_path / "store"), exact=True, ann_check=True)
    results = run_eval(suite_config=config_for(tmp_path, store=store), suite="t", embedder=HashEmbedder())
    assert results.config["store"] == {"search": "exact", "space": "cosine"}
    ann = results.extras["ann_check"]
    assert ann["k"] == 10 and ann["queries"] == 5
    assert 0.0 <= ann["recall"] <= 1.0
    assert set(ann["delta"]) == {"hit@5", "recall@5", "ndcg@5"}
    for metric, delta in ann["delta"].items():
        assert delta == pytest.approx(ann["hnsw"][metric] - ann["exact"][metric], abs=1e-6)
    assert ann["exact"]["hit@5"] == results.aggregates["overall"]["hit@5"].value  # main run is the exact one


def test_abstention_scores_no_answer_cases_when_a_threshold_is_set(tmp_path: Path) -> None:
    results = run_eval(suite_config=config_for(tmp_path, abstain_threshold=0.99), suite="t", embedder=HashEmbedder())
    (q5,) = [c for c in results.cases if c.id == "q5"]
    assert q5.scores == {"abstention": 1.0}  # nothing shares a word with it: best cosine 0 < 0.99


def test_missing_kb_or_cases_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--kb and --cases"):
        run_eval(suite_config=SuiteConfig(), suite="t", embedder=HashEmbedder())
    with pytest.raises(UsageError, match="needs --cases"):
        run_eval(suite_config=SuiteConfig(kb=str(tmp_path)), suite="t", embedder=HashEmbedder())


def test_an_ephemeral_store_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    results = run_eval(suite_config=config_for(tmp_path, store=StoreSettings(mode="ephemeral")), suite="t",
                       embedder=HashEmbedder())
    assert results.completeness.scored == 4
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("store_over", "expected"),
    [
        ({}, "exact"),  # auto, under the chunk limit
        ({"exact_max_chunks": 0}, "hnsw"),  # auto, over the limit
        ({"exact": False}, "hnsw"),
        ({"exact": True, "exact_max_chunks": 0}, "exact"),
    ],
)
def test_search_mode_follows_the_setting_or_the_chunk_count(tmp_path: Path, store_over: dict, expected: str) -> None:
    store = StoreSettings(path=str(tmp_path / "store"), **store_over)
    results = run_eval(suite_config=config_for(tmp_path, store=store), suite="t", embedder=HashEmbedder())
    assert results.config["store"]["search"] == expected
    assert {c.id: c.retrieved[0] for c in results.cases if c.id in TOP1} == TOP1


@pytest.mark.parametrize(("limit_minus_chunks", "expected"), [(0, "exact"), (1, "exact"), (-1, "hnsw")])
def test_auto_search_is_exact_up_to_and_including_the_chunk_limit(tmp_path: Path, limit_minus_chunks: int,
                                                                 expected: str) -> None:
    chunks = run_eval(suite_config=config_for(tmp_path / "count"), suite="t",
                      embedder=HashEmbedder()).extras["store"]["chunks"]
    store = StoreSettings(path=str(tmp_path / "store"), exact_max_chunks=chunks + limit_minus_chunks)
    results = run_eval(suite_config=config_for(tmp_path, store=store), suite="t", embedder=HashEmbedder())
    assert results.config["store"]["search"] == expected


def test_the_default_chunk_limit_is_the_one_the_docs_and_the_cli_state() -> None:
    limit = StoreSettings().exact_max_chunks
    root = Path(__file__).resolve().parents[2]
    assert f"{limit:,}" in (root / "docs" / "eval.md").read_text(encoding="utf-8")
    assert f"exact_max_chunks: {limit}" in (root / "docs" / "eval.md").read_text(encoding="utf-8")
    assert f"exact up to {limit:,} chunks" in (root / "src" / "retrieval_gate" / "cli" / "eval.py").read_text(
        encoding="utf-8")


def test_a_baseline_searched_by_hnsw_is_not_like_for_like_with_an_exact_run_of_the_same_store(tmp_path: Path) -> None:
    """A store between the old and the new default chunk limit was searched by HNSW and is now
    searched exactly: the comparison says the search changed instead of gating like for like."""
    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.compare.comparison import compare
    from retrieval_gate.compare.gate import GateSettings

    store = tmp_path / "store"
    chunks = run_eval(suite_config=config_for(tmp_path, store=StoreSettings(path=str(store))), suite="t",
                      embedder=HashEmbedder()).extras["store"]["chunks"]
    old = run_eval(suite_config=config_for(tmp_path, store=StoreSettings(path=str(store), exact_max_chunks=chunks - 1)),
                   suite="t", embedder=HashEmbedder(), created_at="2026-01-01T00:00:00Z")
    new = run_eval(suite_config=config_for(tmp_path, store=StoreSettings(path=str(store))), suite="t",
                   embedder=HashEmbedder(), created_at="2026-01-02T00:00:00Z")
    baseline = update_baseline(baseline=None, results=old, sha="old", ref="main", timestamp=None)
    comparison = compare(results=new, baseline=baseline, gate=GateSettings(fail_on_regression=True))
    assert not comparison.like_for_like
    changed = {c.key: (c.baseline, c.current) for c in comparison.config_changes}
    assert changed["config.store.search"] == ("hnsw", "exact")
    assert {"config.store.hnsw_m", "config.store.hnsw_construction_ef", "config.store.hnsw_search_ef"} <= set(changed)
