"""What the labels know: judged@k for every gold form (list gold + the not-relevant sidecar, graded
gold with grade 0, qrels), the condensed reading (Sakai: unjudged cards removed before scoring),
and, on a pooled golden set, the gate's ``needs-labels`` status where some labelling of the
unjudged cards changes its decision (a complete set: pass or fail, as trec_eval reads it).
Expected values are worked by hand, or by pytrec_eval on the same run (condensed by hand)."""

from __future__ import annotations

import pytest
import pytrec_eval

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.condensed import condense, judged_at
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.model import gate_fails
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.verdict import title
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.kb_manifest import KbCard


def results_for(cases, rankings, *, ks=(1, 3, 5), not_relevant=None, headline_k=None):
    return assemble_results(case_set=CaseSet(tuple(cases), "cases.jsonl", "0", "jsonl"),
                            rankings={k: RankedList(ids=tuple(v)) for k, v in rankings.items()},
                            metrics=metric_specs(ks), ks=ks, not_relevant=not_relevant, headline_k=headline_k)


# --- judged@k: a judgement is a judgement ----------------------------------------------------

def test_list_gold_with_the_sidecar_counts_the_not_relevant_cards_as_judged():
    # ranking a x b y z; gold a; sidecar: x and y judged not relevant → judged in the top 5: a, x, y
    case = Case(id="c", query="q", gold=["a"])
    without = results_for([case], {"c": "axbyz"})
    with_sidecar = results_for([case], {"c": "axbyz"}, not_relevant={"c": {"x", "y"}})
    assert without.cases[0].unjudged == {"unjudged@1": 0.0, "unjudged@3": 2 / 3, "unjudged@5": 4 / 5}
    assert with_sidecar.cases[0].unjudged == {"unjudged@1": 0.0, "unjudged@3": 1 / 3, "unjudged@5": 2 / 5}
    assert with_sidecar.cases[0].not_relevant == ["x", "y"]
    # the scores do not move: a card judged not relevant gains nothing
    assert with_sidecar.cases[0].scores == without.cases[0].scores


def test_graded_gold_with_grade_zero_and_the_sidecar_agree():
    # the same judgements in two forms: graded gold {a: 1, x: 0, y: 0} and list gold [a] + sidecar {x, y}
    graded = results_for([Case(id="c", query="q", gold={"a": 1, "x": 0, "y": 0})], {"c": "axbyz"})
    listed = results_for([Case(id="c", query="q", gold=["a"])], {"c": "axbyz"}, not_relevant={"c": ["x", "y"]})
    assert graded.cases[0].unjudged == listed.cases[0].unjudged
    assert graded.unjudged["overall"]["unjudged@5"].value == pytest.approx(2 / 5)


def test_a_sidecar_entry_for_a_gold_card_leaves_it_gold():
    got = results_for([Case(id="c", query="q", gold=["a"])], {"c": "ab"}, not_relevant={"c": ["a"]})
    assert got.cases[0].scores["hit@1"] == 1.0 and got.cases[0].not_relevant == []


def test_judged_at_k_is_ir_measures_judged_which_is_precision_with_every_judgement_relevant():
    # ir_measures: "Judged@k … Equivalent to P@k with a rel lower than any judgment": pytrec_eval's
    # P_k over qrels where every judged card (grades 2, 1, 0) is relevant
    judged = {"a": 2, "b": 1, "x": 0}
    ranked = ["a", "u1", "x", "u2", "b", "u3"]
    run = {"q": {card: float(len(ranked) - i) for i, card in enumerate(ranked)}}
    evaluator = pytrec_eval.RelevanceEvaluator({"q": dict.fromkeys(judged, 1)}, {"P_1", "P_3", "P_5", "P_10"})
    reference = evaluator.evaluate(run)["q"]
    assert judged_at(ranked, judged, (1, 3, 5, 10)) == pytest.approx([reference[f"P_{k}"] for k in (1, 3, 5, 10)])
    # by hand: top 3 = a, u1, x → 2/3; top 10 of a 6-card ranking: 3 judged / 10
    assert judged_at(ranked, judged, (3, 10)) == [2 / 3, 0.3]
    got = results_for([Case(id="q", query="q", gold=judged)], {"q": ranked}, ks=(1, 3, 5, 10))
    assert {k: 1 - v for k, v in got.cases[0].unjudged.items()} == pytest.approx(
        {f"unjudged@{k}": reference[f"P_{k}"] for k in (1, 3, 5, 10)})


# --- the condensed reading ------------------------------------------------------------------

