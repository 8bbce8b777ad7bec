"""The history's pure core on hand-worked examples: the points, the paired steps (the gate's exact
sign test, by hand), what changed, flaky cases (clean flips only), cases lost for good, the largest
drops, gaps; and the page's run-length encoding and badge."""

from __future__ import annotations

import math

import pytest

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.history.build import build_history
from retrieval_gate.history.model import Version
from retrieval_gate.history.steps import change_between, pr_number
from retrieval_gate.history.walk import dirty_cases
from retrieval_gate.render.badge import badge_state, badge_svg
from retrieval_gate.render.history_page import grid_data, run_length
from retrieval_gate.score.kb_manifest import KbCard
from tests.history_repo import Refresh, make_baseline


def version(i: int, refresh: Refresh, *, kb: dict[str, str] | None = None, message: str = "refresh") -> Version:
    cards = None if kb is None else {c: KbCard(sha=v * 64, title=c) for c, v in kb.items()}
    return Version(sha=f"{i:040x}", date=f"2026-01-{i + 1:02d}T00:00:00+00:00", message=message,
                   path="baselines/default.json", baseline=make_baseline(refresh), kb=cards)


def cases(hits: dict[str, int], ranked: dict[str, list[str]] | None = None) -> dict[str, tuple[int, float, list[str]]]:
    return {c: (h, 0.8 * h, (ranked or {}).get(c, [f"card-{c}"])) for c, h in hits.items()}


def holders(baseline: Baseline) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for case_id, case in baseline.cases.items():
        for card in case.ranked:
            out.setdefault(card, set()).add(case_id)
    return out


def dirty(change, *, before: Baseline, after: Baseline) -> set[str] | None:
    return dirty_cases(change, holders_before=holders(before), holders_after=holders(after),
                       rankings=before.rankings and after.rankings)


def build(versions: list[Version]):
    return build_history(versions, suite="default", alpha=0.05, resamples=2000)


@pytest.mark.parametrize(("message", "number"), [
    ("Merge pull request #12 from team/branch", 12),
    ("Fix the chunker (#345)", 345),
    ("Merge branch 'x' into 'main'\n\nSee merge request group/project!67", 67),
    ("retrieval-gate: refresh baseline", None),
    ("mentions #12 but merges nothing", None),
    ('Revert "Add the reranker (#5)" (#12)', 12),  # a squashed revert: the revert's PR, not the reverted one
    ('Revert "Add the reranker (#5)" (#12)\n\nThis reverts commit 1a2b3c4d.', 12),
    ('Revert "Merge pull request #5 from team/rerank" (#12)', 12),
    ('Merge branch \'revert\' into \'main\'\n\nRevert "Add x (#5)"\n\nSee merge request group/project!12', 12),
    ('Merged PR 12: Revert "Add x (#5)"', 12),
    ('Revert "Add the reranker (#5)"', None),  # an unmerged revert names no pull request of its own
])
def test_the_pr_a_commit_message_names(message: str, number: int | None) -> None:
    assert pr_number(message) == number


