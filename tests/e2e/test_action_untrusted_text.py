"""A fork pull request's text — config keys, case and card ids, file names — reaches the runner's log
as text, never as a workflow command (``::error file=…``, ``::add-mask::``, ``::stop-commands::``)
nor as a terminal escape: each attack runs the action against the fake GitHub API over HTTP."""

from __future__ import annotations

import pytest

from retrieval_gate.score.results import InputInfo
from tests.e2e.action_harness import ActionRun, ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub
from tests.hostile_text import assert_no_command_from_text

BASELINE = "baselines/default.json"
BASE_CONFIG = "suites:\n  default:\n    k: [1, 5]\n    gate:\n      fail_on_regression: true\n"
CARD_ATTACK = "c1\n::error file=src/app.py,line=1::INJECTED-CARD-ID"
KEY_ATTACKS = ["hit@5\n::error file=.github/workflows/ci.yml,line=1::INJECTED",
               "recall@5\n::add-mask::ghs_\n::stop-commands::pwn",
               "ndcg@5\n##[add-mask]ghs_\n\x1b[2J\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\u202e"]
@pytest.fixture
def engine() -> FakeEngine:
    scores = {f"q{i}": (1.0 if i < 6 else 0.0) for i in range(10)}
    return FakeEngine(scores=scores)


def _pr(world: ActionWorld, github: FakeGitHub, engine: FakeEngine,
        baseline_scores: dict[str, float] | None = None, baseline_engine: FakeEngine | None = None) -> ActionRun:
    scores = baseline_scores if baseline_scores is not None else {f"q{i}": 1.0 for i in range(10)}
    text = baseline_text(scores=scores, sha="b" * 40, engine=baseline_engine)
    base = github.commit("main", {BASELINE: text,
                                  "retrieval-gate.yml": BASE_CONFIG}, message="base")
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base, fork=True),
                     ref="refs/pull/7/merge", sha="c" * 40)


def _yaml_key(text: str) -> str:
    import json

    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def test_thirteen_hostile_gate_keys_are_escaped_past_the_tenth_annotation(world, github, engine):
    keys = [f"{KEY_ATTACKS[i % 3]}-{i}" for i in range(13)]
    drops = "".join(f"        {_yaml_key(key)}: 0.5\n" for key in keys)
    config = BASE_CONFIG + "      max_drop:\n" + drops
    (world.workspace / "retrieval-gate.yml").write_text(config, encoding="utf-8")
    run = _pr(world, github, engine)
    assert run.exit_code in (0, 1, 2)
    assert_no_command_from_text(run.stdout, run.stderr)
    assert "INJECTED" in run.stdout + run.stderr  # shown, as text


HOSTILE_IDS = [f"{CARD_ATTACK}-{i}" for i in range(14)]


class _HostileIdsEngine(FakeEngine):
    """Lost hits whose case ids, queries and card ids carry commands, as a fork's KB and cases can,
    at lines of a golden set named through ``..``: the real comparison finds the 12 lost ones."""

    def evaluate(self, *, suite_config, suite):
        results = super().evaluate(suite_config=suite_config, suite=suite)
        results.inputs["cases"] = InputInfo(path="ci/../cases.jsonl", sha256="0" * 64, format="jsonl", count=14)
        for line, case in enumerate(results.cases, start=1):
            case.line = line
            case.query = f"q\n::add-mask::ghs_{line}"
            case.gold = [CARD_ATTACK]
            case.retrieved = [CARD_ATTACK] if case.scores["hit@5"] else [f"{CARD_ATTACK}\x1b[2J"]
        return results


def test_hostile_case_and_card_ids_are_escaped_in_every_annotation_and_log_line(world, github):
    engine = _HostileIdsEngine(scores={cid: (0.0 if i < 12 else 1.0) for i, cid in enumerate(HOSTILE_IDS)})
    world.engine = engine
    # the baseline was scored on the same (hostile) golden set, every case a hit: 12 lost
    run = _pr(world, github, engine, baseline_engine=_HostileIdsEngine(scores=dict.fromkeys(HOSTILE_IDS, 1.0)))
    assert_no_command_from_text(run.stdout, run.stderr)
    lost = [line for line in run.stdout.split("\n") if "lost its hit" in line]
    assert len(lost) == 12
    annotations = sum(line.startswith("::warning file=cases.jsonl,line=") for line in lost)  # the path normalised
    warnings = sum(line.startswith("::warning ") for line in run.stdout.split("\n"))
    assert warnings == 10 and 0 < annotations < 12  # GitHub's ten, then escaped log lines
    assert all(line.startswith("warning: cases.jsonl:") for line in lost[annotations:])


def test_a_kb_file_name_carrying_a_command_reaches_the_log_as_text(world, github):
    """The PR's golden-set audit reads its KB, where a fork committed an empty card whose file name
    holds a line break and a command: the audit cannot run, and says so in text."""
    import shutil

    from tests.e2e.action_harness import REPO

    engine = FakeEngine(scores={f"q{i}": (1.0 if i < 6 else 0.0) for i in range(10)}, real_audit=True)
    world.engine = engine
    shutil.copytree(REPO / "examples" / "kb", world.workspace / "examples" / "kb")
    shutil.copy(REPO / "examples" / "cases.jsonl", world.workspace / "examples" / "cases.jsonl")
    (world.workspace / "examples" / "kb" / "bad\n::error file=README.md,line=1::X\n.md").write_text("")
    config = BASE_CONFIG.replace("  default:\n", "  default:\n    kb: examples/kb\n    cases: examples/cases.jsonl\n")
    (world.workspace / "retrieval-gate.yml").write_text(config, encoding="utf-8")
    run = _pr(world, github, engine)
    assert_no_command_from_text(run.stdout, run.stderr)
    assert "::error file=README.md" not in run.stdout + run.stderr
    assert "::warning title=retrieval-gate%3A audit::the golden-set audit could not run: examples/kb/bad" in run.stdout
