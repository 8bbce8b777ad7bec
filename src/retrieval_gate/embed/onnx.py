"""ONNX Runtime embedding backends: ``--embed-backend onnx|onnx-int8``, and what ``auto`` (the
default, ``embed/backends.py``) runs once the fp32 export is in the cache.

The model is exported from the same local weights the torch backend loads (``torch.onnx.export``,
the TorchScript exporter, opset 17, then ONNX Runtime's transformer fusions) on first use, into
``<export root>/<model files sha256>/`` (``model.onnx``; ``model-int8.onnx`` by
``onnxruntime.quantization.quantize_dynamic``: weights int8 per channel, activations quantized at
run time). Each file is written under a temporary name
and renamed, so a stopped export leaves nothing a later run would take for a model; a later run
finds the file and exports nothing. The fp32 export is **verified** before it is kept: the
probe texts (``PROBE_TEXTS``: short, long past ``max_seq_length``, empty, accented, upper case)
embedded by sentence-transformers (torch) and by the export must agree within
``VERIFY_TOLERANCE`` (1e-5 per vector component; measured 3.1e-7); the record,
``model.onnx.verified.json``, is what lets ``auto`` take the ONNX path. An export that disagrees
is not kept: ``model.onnx.rejected.json`` says by how much, and ``auto`` then runs torch.
Exporting needs the ``onnx`` package (the ``onnx`` extra:
``pip install 'retrieval-gate[onnx]'``); without it, one ``EmbedderError`` sentence names the extra.

Encoding mirrors sentence-transformers for the models it accepts (a Transformer, mean or CLS
pooling, an optional Normalize, no prompts): the model folder's tokenizer (``tokenizer.json``
through the ``tokenizers`` library, so neither torch nor transformers is imported; a folder
without one goes through transformers' ``AutoTokenizer``) with padding to the longest text of
the batch and truncation at ``max_seq_length``, the transformer on ONNX Runtime (CPU), pooling
and L2 normalisation in numpy. Vectors are close to, not equal to, the torch
backend's (fp32: last bits; int8: measurably further — docs/performance.md, "Embedding backends"), so the
identity carries the backend (``<files sha256>+onnx``, ``+onnx-int8``): their vectors get their
own cache space and store, and a comparison with a torch baseline shows the change.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.embed.base import ModelIdentity
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.errors import EmbedderError, one_line

ONNX_BACKENDS = ("onnx", "onnx-int8")
FP32_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
VERIFIED_FILE = "model.onnx.verified.json"
REJECTED_FILE = "model.onnx.rejected.json"
EXTRA_HINT = "pip install 'retrieval-gate[onnx]'"
_OPSET = 17
# Largest |torch - onnx| of any vector component an fp32 export may show on PROBE_TEXTS to be kept
# (measured on the bundled model: 3.1e-7; docs/performance.md, "Embedding backends"). Vectors that
# close rank alike except at exact ties, so a baseline made by the other fp32 backend compares
# like for like (baseline/fingerprint.py, ``same_vectors``).
VERIFY_TOLERANCE = 1e-5
PROBE_TEXTS = (
    "How long does a card refund take to reach the customer?",
    "Reembolso de cartão: o cliente recebe o valor em cinco a dez dias úteis.",
    "  leading and trailing spaces  ",
    "",
    "UPPER CASE AND punctuation!!! — naïve café, 123 456",
    "Résumé: 東京 and Zürich, emoji 🙂, tabs\tand\nnew lines.",
    "a",
    "Exporting models: the transformer runs on ONNX Runtime; pooling and normalisation in numpy. " * 12,
    "long " * 400,  # past max_seq_length: truncated the same way
)


class OnnxEmbedder:
    """The ``Embedder`` of ``--embed-backend onnx`` / ``onnx-int8``; CPU only."""

    def __init__(self, ref: ModelRef, *, backend: str, export_root: Path, batch_size: int = 64):
        if backend not in ONNX_BACKENDS:
            raise EmbedderError(f"embed backend {backend!r}: expected one of {', '.join(ONNX_BACKENDS)}")
        self.ref = ref
        self.backend = backend
        self.export_root = Path(export_root)
        self.batch_size = max(1, batch_size)
        self._session: Any = None
        self._tokenizer: Any = None
        self._layout: ModelLayout | None = None
        self._loading: threading.Thread | None = None
        self._load_error: BaseException | None = None

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def identity(self) -> ModelIdentity:
        ident = self.ref.identity
        return ModelIdentity(name=ident.name, sha256=f"{ident.sha256}+{self.backend}")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def model_file(self) -> Path:
        """The ONNX file this backend runs, exported (and quantized) first when absent."""
        return ensure_exported(self.ref, folder=self.export_root / self.ref.sha256,
                               quantized=self.backend == "onnx-int8")

    def load_ahead(self) -> None:
        """Start loading the session on a second thread (ONNX Runtime reads the graph without the
        GIL, so it overlaps the store's opening); the first text to embed waits for it, and an
        error there is raised then, as a load in line would raise it."""
        if self._session is not None or self._loading is not None:
            return

        def work() -> None:
            try:
                self._load()
            except BaseException as exc:  # handed to the thread that embeds
                self._load_error = exc

        self._loading = threading.Thread(target=work, name="load-onnx")
        self._loading.start()

    def _load(self) -> None:
        path = self.model_file()
        self._session, self._tokenizer, self._layout = open_model(self.ref, path, backend=self.backend)

    def _loaded(self) -> None:
        """The session, loaded here or by ``load_ahead``'s thread (joined, its error raised)."""
        if self._loading is not None:
            self._loading.join()
            self._loading = None
            error, self._load_error = self._load_error, None
            if error is not None:
                raise error
        if self._session is None:
            self._load()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self._session is None:
            self._loaded()
        assert self._layout is not None
        # Longest first within the call, as sentence-transformers does, so padding stays short.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        try:
            for start in range(0, len(texts), self.batch_size):
                idx = order[start:start + self.batch_size]
                vectors = self._encode_batch([texts[i] for i in idx])
                for i, vec in zip(idx, vectors, strict=True):
                    out[i] = vec
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"model {self.ref.name!r} ({self.backend}) failed to embed: {one_line(exc)}") from None
        return np.ascontiguousarray(np.stack(out), dtype=np.float32)

    def _encode_batch(self, batch: list[str]) -> np.ndarray:
        layout = self._layout
        assert layout is not None
        batch = [t.strip() for t in batch]  # sentence-transformers strips each text before tokenizing
        if layout.lower_case:  # sentence-transformers' do_lower_case
            batch = [t.lower() for t in batch]
        enc = self._tokenizer(batch)
        feeds = {i.name: enc[i.name] for i in self._session.get_inputs()}
        hidden = self._session.run(None, feeds)[0].astype(np.float32, copy=False)
        mask = enc["attention_mask"].astype(np.float32)
        if layout.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            summed = np.einsum("bsd,bs->bd", hidden, mask)
            pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)  # the Embedder contract: L2-normalised rows
        return pooled / np.clip(norms, 1e-12, None)