def test_condensed_ndcg_equals_pytrec_eval_on_the_run_with_unjudged_cards_removed():
    grades = {"a": 2, "b": 1, "x": 0}
    ranked = ["u1", "x", "u2", "b", "a", "u3"]
    condensed = condense(ranked, grades)
    assert condensed == ["x", "b", "a"]
    run = {"q": {card: float(len(condensed) - i) for i, card in enumerate(condensed)}}
    reference = pytrec_eval.RelevanceEvaluator({"q": grades}, {"ndcg_cut_3", "ndcg_cut_5"}).evaluate(run)["q"]
    results = results_for([Case(id="q", query="q", gold=grades)], {"q": ranked}, ks=(3, 5))
    baseline = update_baseline(baseline=None, results=results, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")
    assert compare(results=results, baseline=baseline, gate=GateSettings(), resamples=1000).condensed is None  # no gate
    comparison = compare(results=results, baseline=baseline, gate=GateSettings(floors={"hit@5": 0.5}), resamples=1000,
                         judgements="pooled")
    rows = {r.metric: r for r in comparison.condensed.rows} if comparison.condensed else {}
    # the condensed reading's judged row (hit@5 alone by default) and, through the same path, nDCG
    assert "hit@5" in rows and rows["hit@5"].current == 1.0
    from retrieval_gate.compare.condensed import condensed_inputs

    condensed_results, _ = condensed_inputs(results=results, baseline=baseline)
    scores = condensed_results.cases[0].scores
    assert scores["ndcg@3"] == pytest.approx(reference["ndcg_cut_3"], abs=1e-12)
    assert scores["ndcg@5"] == pytest.approx(reference["ndcg_cut_5"], abs=1e-12)
    # by hand (gain = grade, as trec_eval): DCG@3 of x, b, a = 0 + 1/log2(3) + 2/log2(4); ideal a, b = 2 + 1/log2(3)
    by_hand = (1 / 1.584962500721156 + 2 / 2) / (2 + 1 / 1.584962500721156)
    assert scores["ndcg@3"] == pytest.approx(by_hand, abs=1e-12)


N = 10


def gate_cases():
    return [Case(id=f"q{i}", query=f"question {i}", gold=[f"g{i}"]) for i in range(N)]


def comparison_of(pr_rankings, *, not_relevant=None, gate=None, judgements="pooled"):
    # judged at k = 1 (the headline), rankings kept to max(k) = 3: what the condensed reading reads
    cases = gate_cases()
    base = results_for(cases, {f"q{i}": [f"g{i}", "z1", "z2"] for i in range(N)}, ks=(1, 3),
                       not_relevant=not_relevant, headline_k=1)
    baseline = update_baseline(baseline=None, results=base, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")
    now = results_for(cases, pr_rankings, ks=(1, 3), not_relevant=not_relevant, headline_k=1)
    comparison = compare(results=now, baseline=baseline, resamples=1000,
                         gate=gate or GateSettings(fail_on_regression=True), judgements=judgements)
    comparison_of.last = (now, baseline)
    return comparison


def test_a_pr_that_puts_unjudged_cards_on_top_needs_labels():
    # every case: the PR ranks a new card u_i (nobody judged it) above the gold card. Standard
    # reading: 10 of 10 hits lost (one-sided p = 1/1024): fail. Every u_i relevant (the labelling
    # for the PR): each case still a hit at 1, nothing changed: pass. The labels cannot support
    # either verdict: the 10 cards u_i, one per case, decide it. (The condensed reading agrees
    # with the PR's side: u_i removed, the gold card is first again.)
    comparison = comparison_of({f"q{i}": [f"u{i}", f"g{i}", "z1"] for i in range(N)})
    assert comparison.failures and comparison.condensed is not None and comparison.condensed.verdict == "pass"
    assert comparison.verdict == "needs-labels" and comparison.gate.status == "needs-labels"
    assert comparison.judgements == "pooled"
    need = comparison.needs_labels
    assert need is not None and (need.cards, need.cases, need.if_relevant, need.if_not_relevant) == (
        10, 10, "pass", "fail")
    assert comparison.unjudged_top_k == 10 and comparison.unjudged_share == 1.0 and comparison.unjudged_note
    assert gate_fails(comparison)
    # both sides' judged@1 per slice: the baseline's top 1 was the gold card; the PR's is unjudged
    cell = comparison.judged["overall"]["judged@1"]
    assert (cell.baseline, cell.current, cell.n_baseline, cell.n_current) == (1.0, 0.0, N, N)
    words = title(comparison=comparison, baseline=None, headline=[])
    assert words.state == "needs_labels"
    assert "needs labels: 10 cards in 10 cases decide the verdict" in words.text


def test_on_a_complete_golden_set_the_same_pr_fails_as_trec_eval_reads_it():
    # the same run on a set judged complete: a card outside the gold is not relevant, so the 10
    # lost hits are lost (one-sided p = 1/1024 < 0.05): fail, with no request for labels
    from retrieval_gate.render.markdown import render_comment

    comparison = comparison_of({f"q{i}": [f"u{i}", f"g{i}", "z1"] for i in range(N)}, judgements="complete")
    assert comparison.verdict == "fail" and comparison.gate.status == "fail"
    assert comparison.judgements == "complete" and comparison.needs_labels is None
    assert comparison.condensed is None and not comparison.unjudged_note
    results, baseline = comparison_of.last
    body = render_comment(results=results, comparison=comparison, baseline=baseline)
    assert "label" not in body.lower().replace("labelled", "")


def test_needs_labels_reads_in_the_comment_junit_and_the_step_outputs():
    import xml.etree.ElementTree as ET

    from retrieval_gate.publish.outputs import step_outputs
    from retrieval_gate.render.junit import render_junit
    from retrieval_gate.render.markdown import render_comment

    comparison = comparison_of({f"q{i}": [f"u{i}", f"g{i}", "z1"] for i in range(N)})
    results, baseline = comparison_of.last
    body = render_comment(results=results, comparison=comparison, baseline=baseline)
    title_line = next(line for line in body.splitlines() if line.startswith("### "))
    assert title_line.startswith("### 🏷️ Retrieval · default · 10 lost, 0 gained — needs labels: 10 cards in 10 cases")
    assert "**Needs labels:** 10 cards in 10 cases have no judgement, and their labels decide the verdict" in body
    # 5 lost hits confirmed, none gained: one-sided p = (½)⁵ = 1/32 < 0.05 (4: 1/16)
    assert "A first sitting of 5 of them settles it if they are not relevant." in body
    assert "`retrieval-gate label top-up --results results.json --baseline baseline.json --out top-up`" in body
    assert "as labelled now: hit@1 on overall: dropped by 1.000" in body
    linked = render_comment(results=results, comparison=comparison, baseline=baseline,
                            top_up={"cards": 10, "cases": 10, "k": 1, "path": "retrieval-gate/top-up/label.html",
                                    "draft": "top-up/draft.jsonl", "url": "https://example.test/runs/7"})
    assert ("Label exactly these cards: retrieval-gate/top-up/label.html in [this run's artifacts]"
            "(https://example.test/runs/7)") in linked
    suite = ET.fromstring(render_junit(results=results, comparison=comparison).split("\n", 1)[1])
    (gate,) = [t for t in suite.iter("testcase") if t.get("name") == "gate"]
    assert gate.find("failure").get("type") == "needs-labels"
    outputs = step_outputs(results=results, comparison=comparison, mode="pr")
    assert (outputs["verdict"], outputs["gate_status"]) == ("needs-labels", "needs-labels")
    from retrieval_gate.render.html import render_html

    page = render_html(results=results, comparison=comparison, baseline=baseline)
    assert 'class="verdict v-needs_labels"' in page and 'id="needs-labels"' in page
    assert ("<code>retrieval-gate label top-up --results results.json --baseline baseline.json --out top-up</code>"
            in page)
    assert "The gate failed" not in page
    warned = comparison_of({f"q{i}": [f"u{i}", f"g{i}", "z1"] for i in range(N)},
                           gate=GateSettings(fail_on_regression=True, unjudged="warn"))
    suite = ET.fromstring(render_junit(results=results, comparison=warned).split("\n", 1)[1])
    (gate,) = [t for t in suite.iter("testcase") if t.get("name") == "gate"]
    assert gate.find("failure") is None and gate.find("skipped").get("type") == "needs-labels"
    assert "`gate.unjudged: warn` is set, so the check passes." in render_comment(
        results=results, comparison=warned, baseline=baseline)


def test_a_share_of_unjudged_cards_above_ten_percent_is_said_even_when_the_labels_decide():
    from retrieval_gate.render.markdown import render_comment

    # 8 cases: the PR puts u_i, judged not relevant, above the gold card: 8 lost hits whatever the
    # labels (one-sided p = 1/256 < 0.05): fail, decided. 2 cases: an unjudged card w_i on top —
    # 2 of the 10 top-1 cards (20%, more than 10%): the note says so
    pr = {f"q{i}": [f"u{i}", f"g{i}"] for i in range(8)} | {f"q{i}": [f"w{i}", f"g{i}"] for i in (8, 9)}
    comparison = comparison_of(pr, not_relevant={f"q{i}": {f"u{i}"} for i in range(8)})
    results, baseline = comparison_of.last
    assert comparison.unjudged_note and comparison.verdict == "fail" and comparison.needs_labels is None
    body = render_comment(results=results, comparison=comparison, baseline=baseline)
    assert "20% of this PR's top 1 are cards no judgement covers (2 cards; more than 10%)" in body


def test_needs_labels_with_gate_unjudged_warn_does_not_fail_the_job():
    comparison = comparison_of({f"q{i}": [f"u{i}", f"g{i}"] for i in range(N)},
                               gate=GateSettings(fail_on_regression=True, unjudged="warn"))
    assert comparison.verdict == "needs-labels" and not gate_fails(comparison)


def test_once_the_cards_are_judged_not_relevant_the_readings_agree_and_the_gate_fails():
    # the same PR after labelling: every u_i judged not relevant (the sidecar) → judged, kept in
    # the condensed ranking, so both readings lose the 10 hits: a failure the labels support
    comparison = comparison_of({f"q{i}": [f"u{i}", f"g{i}"] for i in range(N)},
                               not_relevant={f"q{i}": {f"u{i}"} for i in range(N)})
    assert comparison.verdict == "fail" and comparison.condensed.verdict == "fail"
    assert comparison.gate.status == "fail" and comparison.unjudged_top_k == 0
    # and compare never calls a judged card unjudged: no lost hit is put to the labelling queue
    assert all(c.cause != "unjudged" for c in comparison.changed_cases)
    assert all(d.judged for c in comparison.changed_cases for d in c.displaced_by)
    assert all(c.possibly_relevant is None for c in comparison.lost_hits)


def test_a_pr_that_drops_the_gold_card_for_an_unjudged_one_needs_labels_on_a_pooled_set_only():
    # the PR's top 1 is u_i, unjudged, and the gold card is gone from its top 3: if u_i answers the
    # question the case is still a hit (10 ties: pass); if not, 10 lost hits (fail). The condensed
    # reading (u_i and z1 removed: an empty ranking) fails: it is not what decides any more
    pr = {f"q{i}": [f"u{i}", "z1"] for i in range(N)}
    comparison = comparison_of(pr)
    assert comparison.verdict == "needs-labels" and comparison.condensed.verdict == "fail"
    assert (comparison.needs_labels.cards, comparison.needs_labels.cases) == (10, 10)
    assert comparison_of(pr, judgements="complete").verdict == "fail"


def test_readings_that_agree_on_a_pass_pass_and_unchanged_runs_have_no_note():
    comparison = comparison_of({f"q{i}": [f"g{i}", "z1", "z2"] for i in range(N)})
    assert comparison.verdict == "pass" and comparison.gate.status == "pass"
    assert comparison.unjudged_top_k == 0 and not comparison.unjudged_note


# --- what changed: causes that agree with the case's rows ---------------------------------------

def kb(**cards: str) -> dict[str, KbCard]:
    return {card: KbCard(sha=sha, title=card) for card, sha in cards.items()}


def test_a_case_whose_ranking_holds_an_edited_card_is_not_ranked_differently_for_no_reason():
    # gold g0 moves 2 → 1 because d (above it in the baseline) fell; d was edited in this PR
    cases = [Case(id="q0", query="q", gold=["g0"])]
    base = results_for(cases, {"q0": ["d", "g0", "z"]}, ks=(1, 3))
    baseline = update_baseline(baseline=None, results=base, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")
    now = results_for(cases, {"q0": ["g0", "z", "d"]}, ks=(1, 3))
    now = now.model_copy(update={"kb_cards": kb(d="new", g0="1", z="1")})
    comparison = compare(results=now, baseline=baseline, gate=GateSettings(), resamples=1000,
                         kb_before=kb(d="old", g0="1", z="1"))
    (change,) = comparison.changed_cases
    assert change.cause == "card-changed"


def test_a_deleted_gold_card_is_a_measured_loss_named_gold_removed():
    cases = [Case(id="q0", query="q", gold=["g0"]), Case(id="q1", query="q", gold=["typo"])]
    base = results_for(cases, {"q0": ["g0", "z"], "q1": ["z"]}, ks=(1,))
    baseline = update_baseline(baseline=None, results=base, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")
    now = results_for(cases, {"q0": ["z"], "q1": ["z"]}, ks=(1,))
    now = now.model_copy(update={"kb_cards": kb(z="1"), "gold_missing": {"q0": ["g0"], "q1": ["typo"]}})
    comparison = compare(results=now, baseline=baseline, gate=GateSettings(), resamples=1000,
                         kb_before=kb(g0="1", z="1"))
    assert comparison.gold_removed == {"q0": ["g0"]} and comparison.gold_unknown == {"q1": ["typo"]}
    (change,) = comparison.changed_cases
    assert change.cause == "gold-removed" and change.movement == "lost-hit"
    # the case stays in the denominator: hit@1 of q0 is 0, not dropped
    assert {c.id: c.scores["hit@1"] for c in now.cases} == {"q0": 0.0, "q1": 0.0}
