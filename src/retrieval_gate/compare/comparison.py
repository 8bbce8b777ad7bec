"""Compare a run with a baseline: one row per metric × slice, paired uncertainty, the gate. Pure.

Per row (metric m, slice s):

- ``baseline`` / ``current``: the full-set means, as each file's aggregates report them, with
  ``n_baseline`` / ``n_current`` — what a reader sees in each run's own report;
- ``delta`` = ``(1/n) Σ_i (current_i − baseline_i)`` over the n *paired* cases: present in both
  runs with a score for m, and in slice s in the current run. Per-case scores are rounded to 6
  decimals on both sides first, so an unchanged case contributes exactly 0. When no case was
  added or removed, ``delta == current − baseline`` (up to that rounding); otherwise the paired
  delta is the honest change (the same cases before and after) and the two means are context;
- ``p_value``: the paired test, two-sided (``stats.sign_flip``): for a binary measure (every
  per-case score in {0, 1} on both sides, e.g. hit@k) the exact sign test; otherwise the
  sign-flip permutation test (exact where its law is small, else Monte Carlo, seeded); for the
  rows the gate judges (``compare.gate``: the primary measure, and rows a knob names),
  ``p_one_sided``: the same test one-sided in the direction of Δ (a regression gate asks "did it
  get worse?"), and ``p_adjusted``: that corrected over the judged rows (``gate.correction``,
  Holm by default; ``stats.power``; nothing to correct for one row); the status reads it; for
  the other (reported) rows, ``p_family``: Holm over the reported rows, which the title reads;
- ``ci`` (``stats.paired_interval``): Tango's score interval for binary measures, a t interval
  (or, with under 6 changed cases, Tango's interval on fractional counts) for continuous ones,
  always inside [−1, 1], at ``ci_level`` = ``1 − alpha`` for a reported row and ``1 − 2·alpha/J``
  for the J judged rows: the two-sided interval whose bound on the tested side is the one-sided
  ``1 − alpha/J`` bound (Bonferroni: one level for the whole judged column). Where the test does
  not reject but the interval excludes 0, the interval is extended to 0 (``ci_method`` gets
  ``+0``: ``stats.paired_interval.reconcile``); ``ci_agrees`` is false where the test rejects
  and the interval still holds 0 (the status reads the test);
- ``mde`` / ``mde_method``: the smallest true drop the row's test detects at power 0.8 at its n
  (``stats.power``; judged rows one-sided at ``alpha/J``); ``n_needed`` for an
  ``underpowered`` row: the n at which its test sees a drop of the max drop under the no-change
  prior (not this PR's churn: it does not grow with the observed drop); ``n_changed``,
  ``n_lost``, ``n_gained``: paired cases whose score changed, went down, went up;
- ``status`` and the verdict: ``compare.gate``;
- ``like_for_like``: no settings changed (``baseline.fingerprint.settings_changes``: everything but
  the KB, whose edits are the PR's subject, shown card by card); ``config_changes`` lists them all.

Lost / gained hits: paired cases whose hit at the headline k went 1 → 0 (0 → 1), most impactful
first: the largest nDCG@k drop (gain) first, then the id. Each entry carries nDCG@k (or hit@k
when nDCG is not measured) before and after. A lost hit names ``possibly_relevant``: the card
now at the rank where the baseline had its first gold card (from the baseline's MRR@k; else
the first card of the current top k) when no gold entry judges it — it may be a correct card
nobody labelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from retrieval_gate.baseline.fingerprint import config_changes, fingerprint, settings_changes, settings_view
from retrieval_gate.baseline.model import DECIMALS, Baseline, ConfigChange
from retrieval_gate.compare.changes import attach_changes
from retrieval_gate.compare.condensed import (
    UNJUDGED_NOTE_SHARE,
    condensed_inputs,
    judged_table,
    rescore_baseline,
    unjudged_cards,
)
from retrieval_gate.compare.decisive import Decision, decide, is_card, judged_depth, not_cards
from retrieval_gate.compare.gate import GateSettings, RowView, failures, gate_rules, parse_key, row_status
from retrieval_gate.compare.judgements import judgements_of
from retrieval_gate.compare.model import (
    CaseChange,
    Comparison,
    ComparisonRow,
    ComparisonStats,
    GateInForce,
    NeedsLabels,
    Reading,
)
from retrieval_gate.metrics.names import display_name
from retrieval_gate.models import judgements
from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.results import CaseResult, Results
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.multiplicity import adjust_p
from retrieval_gate.stats.paired import Paired, paired_columns
from retrieval_gate.stats.paired_interval import reconcile
from retrieval_gate.stats.power import DEFAULT_POWER, cases_needed, mde
from retrieval_gate.stats.sign_flip import DEFAULT_RESAMPLES

RowKey = tuple[str, str]


def compare(
    *, results: Results, baseline: Baseline, gate: GateSettings, seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES, kb_before: Mapping[str, KbCard] | None = None,
    judgements: str | None = None,
) -> Comparison:
    """``kb_before``: the baseline's KB manifest (``score.kb_manifest``), for what changed and why
    (and which missing gold cards this run's KB deleted). ``judgements``: how the golden set was
    judged, ``complete`` or ``pooled`` (``compare.judgements``; None: what the results recorded).
    When the golden set changed since the baseline was scored, the baseline's stored rankings are
    rescored with the current labels first (``rescored_cases``). On a complete set the verdict is
    the standard reading's (``pass`` / ``fail``); on a pooled one it is ``needs-labels`` where some
    labelling of the unjudged cards changes the gate's decision (``compare.decisive``)."""
    mode = judgements_of(results, judgements)
    baseline, rescored = rescore_baseline(results=results, baseline=baseline)
    standard = attach_changes(_judge(results=results, baseline=baseline, gate=gate, seed=seed, resamples=resamples),
                              results=results, baseline=baseline, kb_before=kb_before)
    standard = standard.model_copy(update={"judgements": mode, "rescored_cases": rescored})
    if mode == "complete":
        standard = _every_card_judged(standard)
    return with_readings(standard, results=results, baseline=baseline, gate=gate, seed=seed, resamples=resamples,
                         judgements=mode)


def _every_card_judged(comparison: Comparison) -> Comparison:
    """On a complete golden set every card is judged (outside the gold: not relevant): no card that
    displaces the gold is unjudged, no cause is ``unjudged`` (it reads ``ranking``: nothing
    changed but the order), no lost hit names a ``possibly_relevant`` card to label."""
    changes = [c.model_copy(update={
        "cause": "ranking" if c.cause == "unjudged" else c.cause,
        "displaced_by": [d.model_copy(update={"judged": True}) for d in c.displaced_by]})
        for c in comparison.changed_cases]
    lost = [c.model_copy(update={"possibly_relevant": None}) for c in comparison.lost_hits]
    return comparison.model_copy(update={"changed_cases": changes, "lost_hits": lost})


def with_readings(comparison: Comparison, *, results: Results, baseline: Baseline, gate: GateSettings,
                  seed: int = 0, resamples: int = DEFAULT_RESAMPLES, judgements: str = "pooled") -> Comparison:
    """``comparison`` with judged@k of both sides, the unjudged cards of the PR's top k (ids that
    are not cards of the KB left out and named), and the gate's status: on a ``complete`` set the
    standard reading's verdict; on a ``pooled`` one the condensed reading (information) and the
    decision under the extreme labellings (``compare.decisive``): ``needs-labels`` with the
    decisive cards counted where they disagree."""
    k = results.headline_k
    kb = results.kb_cards
    unjudged = sum(sum(1 for c in unjudged_cards(case, k) if is_card(c, kb))
                   for case in results.cases if case.status == "scored")
    scored = sum(1 for case in results.cases if case.status == "scored")
    share = round(unjudged / (k * scored), 6) if scored else None
    known = set(results.metrics) | {m for cells in results.aggregates.values() for m in cells}
    rules = gate_rules(gate=gate, known_metrics=known, headline_k=k, measured=results.metrics)
    judged_metrics = {m for m in known if any(rules.gated((m, s)) for s in (*results.aggregates, *baseline.aggregates))}
    # with no gate knob on, no labelling can fail it: nothing to run the gate on again
    active = gate.fail_on_regression or bool(gate.floors)
    pooled = judgements == "pooled"
    depth = judged_depth(judged_metrics, results) if judged_metrics else k
    update: dict[str, Any] = {
        "judged": judged_table(results=results, baseline=baseline), "judgements": judgements,
        "unjudged_top_k": unjudged, "unjudged_share": share,
        "unjudged_note": pooled and share is not None and share > UNJUDGED_NOTE_SHARE,
        "not_cards": not_cards(results, baseline, depth=max(depth, k)),
    }
    verdict = comparison.verdict
    if pooled and active:
        inputs = condensed_inputs(results=results, baseline=baseline, metrics=judged_metrics)
        if inputs is not None:
            condensed = _judge(results=inputs[0], baseline=inputs[1], gate=gate, seed=seed, resamples=resamples,
                               gated_only=True)
            update["condensed"] = Reading(verdict=condensed.verdict, failures=condensed.failures,
                                          rows=[row for row in condensed.rows if row.gated])
        decision = decision_of(results=results, baseline=baseline, gate=gate, seed=seed, resamples=resamples,
                               metrics=judged_metrics)
        if decision is not None and not decision.decided:
            verdict = "needs-labels"
            update["needs_labels"] = NeedsLabels(cards=len(decision.cards), cases=len(decision.cases),
                                                 sitting=decision.sitting, if_relevant=decision.best,
                                                 if_not_relevant=decision.worst)
    update.update(verdict=verdict, gate=GateInForce(**gate.model_dump(), status=verdict))
    return comparison.model_copy(update=update)


def decision_of(*, results: Results, baseline: Baseline, gate: GateSettings, seed: int = 0,
                resamples: int = DEFAULT_RESAMPLES, metrics: Collection[str] | None = None,
                rescore: bool = False) -> Decision | None:
    """The gate's decision under the extreme labellings of the unjudged cards, and the decisive
    cards when they differ (``compare.decisive``); None when the baseline keeps no rankings (its
    unjudged cards are unknown). ``metrics``: the measures the gate judges (default: from its
    rules); ``rescore``: rescore the baseline with the current labels first (``compare`` does it
    before calling)."""
    if rescore:
        baseline, _ = rescore_baseline(results=results, baseline=baseline)
    if not baseline.rankings:
        return None
    if metrics is None:
        known = set(results.metrics) | {m for cells in results.aggregates.values() for m in cells}
        rules = gate_rules(gate=gate, known_metrics=known, headline_k=results.headline_k, measured=results.metrics)
        metrics = {m for m in known if any(rules.gated((m, s)) for s in (*results.aggregates, *baseline.aggregates))}

    def judge(res: Results, base: Baseline) -> str:
        return _judge(results=res, baseline=base, gate=gate, seed=seed, resamples=resamples, gated_only=True,
                      light=True).verdict

    return decide(results=results, baseline=baseline, metrics=metrics, floors={parse_key(k)[0] for k in gate.floors},
                  judge=judge)


class _Family:
    """The rows' tests as one family: the gated rows' one-sided p-values adjusted together (the
    gate's correction), the reported rows' two-sided ones by Holm, and one level for the judged
    column — Bonferroni over the J judged rows (alpha itself when no correction applies); each
    judged row is tested one-sided at that level, and its interval is the two-sided 1 − 2·level
    one, whose bound on the tested side is the one-sided 1 − level bound."""

    def __init__(self, *, rules: Any, stats: Mapping[RowKey, Any], keys: Sequence[RowKey], light: bool = False):
        self.rules, self.stats, self.light = rules, stats, light
        family = [key for key in keys if rules.gated(key) and key in stats]
        self.one_sided = {key: stats[key].one_sided for key in family}
        self.adjusted = dict(zip(family, adjust_p([self.one_sided[key] for key in family], method=rules.correction),
                                 strict=True))
        reported = [key for key in keys if not rules.gated(key) and key in stats]
        self.family_p = dict(zip(reported, adjust_p([stats[key].p for key in reported], method="holm"), strict=True))
        self.judged_alpha = rules.alpha if rules.correction == "none" else rules.alpha / max(1, len(family))
        self.judged_rows, self.reported_rows = len(family), len(reported)

    def row(self, key: RowKey, *, old: Any, new: Any) -> tuple[ComparisonRow, RowView]:
        """One row of the table: its test, interval and MDE, and its status under the gate."""
        rules, (metric, slice_name) = self.rules, key
        stat = self.stats.get(key)
        tolerance, floor = rules.tolerance(key), rules.floor(key)
        extra: dict[str, Any] = {}
        p_used: float | None = None
        judged = key in self.adjusted
        a = self.judged_alpha if judged else rules.alpha
        level = 1 - 2 * a if judged else 1 - a
        if stat is not None and self.light:  # the verdict alone: no interval, no MDE (never underpowered)
            p_adj = self.adjusted.get(key)
            p_used = stat.p if p_adj is None else p_adj
            extra = {"p_value": stat.p, "p_one_sided": self.one_sided.get(key), "p_adjusted": p_adj,
                     "delta": stat.delta, "n": stat.n, "n_changed": stat.changed, "n_lost": stat.lost,
                     "n_gained": stat.gained}
        elif stat is not None:
            p_adj = self.adjusted.get(key)
            ci, ci_method = stat.interval(level)
            size, method = mde(n=stat.n, diffs=stat.diffs, binary=stat.binary, alpha=a, one_sided=judged)
            p_used = stat.p if p_adj is None else p_adj
            ci, agrees, extended = reconcile(ci, significant=p_used < rules.alpha)
            extra = {"ci": ci, "ci_level": level, "ci_method": ci_method + ("+0" if extended else ""),
                     "ci_agrees": agrees,
                     "p_value": stat.p, "p_one_sided": self.one_sided.get(key), "p_adjusted": p_adj,
                     "p_family": self.family_p.get(key),
                     "mde": size, "mde_method": method, "delta": stat.delta, "n": stat.n,
                     "n_changed": stat.changed, "n_lost": stat.lost, "n_gained": stat.gained}
        status = row_status(
            baseline=None if old is None else old.value, current=None if new is None else new.value,
            n=extra.get("n", 0), delta=extra.get("delta"), p_value=p_used,
            tolerance=tolerance, floor=floor, alpha=rules.alpha,
            require_significance=rules.require_significance,
            mde=None if stat is None or self.light else (math.inf if extra["mde"] is None else extra["mde"]),
            changed=extra.get("n_changed", 0) > 0,
        )
        if status == "underpowered" and stat is not None:
            # what a reviewer can act on: how many cases the suite needs for its test to see a
            # drop of the max drop (the prior: only lost cases change), whatever this PR's drop
            extra["n_needed"] = cases_needed(effect=tolerance, diffs=None, binary=stat.binary, alpha=a,
                                             one_sided=judged)
        row = ComparisonRow(
            slice=slice_name, metric=metric,
            baseline=None if old is None else old.value, current=None if new is None else new.value,
            n_baseline=0 if old is None else old.n, n_current=0 if new is None else new.n,
            floor=floor, max_drop=tolerance, status=status, gated=rules.gated(key),
            **{"delta": None, "n": 0, **extra},
        )
        view = RowView(metric=metric, slice=slice_name, status=status, current=row.current, n=row.n,
                       n_current=row.n_current, delta=row.delta, p_value=p_used,
                       tolerance=tolerance, floor=floor, n_lost=row.n_lost, n_gained=row.n_gained)
        return row, view


def _judge(
    *, results: Results, baseline: Baseline, gate: GateSettings, seed: int, resamples: int,
    gated_only: bool = False, light: bool = False,
) -> Comparison:
    """The standard reading's rows, statuses and verdict (no changes, no readings). ``gated_only``:
    only the rows the gate judges (what a verdict reads: the other reading's gate); ``light``: the
    verdict and its failures alone (no interval, no MDE, no lost hits: a labelling's verdict)."""
    metrics = _metric_order(results, baseline)
    known = set(results.metrics) | {m for cells in results.aggregates.values() for m in cells}
    rules = gate_rules(gate=gate, known_metrics=known, headline_k=results.headline_k, measured=results.metrics)
    if gated_only:
        metrics = [m for m in metrics if any(rules.gated((m, s)) for s in (*results.aggregates, *baseline.aggregates))]
    current = {case.id: case for case in results.cases}
    paired_ids = sorted(set(current) & set(baseline.cases))
    stats = _paired_stats(results=results, baseline=baseline, paired_ids=paired_ids, metrics=metrics,
                          seed=seed, resamples=resamples, wanted=rules.gated if gated_only else None)
    keys = [(metric, slice_name) for slice_name in _slice_order(results, baseline) for metric in metrics
            if baseline.aggregates.get(slice_name, {}).get(metric) is not None
            or results.aggregates.get(slice_name, {}).get(metric) is not None]
    if gated_only:
        keys = [key for key in keys if rules.gated(key)]
    family = _Family(rules=rules, stats=stats, keys=keys, light=light)
    judged_alpha = family.judged_alpha
    rows: list[ComparisonRow] = []
    views: dict[RowKey, RowView] = {}
    for key in keys:
        row, views[key] = family.row(key, old=baseline.aggregates.get(key[1], {}).get(key[0]),
                                     new=results.aggregates.get(key[1], {}).get(key[0]))
        rows.append(row)
    reasons = failures(rules=rules, rows=views, display={m: display_name(m) for m in metrics})
    if light:
        return Comparison(headline_k=results.headline_k, metrics=list(results.metrics), rows=rows, failures=reasons,
                          verdict="fail" if reasons else "pass")
    changes = config_changes(baseline=settings_view(baseline.fingerprint), current=fingerprint(results))
    if baseline.suite != results.suite:
        changes.insert(0, ConfigChange(key="suite", baseline=baseline.suite, current=results.suite))
    lost, gained = _hit_changes(results=results, baseline=baseline, paired_ids=paired_ids, current=current)
    comparison = Comparison(
        suite=results.suite,
        headline_k=results.headline_k,
        metrics=list(results.metrics),
        baseline_sha=baseline.sha,
        baseline_ref=baseline.ref,
        baseline_updated_at=baseline.updated_at,
        like_for_like=not settings_changes(changes),
        config_changes=changes,
        cases_added=sorted(set(current) - set(baseline.cases)),
        cases_removed=sorted(set(baseline.cases) - set(current)),
        n_paired=len(paired_ids),
        rows=rows,
        lost_hits=lost,
        gained_hits=gained,
        gate=GateInForce(**gate.model_dump(), status="fail" if reasons else "pass"),
        stats=ComparisonStats(
            delta="paired mean of current − baseline over the cases scored in both",
            method="exact sign test (binary measures) or sign-flip test; Tango score interval or t interval",
            ci="Tango score interval (binary measures; continuous ones with under 6 changed cases: on "
               "fractional counts), else paired t interval",
            ci_level=1 - gate.alpha,
            ci_level_judged=1 - 2 * judged_alpha,
            p_value="exact two-sided sign test for binary measures; paired sign-flip permutation test, "
                    "two-sided, otherwise (exact when the permutation law is small, else Monte Carlo)",
            sided="judged rows: one-sided in the direction of the change (a drop: P(S* <= S)), "
                  "interval two-sided at 1 - 2 alpha/J",
            correction=rules.correction, judged_rows=family.judged_rows,
            family="reported rows: Holm over the rows the gate does not judge (p_family)",
            reported_rows=family.reported_rows,
            mde="smallest true drop the row's own test detects at power 0.8 at its n (judged rows "
                "one-sided at alpha / judged rows): observed churn and spread, or the prior that only "
                "lost cases change",
            power=DEFAULT_POWER,
            resamples=resamples, seed=seed, alpha=gate.alpha,
        ),
        regressed=any(r.status in ("regressed", "below_floor") for r in rows if r.gated),
        failures=reasons,
        verdict="fail" if reasons else "pass",
    )
    return comparison


def _metric_order(results: Results, baseline: Baseline) -> list[str]:
    """The results' metric list, then other score keys of the current run, then baseline-only."""
    out = dict.fromkeys(results.metrics)
    for aggregates in (results.aggregates, baseline.aggregates):
        extra = sorted({m for cells in aggregates.values() for m in cells} - set(out))
        out.update(dict.fromkeys(extra))
    return list(out)


def _slice_order(results: Results, baseline: Baseline) -> list[str]:
    names = list(results.aggregates)
    names += sorted(set(baseline.aggregates) - set(names))
    return sorted(names, key=lambda s: (s != OVERALL, names.index(s)))


def _paired_stats(
    *, results: Results, baseline: Baseline, paired_ids: list[str], metrics: list[str], seed: int,
    resamples: int, wanted: Callable[[RowKey], bool] | None = None,
) -> dict[RowKey, Paired]:
    """``{(metric, slice): Paired}`` for every row with a paired case (``stats.paired``: the one
    paired test and its rounding rule); ``wanted``: only the slices holding a row it keeps (a
    verdict reads the gated rows alone).

    Per slice, metrics paired over the same cases are tested together (shared draws)."""
    if not paired_ids:
        return {}
    column = {m: j for j, m in enumerate(metrics)}
    cur = np.full((len(paired_ids), len(metrics)), np.nan)
    base = np.full_like(cur, np.nan)
    current = {case.id: case for case in results.cases}
    slices: dict[str, list[int]] = {}
    few = len(column) < 4  # a verdict's few judged measures: look them up rather than walk every score
    for i, case_id in enumerate(paired_ids):
        case = current[case_id]
        now, then = case.scores, baseline.cases[case_id].scores
        if few:
            for metric, j in column.items():
                if metric in now:
                    cur[i, j] = now[metric]
                if metric in then:
                    base[i, j] = then[metric]
        else:
            for metric, value in now.items():
                if metric in column:
                    cur[i, column[metric]] = value
            for metric, value in then.items():
                if metric in column:
                    base[i, column[metric]] = value
        for name in case.slices:
            slices.setdefault(name, []).append(i)
    both = ~np.isnan(cur) & ~np.isnan(base)
    out: dict[RowKey, Paired] = {}
    done: dict[tuple[bytes, tuple[int, ...]], list[Paired]] = {}
    for slice_name, members in slices.items():
        if wanted is not None and not any(wanted((m, slice_name)) for m in metrics):
            continue
        rows = np.asarray(members)
        present = both[rows]
        groups: dict[bytes, list[int]] = {}
        for j in range(len(metrics)):
            if present[:, j].any():
                groups.setdefault(present[:, j].tobytes(), []).append(j)
        for cols in groups.values():
            chosen = rows[present[:, cols[0]]]
            key = (chosen.tobytes(), tuple(cols))  # slices with the same cases (kind=golden = overall)
            if key not in done:
                done[key] = paired_columns(cur[np.ix_(chosen, cols)], before=base[np.ix_(chosen, cols)],
                                           resamples=resamples, seed=seed)
            for j, stat in zip(cols, done[key], strict=True):
                out[(metrics[j], slice_name)] = stat
    return out


def _hit_changes(
    *, results: Results, baseline: Baseline, paired_ids: list[str], current: dict[str, CaseResult],
) -> tuple[list[CaseChange], list[CaseChange]]:
    hit = f"hit@{results.headline_k}"
    ndcg = f"ndcg@{results.headline_k}"
    mrr = f"mrr@{results.headline_k}"
    lost: list[CaseChange] = []
    gained: list[CaseChange] = []
    for case_id in paired_ids:
        new, old = current[case_id].scores, baseline.cases[case_id].scores
        if hit not in new or hit not in old or round(new[hit]) == round(old[hit]):
            continue
        measure = ndcg if ndcg in new and ndcg in old else hit
        before, after = round(old[measure], DECIMALS), round(new[measure], DECIMALS)
        lost_hit = new[hit] < old[hit]
        change = CaseChange(id=case_id, query=current[case_id].query, metric=measure, baseline=before,
                            current=after, delta=round(after - before, DECIMALS),
                            slices=list(current[case_id].slices),
                            possibly_relevant=_unjudged_in_place(current[case_id], old.get(mrr), results.headline_k)
                            if lost_hit else None)
        (gained if new[hit] > old[hit] else lost).append(change)
    lost.sort(key=lambda c: (c.delta, c.id))
    gained.sort(key=lambda c: (-c.delta, c.id))
    return lost, gained


def _unjudged_in_place(case: CaseResult, baseline_mrr: float | None, k: int) -> str | None:
    """The card now at the baseline's first gold rank (1 / its MRR@k; else rank 1) when no gold
    entry judges it."""
    rank = round(1 / baseline_mrr) if baseline_mrr else 1
    if not 1 <= rank <= min(k, len(case.retrieved)):
        return None
    card = case.retrieved[rank - 1]
    return None if card in judgements(case) else card