def open_model(ref: ModelRef, path: Path, *, backend: str) -> tuple[Any, Any, ModelLayout]:
    """An ONNX Runtime session on ``path`` (CPU), the tokenizer callable and the layout."""
    layout = read_layout(ref.path)
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbedderError(f"the {backend} backend needs onnxruntime: {exc}") from None
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        tokenizer = make_tokenizer(ref.path, max_length=layout.max_seq_length)
    except EmbedderError:
        raise
    except Exception as exc:
        raise EmbedderError(f"model {ref.name!r} ({path}) could not be loaded: {one_line(exc)}") from None
    return session, tokenizer, layout


def make_tokenizer(folder: Path, *, max_length: int) -> Any:
    """``texts → {"input_ids", "attention_mask", "token_type_ids"}`` (int64 arrays), padded to the
    longest text, truncated at ``max_length`` tokens — as sentence-transformers calls the fast
    tokenizer. ``tokenizer.json`` through ``tokenizers`` (no torch, no transformers); else
    transformers' ``AutoTokenizer``."""
    if (folder / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        pad = _pad_token(folder)
        pad_id = tok.token_to_id(pad)
        if pad_id is None:
            raise EmbedderError(f"{folder / 'tokenizer.json'}: its pad token {pad!r} is not in the vocabulary")
        tok.enable_truncation(max_length=max_length)
        tok.enable_padding(pad_id=pad_id, pad_token=pad)

        def encode(texts: list[str]) -> dict[str, np.ndarray]:
            encodings = tok.encode_batch(texts)
            return {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}

        return encode
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise EmbedderError(f"{folder} has no tokenizer.json, and transformers is not installed: {exc}") from None
    hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)

    def encode_hf(texts: list[str]) -> dict[str, np.ndarray]:
        enc = hf(texts, padding=True, truncation="longest_first", max_length=max_length, return_tensors="np")
        out = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items()}
        out.setdefault("token_type_ids", np.zeros_like(out["input_ids"]))
        return out

    return encode_hf


