"""The action's image, measured side by side in one run (the figures in docs/action.md).

1. Build time with scripts/build-image: from an empty engine (``--cold``: removes every image and
   the build cache first, so the local Debian base is made again), warm with nothing changed, and
   warm after a code change (a file added under src/, then removed).
2. Image size (``docker image ls``) and its compressed size (``docker save | gzip``, what a
   registry stores and a runner downloads), and the pull-time estimate from it.
3. Container start to first output: ``docker run`` of the action (report mode, offline) until its
   first line.
4. Report mode on the example suite, cold (empty store) and warm (the store of the cold run).
5. A pull request run against the fake GitHub API, cold and warm.
6. nektos/act running a workflow that uses the action on a pull_request, end to end.

Usage: python benchmarks/bench_image.py [--cold] [--tag retrieval-gate:bench]   (root; ~10–15 min)
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.action_harness import TOKEN  # noqa: E402
from tests.e2e.fake_github import serve_fake_github  # noqa: E402
from tests.image.conftest import Runner, example_workspace  # noqa: E402
from tests.image.test_act import later_step, make_repo, run_act  # noqa: E402


def build(tag: str) -> float:
    start = time.monotonic()
    subprocess.run([str(REPO / "scripts" / "build-image"), tag], check=True)
    return time.monotonic() - start


def compressed_size(tag: str) -> int:
    """Bytes of the image's layers gzip-compressed (level 6, as registries store them)."""
    proc = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
    total = 0

    class Counter:
        def write(self, data: bytes) -> int:
            nonlocal total
            total += len(data)
            return len(data)

        def flush(self) -> None:
            pass

    with gzip.GzipFile(fileobj=Counter(), mode="wb", compresslevel=6) as out:  # type: ignore[arg-type]
        shutil.copyfileobj(proc.stdout, out, 1 << 20)
    proc.wait()
    return total


def first_output(tag: str, workspace: Path) -> float:
    name = f"rg-bench-{time.monotonic_ns()}"
    cmd = ["docker", "run", "--rm", "--name", name, "--network", "none", "-v", f"{workspace}:/github/workspace",
           "--workdir", "/github/workspace", "-e", "GITHUB_WORKSPACE=/github/workspace",
           "-e", "GITHUB_EVENT_NAME=push", "-e", "INPUT_MODE=report", "-e", "INPUT_CONFIG=retrieval-gate.yml",
           "-e", "INPUT_OUT_DIR=/tmp/out", tag]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.readline()
    seconds = time.monotonic() - start
    subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)
    proc.wait()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag", default="retrieval-gate:bench")
    parser.add_argument("--cold", action="store_true", help="empty the engine first (removes ALL images)")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []

    if args.cold:
        if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
            # the engine is down (its images may still be on disk): start it to empty it
            subprocess.Popen(["dockerd"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(60):
                if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0:
                    break
                time.sleep(1)
        subprocess.run("docker ps -aq | xargs -r docker rm -f; docker system prune -af", shell=True, check=True,
                       capture_output=True)
        rows.append(("build, empty engine (debootstrap base + all layers)", f"{build(args.tag):.0f} s"))
    else:
        build(args.tag)
    rows.append(("build, warm cache, nothing changed", f"{build(args.tag):.1f} s"))
    touch = REPO / "src" / "retrieval_gate" / "_bench_touch.py"
    touch.write_text("# a code change\n", encoding="utf-8")
    try:
        rows.append(("build, warm cache, after a code change", f"{build(args.tag):.0f} s"))
    finally:
        touch.unlink()
    build(args.tag)

    size = int(subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", args.tag], check=True,
                              capture_output=True, text=True).stdout)
    packed = compressed_size(args.tag)
    rows.append(("image size (uncompressed)", f"{size / 1e9:.2f} GB"))
    rows.append(("image size (layers gzip -6)", f"{packed / 1e6:.0f} MB"))

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        start = first_output(args.tag, example_workspace(tmp / "s"))
        rows.append(("container start → first output line", f"{start:.1f} s"))
        runner = Runner(tmp / "r", example_workspace(tmp / "ws"), args.tag)
        (tmp / "r").mkdir()
        for label in ("cold (empty store)", "warm (store reused)"):
            run = runner.run(event_name="push", event={"ref": "refs/heads/feature"}, ref="refs/heads/feature",
                             inputs={"config": "retrieval-gate.yml", "mode": "report"}, network="none")
            assert run.exit_code == 0, run.stderr[-2000:]
            rows.append((f"report mode, example suite, {label}", f"{run.seconds:.1f} s"))

        with serve_fake_github(token=TOKEN) as github:
            base = github.commit("main", {"baselines/default.json": (REPO / "baselines" / "default.json").read_text(
                encoding="utf-8")}, message="baseline")
            event = {"number": 3, "pull_request": {"number": 3, "base": {"sha": base, "ref": "main"},
                                                   "head": {"sha": "f" * 40, "repo": {"full_name": github.repository}}},
                     "repository": {"full_name": github.repository, "default_branch": "main"}}
            pr_runner = Runner(tmp / "p", example_workspace(tmp / "pws"), args.tag)
            (tmp / "p").mkdir()
            for label in ("cold", "warm"):
                run = pr_runner.run(event_name="pull_request", event=event, network="host", api_url=github.api_url,
                                    repository=github.repository, ref="refs/pull/3/merge")
                assert run.exit_code == 0 and run.outputs["verdict"] == "pass", run.stderr[-2000:]
                rows.append((f"pull request run (fake API), {label}", f"{run.seconds:.1f} s"))

            act = shutil.which("act")
            if act:
                repo = make_repo(tmp / "act-repo", args.tag)
                proc, seconds = run_act(act, repo, tmp, args.tag, "pull_request", event, github.api_url)
                assert proc.returncode == 0 and later_step(repo)["verdict"] == "pass", proc.stdout[-2000:]
                rows.append(("act: pull_request workflow end to end (cold store)", f"{seconds:.1f} s"))

    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value:>9} |")


if __name__ == "__main__":
    main()
