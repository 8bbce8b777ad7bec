"""Whether torch (sentence-transformers) can run here, and the one error when it cannot.

The action's default image has no torch: the bundled model runs on ONNX Runtime from the export
checked at build time (Dockerfile, stage ``build``). What needs torch there — another model (no
checked export), ``embed_backend: torch``, exporting a model, the cross-encoder rerank — stops
before any work with ``NeedsTorchError`` (exit 2), one line naming the full image variant.
Looked up with ``find_spec``, never imported: deciding costs no torch import.
"""

from __future__ import annotations

from importlib.util import find_spec

from retrieval_gate.errors import NeedsTorchError

FULL_IMAGE_HINT = ("in the action, use the full image variant (tag suffix -full; built by scripts/build-image --full; "
                   "docs/action.md, \"Image variants\"); elsewhere pip install sentence-transformers")


def torch_available() -> bool:
    """torch and sentence-transformers are installed (looked up, not imported)."""
    return all(find_spec(name) is not None for name in ("torch", "sentence_transformers"))


def require_torch(what: str) -> None:
    """Raise ``NeedsTorchError`` naming ``what`` and the full image variant when torch is absent."""
    if not torch_available():
        raise NeedsTorchError(f"{what} needs torch (sentence-transformers), which this installation does not have "
                              f"(the action's default image is torch-free): {FULL_IMAGE_HINT}")