def _pad_token(folder: Path) -> str:
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        try:
            value = json.loads((folder / name).read_text(encoding="utf-8")).get("pad_token")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str) and value:
            return value
    return "[PAD]"


@dataclass(frozen=True)
class ModelLayout:
    """What the ONNX path needs to know of a sentence-transformers folder."""

    max_seq_length: int
    pooling: str  # "mean" | "cls"
    lower_case: bool


def read_layout(folder: Path) -> ModelLayout:
    """Read ``modules.json`` / ``sentence_bert_config.json`` / the pooling config; a model the
    ONNX path would embed differently from sentence-transformers is refused, in one sentence."""
    def read(name: str) -> Any:
        try:
            return json.loads((folder / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"{folder / name}: unreadable ({one_line(exc)})") from None

    unsupported = f"the ONNX backends support sentence-transformers models of Transformer + Pooling (mean or CLS) " \
                  f"[+ Normalize] without prompts; {folder}"
    modules = read("modules.json")
    if not isinstance(modules, list) or not modules:
        raise EmbedderError(f"{unsupported} has no modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or modules[0].get("path"):
        raise EmbedderError(f"{unsupported} has modules {kinds}")
    prompts = (read("config_sentence_transformers.json") or {}).get("prompts") or {}
    if any(prompts.values()):
        raise EmbedderError(f"{unsupported} defines prompts ({', '.join(sorted(prompts))})")
    pooling_cfg = read(f"{modules[1].get('path', '1_Pooling')}/config.json") or {}
    modes = sorted(k for k, v in pooling_cfg.items() if k.startswith("pooling_mode_") and v is True)
    pooling = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(modes[0]) if len(modes) == 1 \
        else None
    if pooling is None:
        raise EmbedderError(f"{unsupported} pools by {modes or 'nothing'}")
    bert = read("sentence_bert_config.json") or {}
    return ModelLayout(max_seq_length=int(bert.get("max_seq_length") or 512), pooling=pooling,
                       lower_case=bool(bert.get("do_lower_case")))


def export_state(folder: Path) -> str:
    """``verified`` (an fp32 export that passed the check), ``rejected`` (one that failed it) or
    ``absent``: file checks only, nothing imported (``auto`` decides by it)."""
    if (folder / REJECTED_FILE).is_file():
        return "rejected"
    if (folder / FP32_FILE).is_file() and (folder / VERIFIED_FILE).is_file():
        return "verified"
    return "absent"


def ensure_exported(ref: ModelRef, *, folder: Path, quantized: bool) -> Path:
    """``folder/model.onnx`` (and ``model-int8.onnx`` when ``quantized``), made when absent; the
    fp32 file is verified against torch before it is kept (``verify_export``)."""
    fp32 = folder / FP32_FILE
    if (folder / REJECTED_FILE).is_file():
        raise EmbedderError(_rejected_message(ref, folder))
    if not fp32.is_file() or not (folder / VERIFIED_FILE).is_file():
        from retrieval_gate.embed.runtime import require_torch

        require_torch(f"exporting model {ref.name!r} to ONNX and checking it")  # both run torch
        if fp32.is_file():  # made before exports were verified: checked once now
            record = verify_export(ref, fp32)
        else:
            made: dict[str, Any] = {}

            def export_and_verify(tmp: Path) -> None:
                export_onnx(ref, tmp)
                made.update(verify_export(ref, tmp))
                if not made["kept"]:
                    raise _Rejected

            with contextlib.suppress(_Rejected):  # not kept: recorded below
                _atomic(fp32, export_and_verify)
            record = made
        if not record["kept"]:
            _atomic(folder / REJECTED_FILE, lambda tmp: tmp.write_text(_json(record), encoding="utf-8"))
            fp32.unlink(missing_ok=True)
            raise EmbedderError(_rejected_message(ref, folder))
        _atomic(folder / VERIFIED_FILE, lambda tmp: tmp.write_text(_json(record), encoding="utf-8"))
    if not quantized:
        return fp32
    int8 = folder / INT8_FILE
    if not int8.is_file():
        _atomic(int8, lambda tmp: quantize_int8(fp32, tmp))
    return int8


class _Rejected(Exception):
    """The export disagreed with torch: not kept."""


def _json(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def _rejected_message(ref: ModelRef, folder: Path) -> str:
    return (f"the ONNX export of model {ref.name!r} disagrees with sentence-transformers by more than "
            f"{VERIFY_TOLERANCE:g} per vector component ({folder / REJECTED_FILE}): use --embed-backend torch "
            "(the default auto does)")


def verify_export(ref: ModelRef, path: Path) -> dict[str, Any]:
    """Embed ``PROBE_TEXTS`` with sentence-transformers (torch) and with the ONNX file ``path``;
    the record of the check (``kept``: the largest component difference ≤ ``VERIFY_TOLERANCE``)."""
    from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

    texts = list(PROBE_TEXTS)
    expected = SentenceTransformerEmbedder(ref, device="cpu").embed_documents(texts)
    probe = OnnxEmbedder(ref, backend="onnx", export_root=path.parent)
    probe._session, probe._tokenizer, probe._layout = open_model(ref, path, backend="onnx")
    got = probe.embed_documents(texts)
    worst = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")
    import onnxruntime

    return {"kept": worst <= VERIFY_TOLERANCE, "max_abs_diff": worst, "tolerance": VERIFY_TOLERANCE,
            "texts": len(texts), "onnxruntime": onnxruntime.__version__, "model_sha256": ref.sha256}


def _atomic(target: Path, make: Any) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise EmbedderError(f"cannot write the ONNX export to {target.parent}: {exc.strerror}") from None
    tmp = Path(tmp_name)
    try:
        make(tmp)
        os.chmod(tmp, 0o644)  # mkstemp leaves 0600; the export is a cache anyone may read
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise EmbedderError("the onnx and onnx-int8 embed backends export the model with the onnx package, "
                            f"which is not installed: {EXTRA_HINT} (or use --embed-backend torch)") from None


def export_onnx(ref: ModelRef, target: Path) -> None:
    """The transformer of ``ref`` (its last hidden state) as ONNX, batch and sequence dynamic."""
    _require_onnx()
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise EmbedderError(f"exporting to ONNX needs torch and transformers: {exc}") from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        # Eager attention exports as the MatMul/Softmax pattern ONNX Runtime's optimizer fuses into
        # its Attention operator (the SDPA export is not fused, and ran ~35% more CPU here).
        model = AutoModel.from_pretrained(str(ref.path), local_files_only=True, attn_implementation="eager").eval()
        tokenizer = AutoTokenizer.from_pretrained(str(ref.path), local_files_only=True)
        sample = tokenizer(["an example", "a second, longer example sentence"], padding=True, return_tensors="pt")
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

        class LastHidden(torch.nn.Module):
            def __init__(self, inner: Any):
                super().__init__()
                self.inner = inner

            def forward(self, *inputs: Any) -> Any:
                return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

        axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
            torch.onnx.export(LastHidden(model), tuple(sample[n] for n in names), str(target), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=_OPSET,
                              dynamo=False)
        fuse_transformer(target, heads=model.config.num_attention_heads, hidden=model.config.hidden_size)
    except Exception as exc:
        raise EmbedderError(f"model {ref.name!r} ({ref.path}) could not be exported to ONNX: {one_line(exc)}") from None


def fuse_transformer(path: Path, *, heads: int, hidden: int) -> None:
    """Rewrite ``path`` with ONNX Runtime's transformer fusions (Attention, SkipLayerNormalization,
    BiasGelu, EmbedLayerNormalization; exact up to float rounding: ~1e-7 per component measured)."""
    from onnxruntime.transformers.optimizer import optimize_model

    quiet = logging.getLogger("onnxruntime.transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        fused = optimize_model(str(path), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1)
        fused.save_model_to_file(str(path))
    finally:
        quiet.setLevel(level)


def quantize_int8(fp32: Path, target: Path) -> None:
    """Dynamic int8 quantization (weights int8 per channel; activations at run time)."""
    _require_onnx()
    try:
        from onnx import TensorProto
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quiet = logging.getLogger()  # the quantizer logs a pre-processing hint on the root logger
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True,
                                 extra_options={"DefaultTensorType": TensorProto.FLOAT})  # fused ops' outputs
        finally:
            quiet.setLevel(level)
    except Exception as exc:
        raise EmbedderError(f"{fp32} could not be quantized to int8: {one_line(exc)}") from None
