"""Which of the action's two images a suite needs (docs/action.md, "Image variants"). Pure.

``default``: torch-free; the bundled all-MiniLM-L6-v2 on ONNX Runtime from the export checked when
the image was built. ``full``: torch and sentence-transformers, for any other model (it has no
checked export in the default image) and for the cross-encoder rerank (``X+rerank``)."""

from __future__ import annotations

from retrieval_gate.embed.resolve import BUNDLED_ALIASES, BUNDLED_NAME
from retrieval_gate.retrieve.spec import parse_retriever_list

DEFAULT = "default"
FULL = "full"


def image_variant(*, model: str, retriever: str) -> tuple[str, str]:
    """``(variant, why)`` for a suite's ``model`` and ``retriever`` keys."""
    reasons = []
    specs = parse_retriever_list(retriever)
    if model.strip().lower() not in BUNDLED_ALIASES and any(s.needs_embedder for s in specs):
        reasons.append(f"model {model.strip()!r} is not the bundled {BUNDLED_NAME} (no checked ONNX export)")
    reranked = [s.name for s in specs if s.rerank]
    if reranked:
        reasons.append(f"{', '.join(reranked)} runs the cross-encoder rerank (torch)")
    if reasons:
        return FULL, "; ".join(reasons)
    return DEFAULT, f"no torch needed: the bundled {BUNDLED_NAME} runs on its checked ONNX export"