def test_a_step_of_five_lost_hits_is_the_exact_sign_test_by_hand() -> None:
    before = {f"c{i}": 1 for i in range(10)}
    after = {**before, **{f"c{i}": 0 for i in range(5)}}
    history = build([version(0, Refresh(cases=cases(before))), version(1, Refresh(cases=cases(after)))])
    first, second = history.points
    assert first.step == {} and first.change is None
    assert first.headline["hit@5"] == 1.0 and second.headline["hit@5"] == 0.5 and second.n == 10
    step = second.step["hit@5"]
    # 5 paired cases went 1 → 0, none 0 → 1: two-sided sign test p = 2 · (1/2)^5 = 1/16
    assert step.delta == -0.5 and step.n == 10 and step.lost == 5 and step.gained == 0
    assert step.p == pytest.approx(1 / 16)
    assert not step.significant  # 0.0625 ≥ 0.05
    assert step.ci[0] < -0.5 < step.ci[1] and step.ci[1] >= 0  # not significant: the interval holds 0
    # Wilson's 95 % interval of 5/10 by hand: centre (0.5 + z²/20) / (1 + z²/10), z = 1.96
    z = 1.959963984540054
    centre = (0.5 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    assert second.interval["hit@5"] == pytest.approx((centre - half, centre + half))


def test_six_lost_of_six_changed_is_significant() -> None:
    before = {f"c{i}": 1 for i in range(12)}
    after = {**before, **{f"c{i}": 0 for i in range(6)}}
    history = build([version(0, Refresh(cases=cases(before))), version(1, Refresh(cases=cases(after)))])
    step = history.points[1].step["hit@5"]
    assert step.p == pytest.approx(2 / 64) and step.significant and step.ci[1] < 0
    assert [d.model_dump(include={"measure", "point", "delta"}) for d in history.drops][:1] == [
        {"measure": "hit@5", "point": 1, "delta": -0.5}]


def test_what_changed_settings_kb_cards_and_cases() -> None:
    before = make_baseline(Refresh(cases=cases({"a": 1, "b": 1})))
    after = make_baseline(Refresh(cases=cases({"b": 1, "c": 0}), model="other-model", cases_hash="d" * 64))
    kb_before = {"k1": KbCard(sha="1" * 64), "k2": KbCard(sha="2" * 64)}
    kb_after = {"k2": KbCard(sha="3" * 64), "k3": KbCard(sha="4" * 64)}
    change = change_between(before=before, after=after, kb_before=kb_before, kb_after=kb_after)
    assert [(c.key, c.old, c.new) for c in change.settings] == [("config.model", "all-MiniLM-L6-v2", "other-model")]
    assert (change.kb.added, change.kb.removed, change.kb.edited) == (["k3"], ["k1"], ["k2"])
    assert (change.cases.added, change.cases.removed, change.cases.gold_changed) == (["c"], ["a"], True)
    assert change.kinds() == ["settings", "kb", "golden set"]
    assert dirty(change, before=before, after=after) is None  # settings changed: every case


def test_a_kb_edit_dirties_only_the_cases_that_rank_the_card() -> None:
    ranked = {"a": ["k1", "k2"], "b": ["k3"], "c": ["k4"]}
    before = make_baseline(Refresh(cases=cases({"a": 1, "b": 1, "c": 1}, ranked)))
    after = make_baseline(Refresh(cases=cases({"a": 0, "b": 1, "c": 1}, {**ranked, "c": ["k2"]})))
    kb1 = {c: KbCard(sha=c * 32) for c in ("k1", "k2", "k3", "k4")}
    kb2 = {**kb1, "k2": KbCard(sha="e" * 64)}
    change = change_between(before=before, after=after, kb_before=kb1, kb_after=kb2)
    assert change.kb.edited == ["k2"] and change.settings == []
    assert dirty(change, before=before, after=after) == {"a", "c"}  # c ranks k2 after the step
    edited = make_baseline(Refresh(cases=cases({"a": 0, "b": 1, "c": 1}, ranked), kb={"k2": "new"}))
    unseen = change_between(before=before, after=edited, kb_before=None, kb_after=kb2)
    assert unseen.kb.unseen and unseen.kinds() == ["kb"]  # the KB's hash moved, no manifest before
    assert dirty(unseen, before=before, after=edited) is None  # cannot place it: every case


def test_flaky_counts_only_flips_at_clean_steps_and_lost_names_the_last_loss() -> None:
    # hits of three cases over five refreshes; step 2 edits card k-b (ranked by b only),
    # step 3 changes the model (every case dirty)
    seq = {"a": [1, 0, 1, 0, 0], "b": [1, 0, 1, 1, 0], "c": [1, 1, 0, 1, 0]}
    ranked = {"a": ["k-a"], "b": ["k-b"], "c": ["k-c"]}
    kbs = [{"k-a": "a", "k-b": "b", "k-c": "c"}] * 2 + [{"k-a": "a", "k-b": "x", "k-c": "c"}] * 3
    models = ["m1", "m1", "m1", "m2", "m2"]
    versions = [version(i, Refresh(cases=cases({c: seq[c][i] for c in seq}, ranked), model=models[i]), kb=kbs[i])
                for i in range(5)]
    history = build(versions)
    # a: flips at steps 1, 2 (clean), 3 (model) → 2 clean flips: flaky.
    # b: steps 1 (clean), 2 (its card edited), 4 (clean) → 2 clean: flaky.
    # c: steps 2 (clean), 3 (model), 4 (clean) → 2 clean: flaky... of (2, 4): yes.
    assert history.flaky == ["a", "b", "c"]
    seq2 = {"a": [1, 0, 1, 1, 1], "b": [1, 0, 1, 1, 1]}
    versions = [version(i, Refresh(cases=cases({c: seq2[c][i] for c in seq2}, ranked), model=models[i]),
                        kb=kbs[i]) for i in range(5)]
    history = build(versions)
    # a flips at steps 1 and 2, both clean: flaky; b flips at 1 (clean) and 2 (its card k-b edited): not
    assert history.flaky == ["a"]
    assert history.lost == []
    assert history.cases == {"a": [1, 0, 1, 1, 1], "b": [1, 0, 1, 1, 1]}


def test_lost_for_good_and_cases_that_come_and_go() -> None:
    steps = [{"a": 1, "b": 1}, {"a": 0, "b": 1, "n": 1}, {"a": 0, "n": 0}]
    history = build([version(i, Refresh(cases=cases(s))) for i, s in enumerate(steps)])
    assert history.cases == {"a": [1, 0, 0], "b": [1, 1, None], "n": [None, 1, 0]}
    assert [(c.id, c.point) for c in history.lost] == [("a", 1), ("n", 2)]
    assert history.points[2].change.cases.removed == ["b"]


def test_an_unreadable_version_is_a_gap_and_the_next_steps_from_the_last_readable() -> None:
    good = [version(0, Refresh(cases=cases({"a": 1}))), version(2, Refresh(cases=cases({"a": 0})))]
    bad = Version(sha="f" * 40, date="2026-01-02T00:00:00+00:00", message="hand edit", path="baselines/default.json",
                  baseline=None, problem="ffff:baselines/default.json:3: not a baseline: JSON syntax error")
    history = build([good[0], bad, good[1]])
    assert [g.sha for g in history.gaps] == ["f" * 40] and "JSON syntax error" in history.gaps[0].reason
    assert len(history.points) == 2 and history.points[1].step["hit@5"].delta == -1.0


def test_run_length_and_the_grid_rows() -> None:
    assert run_length([1, 1, 0, None, None, 1]) == "12 01 .2 11"
    assert run_length([]) == ""
    steps = [{"a": 1, "s": 1}, {"a": 0, "s": 1}, {"a": 1, "s": 1}, {"a": 0, "s": 1}]
    history = build([version(i, Refresh(cases=cases(s))) for i, s in enumerate(steps)])
    grid = grid_data(history)
    assert grid["steady"] == 1 and grid["points"] == 4
    assert grid["rows"] == [{"id": "a", "r": "11 01 11 01", "f": 3, "h": 2, "k": 4, "s": "flaky"}]


def test_the_badge_reads_the_last_step() -> None:
    before = {f"c{i}": 1 for i in range(12)}
    after = {**before, **{f"c{i}": 0 for i in range(6)}}
    history = build([version(0, Refresh(cases=cases(before))), version(1, Refresh(cases=cases(after)))])
    assert badge_state(history) == ("hit@5", "0.500 · n=12", "down")
    svg = badge_svg(history)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and "hit@5" in svg and "#C23B00" in svg
    assert "http" not in badge_svg(history, standalone=False)
    one = build([version(0, Refresh(cases=cases(before)))])
    assert badge_state(one) == ("hit@5", "1.000 · n=12", "none")


def rprec_only(refresh: Refresh) -> Baseline:
    """A suite measuring only R-precision (no cutoff): each case's Rprec is its nDCG@5 here."""
    made = make_baseline(refresh)
    cases = {cid: case.model_copy(update={"scores": {"Rprec": case.scores["ndcg@5"]}})
             for cid, case in made.cases.items()}
    aggregates = {name: {"Rprec": cells["ndcg@5"]} for name, cells in made.aggregates.items()}
    return made.model_copy(update={"metrics": ["Rprec"], "cases": cases, "aggregates": aggregates})


def test_a_suite_without_a_cutoff_measure_gets_points_and_steps_on_its_own_measure() -> None:
    before, after = cases({f"c{i}": 1 for i in range(4)}), cases({"c0": 0, "c1": 1, "c2": 1, "c3": 1})
    versions = [Version(sha=f"{i:040x}", date=f"2026-01-{i + 1:02d}T00:00:00+00:00", message="refresh",
                        path="baselines/default.json", baseline=rprec_only(Refresh(cases=c)))
                for i, c in enumerate((before, after))]
    history = build(versions)
    assert history.measures == ["Rprec"]
    first, second = history.points
    assert first.headline == {"Rprec": 0.8} and second.headline == {"Rprec": 0.6} and second.n == 4
    step = second.step["Rprec"]  # one case 0.8 → 0.0, three unchanged: a paired mean drop of 0.2
    assert step.delta == pytest.approx(-0.2) and step.n == 4 and not step.significant
    grid = grid_data(history)  # no hit@5 measured: no case is counted as keeping its hit
    assert (grid["rows"], grid["steady"], grid["unscored"]) == ([], 0, 4)
