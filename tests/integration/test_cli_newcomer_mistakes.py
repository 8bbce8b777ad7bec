"""What a newcomer gets wrong, answered as they expect (through the CLI, on small scored runs):
a typo'd floor slice and a headline k that moved by default exit 2 naming what is known; an error
that comes from flags only is blamed on the flags; ``compare`` finds ``baselines/<suite>.json`` as
the action does; ``validate`` reads the config file; a piped table keeps slice names whole;
``action`` outside GitHub says so and lists what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli

SLICES = ("account", "billing")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(list(args), capsys)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A repository with cases, a run scored at k 1,3,5,10, and baselines/default.json from it."""
    cases, run = [], []
    for i in range(12):
        cases.append({"id": f"q{i}", "query": f"question {i}", "gold": [f"d{i}"], "form": "MATCH",
                      "tags": {"area": SLICES[i % 2]}})
        run.append({"id": f"q{i}", "retrieved": [f"x{i}", f"d{i}"] if i % 3 else [f"d{i}"]})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "score", "--run", "run.jsonl", "--cases", "cases.jsonl", "--k", "1,3,5,10",
               "--out", "out/results.json")[0] == 0
    assert cli(capsys, "baseline", "update", "--results", "out/results.json",
               "--baseline", "baselines/default.json")[0] == 0
    return tmp_path


def test_a_typoed_floor_slice_exits_2_naming_it_and_the_known_slices(repo, capsys):
    code, _, err = cli(capsys, "compare", "--results", "out/results.json", "--floor", "hit@5:tag.area=acount=0.5")
    assert code == 2
    assert "no slice 'tag.area=acount'" in err and "--floor" in err
    assert "tag.area=account" in err and "tag.area=billing" in err and "overall" in err
    code, _, _ = cli(capsys, "compare", "--results", "out/results.json", "--floor", "hit@5:tag.area=account=0.5")
    assert code == 0  # the right name: judged (and met: 6 of 6 hits)


def test_compare_without_baseline_reads_baselines_suite_json_as_the_action_does(repo, capsys):
    code, out, _ = cli(capsys, "compare", "--results", "out/results.json")
    assert code == 0 and "PASS" in out
    (repo / "baselines" / "default.json").unlink()
    code, _, err = cli(capsys, "compare", "--results", "out/results.json")
    assert code == 2 and "baselines/default.json does not exist" in err and "--baseline" in err


def test_dropping_5_from_k_does_not_silently_move_the_gated_metric(repo, capsys):
    assert cli(capsys, "score", "--run", "run.jsonl", "--cases", "cases.jsonl", "--k", "1,3,10",
               "--out", "out/k10.json")[0] == 0
    code, _, err = cli(capsys, "compare", "--results", "out/k10.json")
    assert code == 2
    assert "moved from 5" in err and "to 10" in err and "headline_k" in err and "1, 3, 10" in err
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    headline_k: 10\n    k: [1, 3, 10]\n",
                                             encoding="utf-8")
    code, _, err = cli(capsys, "compare", "--results", "out/k10.json")
    assert code == 0, err  # said on purpose: compared (headline @10)


def test_a_headline_k_error_from_flags_only_blames_the_flags(repo, capsys):
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb.jsonl\n", encoding="utf-8")
    code, _, err = cli(capsys, "score", "--run", "run.jsonl", "--cases", "cases.jsonl", "--k", "1,3,10",
                       "--headline-k", "5", "--out", "out/x.json")
    assert code == 2
    assert "--k and --headline-k" in err and "retrieval-gate.yml" not in err


def test_validate_reads_the_config_file(repo, capsys):
    (repo / "kb.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": f"card {i}"}) + "\n"
                                           for i in range(12)), encoding="utf-8")
    code, _, err = cli(capsys, "validate")
    assert code == 2 and "--kb and --cases" in err
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb.jsonl\n    cases: cases.jsonl\n",
                                             encoding="utf-8")
    code, out, _ = cli(capsys, "validate")
    assert code == 0 and out.startswith("ok: 12 cases (12 with gold, 0 no-answer), 12 cards")


def test_compare_piped_keeps_slice_names_whole(repo):
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "compare", "--results", "out/results.json",
                           "--all"], cwd=repo, capture_output=True, text=True, check=False, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    first_cells = [line.split()[0] for line in done.stdout.splitlines() if line.startswith(" ") and line.split()]
    for name in ("tag.area=account", "tag.area=billing", "form=MATCH"):
        assert name in first_cells, done.stdout
    assert not any(cell in ("H", "unt", "ing") for cell in first_cells)


@pytest.mark.model
def test_action_outside_github_says_so_and_lists_every_file_it_wrote(repo):
    (repo / "kb.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": f"card number {i}"}) + "\n"
                                           for i in range(12)), encoding="utf-8")
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb.jsonl\n    cases: cases.jsonl\n",
                                             encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_", "ACTIONS_"))}
    env.update({"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "HF_HUB_OFFLINE": "1"})
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "action"], cwd=repo, capture_output=True,
                          text=True, check=False, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "not on GitHub Actions" in ln]
    written = sorted(p.relative_to(repo).as_posix() for p in (repo / "retrieval-gate-out").rglob("*") if p.is_file())
    assert written and "retrieval-gate-out/results.json" in written
    assert line.endswith("wrote " + ", ".join(written))
    assert "ran mode report" in line
