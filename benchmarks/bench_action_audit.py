"""What the golden-set audit adds to the action's runs, measured in one process:

1. the audit of this repository's example suite (``evaluation.audit_suite``, what the action's
   ``Engine.audit`` runs on a refresh and on every PR): wall and CPU seconds over REPEATS runs;
2. one refresh write — the baseline and its audit in one commit — through the production GitHub
   adapter (``GitHubRepo``, default settings: 1 s between write requests, as GitHub asks of
   mutating calls) against the fake GitHub API over HTTP on 127.0.0.1 (``tests/e2e/fake_github.py``):
   wall seconds and the requests it made, with and without the audit file.

Usage: flock /tmp/bench.lock python benchmarks/bench_action_audit.py   (≈15 s)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.fake_github import serve_fake_github  # noqa: E402

from retrieval_gate.artifacts.run_files import audit_text  # noqa: E402
from retrieval_gate.evaluation.audit_suite import audit_suite  # noqa: E402
from retrieval_gate.forge.github.api import GitHubRepo  # noqa: E402
from retrieval_gate.publish.untrusted import scrub_text  # noqa: E402
from retrieval_gate.settings import load_config, resolve_suite  # noqa: E402

REPEATS = 5
TOKEN = "ghs_bench0123456789"


def audit_times() -> tuple[list[float], list[float], str]:
    config, path = load_config(REPO / "retrieval-gate.yml", required=True)
    suite = resolve_suite(config, suite="default", overrides={}, config_path=path)
    walls, cpus, text = [], [], ""
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        report = audit_suite(suite_config=suite)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        text = audit_text(report)
    return walls, cpus, text


def write_time(files: dict[str, str]) -> tuple[float, dict[str, int]]:
    with serve_fake_github(token=TOKEN) as fake:
        repo = GitHubRepo(token=TOKEN, scrub=masking(TOKEN.get_secret_value()),
                      repository=fake.repository, api_url=fake.api_url)  # production spacing
        start = time.perf_counter()
        head = repo.branch_head(branch="main")
        for path in files:
            repo.get_file(path=path, ref=head)
        repo.commit_files(branch="main", parent=head, files=files, message="bench [skip ci]")
        seconds = time.perf_counter() - start
        counts: dict[str, int] = {}
        for request in fake.log:
            counts[request.method] = counts.get(request.method, 0) + 1
        return seconds, counts


def main() -> None:
    walls, cpus, text = audit_times()
    print(f"audit of the example suite, in process: first run {walls[0]:.3f} s wall / {cpus[0]:.3f} s CPU "
          "(imports numpy, datasketch, the loaders)")
    rest_w, rest_c = walls[1:], cpus[1:]
    print(f"  next {len(rest_w)} runs: wall median {statistics.median(rest_w):.3f} s (min {min(rest_w):.3f}, "
          f"max {max(rest_w):.3f}); CPU median {statistics.median(rest_c):.3f} s")
    print(f"  audit file {len(text.encode()):,} bytes")
    baseline = (REPO / "baselines" / "default.json").read_text(encoding="utf-8")
    for label, files in (("baseline only", {"baselines/default.json": baseline}),
                         ("baseline + audit", {"baselines/default.json": baseline,
                                               "baselines/default.audit.json": text})):
        seconds, counts = write_time(files)
        print(f"refresh write, {label}: {seconds:.2f} s wall; requests {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()


def masking(*secrets: object) -> object:
    """The adapter's scrubber: the one scrubber (``scrub_text``) over these secrets."""
    values = [s.get_secret_value() if hasattr(s, "get_secret_value") else str(s) for s in secrets]
    return lambda text: scrub_text(text, secrets=values)
