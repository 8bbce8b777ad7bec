"""From the points' runs to ``sweep.json`` (pure): paired statistics against the reference, the
split into selection and confirmation cases, the verdict, the slices a point loses, the knee.

- **Paired with the reference.** For point P and measure m over the cases both scored:
  ``delta = mean(m_i(P) − m_i(ref))``, ``p`` the gate's paired test (``stats.sign_flip``: exact sign
  test for 0/1 measures, sign-flip test otherwise; two sided), ``ci`` the gate's paired interval
  (``stats.paired_interval``) at ``1 − alpha``; ``p_holm``: Holm over the family of points.
- **Split.** Cases are grouped by their slices (the stratum: every slice a case is in); inside a
  stratum they are ordered by ``sha256(seed:id)`` and dealt alternately to *selection* and
  *confirmation*, the deal continuing from stratum to stratum (strata in name order).
- **Verdict.** The best point on the selection cases (highest mean of the metric; ties: the earlier
  point) is tested on the confirmation cases against the reference and the other finalists (the
  next ``FINALISTS`` points on the selection cases), Holm over those tests: ``confirmed`` when
  every one is a gain with corrected ``p ≤ alpha``; otherwise ``no-clear-winner`` with the closest
  rivals. The confirmation cases played no part in choosing, so those p-values are honest.
- **Knee, by cost.** For a numeric axis, the other keys held at the values of the best point on the
  selection cases that lies on such a curve (the winner, when there is one): the metric against
  each value on all cases, paired with the curve's best value; the knee is the **cheapest** value
  whose paired interval against the best includes 0 (no measurable loss). The cost is the
  index's size, ``chunks`` (ties: the texts its index embeds from an empty cache, then the
  value); each value is charged its own cost (``cost.embedded`` on a curve: the texts of its
  index, not what the points before it left to embed). Where every value costs the same there
  is no knee to call (``knee_note`` says so).
- **An axis that changes nothing.** When every line of the grid along an axis (the other keys
  held) gives the same per-case scores on every measure, the axis is listed in ``warnings``
  (with "the same index" when the chunks and texts are the same too) and no knee is called on it.
- **Ties.** Points whose selection mean equals the best's are a tie (``selection.tie``): the
  earliest in plan order is taken, and the verdict says so.
- **Intervals** are uncorrected (``1 − alpha`` each); the p beside them is Holm-corrected
  (``p_holm``); both are labelled so in the reports.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.multiplicity import adjust_p
from retrieval_gate.stats.paired import paired as stats_paired

SWEEP_SCHEMA_VERSION = 1
FINALISTS = 3


def paired(a: Mapping[str, float], b: Mapping[str, float], ids: Sequence[str], *, alpha: float,
           seed: int) -> dict[str, Any] | None:
    """``a − b`` over the ``ids`` both scored, by the one paired test (``stats.paired``): delta,
    ci at ``1 − alpha`` (uncorrected), p and n, rounded for the file (None: no case in common)."""
    common = [i for i in ids if i in a and i in b]
    if not common:
        return None
    stat = stats_paired([a[i] for i in common], before=[b[i] for i in common], seed=seed)
    ci, _method = stat.interval(1 - alpha)
    return {"delta": round(stat.delta, 6), "ci": [round(ci[0], 6), round(ci[1], 6)], "p": round(stat.p, 6),
            "n": stat.n}


def split_cases(cases: Mapping[str, Sequence[str]], *, seed: int) -> tuple[list[str], list[str]]:
    """Case id → its slices ⇒ (selection ids, confirmation ids); module docstring."""
    strata: dict[str, list[str]] = {}
    for case_id, slices in cases.items():
        strata.setdefault("|".join(sorted(s for s in slices if s != OVERALL)), []).append(case_id)
    selection: list[str] = []
    confirmation: list[str] = []
    turn = 0
    for name in sorted(strata):
        for case_id in sorted(strata[name], key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest()):
            (selection if turn % 2 == 0 else confirmation).append(case_id)
            turn += 1
    return sorted(selection), sorted(confirmation)


def _mean(scores: Mapping[str, float], ids: Sequence[str]) -> float | None:
    values = [scores[i] for i in ids if i in scores]
    return math.fsum(values) / len(values) if values else None


def _scores(run: Mapping[str, Any], metric: str) -> dict[str, float]:
    return {cid: c["scores"][metric] for cid, c in run["cases"].items() if metric in c["scores"]}


def _embedded(runs: Sequence[Mapping[str, Any]]) -> list[int]:
    """Texts each point adds to those embedded before it, in plan order: what a run from an empty
    cache embeds for it (deterministic, however the points were shared out)."""
    seen: set[str] = set()
    out = []
    for run in runs:
        new = set(run["texts"]) - seen
        seen |= new
        out.append(len(new))
    return out


def _slices_lost(run: Mapping[str, Any], ref: Mapping[str, Any], metric: str, *, alpha: float,
                 seed: int) -> list[dict[str, Any]]:
    mine, theirs = _scores(run, metric), _scores(ref, metric)
    by_slice: dict[str, list[str]] = {}
    for cid, case in run["cases"].items():
        for name in case["slices"]:
            if name != OVERALL:
                by_slice.setdefault(name, []).append(cid)
    lost = []
    for name in sorted(by_slice):
        stat = paired(mine, theirs, by_slice[name], alpha=alpha, seed=seed)
        if stat is not None and stat["delta"] < 0:
            lost.append({"slice": name, "delta": stat["delta"], "n": stat["n"]})
    return lost


def _numeric(values: Sequence[Any]) -> bool:
    return len(values) > 1 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _curve(runs: Sequence[Mapping[str, Any]], axis: str,
           anchor: Mapping[str, Any]) -> dict[Any, Mapping[str, Any]]:
    return {run["settings"][axis]: run for run in runs
            if all(run["settings"].get(k) == v for k, v in anchor.items() if k != axis)}


def _cost(run: Mapping[str, Any]) -> tuple[int, int]:
    """A value's own cost: its index's chunks, then the texts it embeds from an empty cache."""
    return run["chunks"], len(run["texts"])


def _unchanging(axes: Mapping[str, Sequence[Any]], runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The axes along which every line of the grid gives the same per-case scores (module docstring)."""
    out = []
    for axis, values in axes.items():
        if len(values) < 2:
            continue
        lines: dict[str, list[Mapping[str, Any]]] = {}
        for run in runs:
            if axis in run["settings"]:
                held = {k: v for k, v in run["settings"].items() if k != axis}
                lines.setdefault(repr(sorted(held.items(), key=lambda kv: kv[0])), []).append(run)
        lines = {k: line for k, line in lines.items() if len(line) > 1}
        if not lines:
            continue
        same_scores = all(all(r["cases"] == line[0]["cases"] for r in line) for line in lines.values())
        if not same_scores:
            continue
        same_index = all(all(_cost(r) == _cost(line[0]) and r["texts"] == line[0]["texts"] for r in line)
                         for line in lines.values())
        shown = ", ".join(str(v) for v in values)
        out.append({"axis": axis, "same_index": same_index,
                    "text": f"{axis} changes nothing here: its values ({shown}) gave "
                            + ("the same index and " if same_index else "")
                            + "the same per-case scores on every measure; no knee is called on it"})
    return out


def _knee(axes: Mapping[str, Sequence[Any]], runs: Sequence[Mapping[str, Any]], ranked: Sequence[int],
          metric: str, *, alpha: float, seed: int, ids: Sequence[str],
          skip: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per numeric axis, the curve through the best point (selection cases) that has one: the
    reference alone off the grid has none. No knee on an axis in ``skip`` (it changes nothing)
    or where every value costs the same."""
    knees: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    for axis, values in axes.items():
        if not _numeric(values):
            continue
        anchor = next((runs[i]["settings"] for i in ranked if len(_curve(runs, axis, runs[i]["settings"])) > 1), None)
        if anchor is None:
            continue
        by_value = _curve(runs, axis, anchor)
        order = sorted(by_value)
        means = {v: _mean(_scores(by_value[v], metric), ids) for v in order}
        best = max(order, key=lambda v: (means[v] if means[v] is not None else -1.0, -order.index(v)))
        best_scores = _scores(by_value[best], metric)
        curve = []
        within: dict[Any, bool] = {}
        for v in order:
            run = by_value[v]
            stat = paired(_scores(run, metric), best_scores, ids, alpha=alpha, seed=seed) if v != best else None
            within[v] = v == best or (stat is not None and stat["ci"][1] >= 0)
            curve.append({"value": v, "metric": None if means[v] is None else round(means[v], 6),
                          "vs_best": stat, "within_best": within[v],
                          "cost": {"chunks": run["chunks"], "embedded": len(run["texts"]), "seconds": run["seconds"]}})
        costs = {_cost(by_value[v]) for v in order}
        note = None
        if axis in skip:
            knee = None
            note = "no knee: the axis changes nothing"
        elif len(costs) == 1:
            knee = None
            note = f"no knee: every value costs the same ({by_value[best]['chunks']} chunks)"
        else:
            knee = min((v for v in order if within[v]), key=lambda v: (*_cost(by_value[v]), v))
        knees[axis] = knee
        curves[axis] = {"held": {k: v for k, v in anchor.items() if k != axis}, "best": best,
                        "cost": "chunks (the index's size; ties: texts embedded from an empty cache, then the value)",
                        "knee_note": note, "points": curve}
    return knees, curves


def pareto(points: Sequence[Mapping[str, Any]], metric: str) -> list[int]:
    """Indices of the points no other point dominates on (metric: higher, chunks: fewer) — the
    cheapest index for each level of quality. A point without the metric is left out."""
    scored = [(i, p["metrics"][metric], p["cost"]["chunks"]) for i, p in enumerate(points) if metric in p["metrics"]]
    return [i for i, m, c in scored
            if not any((m2 >= m and c2 <= c) and (m2 > m or c2 < c) for _j, m2, c2 in scored)]


def finalize(*, suite: str, axes: Mapping[str, Sequence[Any]], reference: Mapping[str, Any],
             runs: Sequence[Mapping[str, Any]], metric: str, seed: int, alpha: float) -> dict[str, Any]:
    """The runs of every point of a plan (in plan order) → the ``sweep.json`` mapping."""
    ref_run = next(r for r in runs if r["reference"])
    ids = sorted(ref_run["cases"])
    for run in runs:
        if sorted(run["cases"]) != ids:
            raise ValueError(f"point {run['key']} was not measured on the reference's cases")
    embedded = _embedded(runs)
    names = list(ref_run["metrics"])
    others = [i for i, r in enumerate(runs) if not r["reference"]]
    raw_p = {}
    points = []
    for index, run in enumerate(runs):
        vs = {}
        if not run["reference"]:
            for name in names:
                stat = paired(_scores(run, name), _scores(ref_run, name), ids, alpha=alpha, seed=seed)
                if stat is not None:
                    vs[name] = stat
            if metric in vs:
                raw_p[index] = vs[metric]["p"]
        points.append({"settings": run["settings"], "reference": run["reference"], "metrics": run["metrics"],
                       "vs_reference": vs,
                       "cost": {"chunks": run["chunks"], "embedded": embedded[index], "seconds": run["seconds"]},
                       "truncated": run.get("truncation"),
                       "slices_lost": (_slices_lost(run, ref_run, metric, alpha=alpha, seed=seed)
                                       if vs.get(metric, {}).get("delta", 0) > 0 else [])})
    family = [i for i in others if i in raw_p]
    for i, p in zip(family, adjust_p([raw_p[i] for i in family], method="holm"), strict=True):
        points[i]["vs_reference"][metric]["p_holm"] = round(float(p), 6)
    # selection and confirmation
    selection, confirmation = split_cases({cid: c["slices"] for cid, c in ref_run["cases"].items()}, seed=seed)
    chosen = [(_mean(_scores(r, metric), selection), -i, i) for i, r in enumerate(runs)]
    ranked = [i for _m, _neg, i in sorted(((m if m is not None else -1.0), neg, i) for m, neg, i in chosen)[::-1]]
    best = ranked[0]
    rivals = list(ranked[1:1 + FINALISTS])
    ref_index = runs.index(ref_run)
    if ref_index not in rivals and ref_index != best:
        rivals.append(ref_index)
    tests = []
    best_scores = _scores(runs[best], metric)
    for i in rivals:
        stat = paired(best_scores, _scores(runs[i], metric), confirmation, alpha=alpha, seed=seed)
        tests.append({"settings": runs[i]["settings"], "reference": runs[i]["reference"], **(stat or {})})
    testable = [t for t in tests if "p" in t]
    for t, p in zip(testable, adjust_p([t["p"] for t in testable], method="holm"), strict=True):
        t["p_holm"] = round(float(p), 6)
    confirmed = (best != ref_index and bool(tests) and len(testable) == len(tests)
                 and all(t["delta"] > 0 and t["p_holm"] <= alpha for t in testable))
    closest = sorted(tests, key=lambda t: (t.get("delta", 0.0), t.get("p_holm", 1.0)))[:FINALISTS]
    warnings = _unchanging(axes, runs)
    knee, curves = _knee(axes, runs, ranked, metric, alpha=alpha, seed=seed, ids=ids,
                         skip={w["axis"] for w in warnings})
    best_mean = _mean(_scores(runs[best], metric), selection)
    tied = [i for i in ranked if _mean(_scores(runs[i], metric), selection) == best_mean]
    return {
        "schema_version": SWEEP_SCHEMA_VERSION, "suite": suite, "metric": metric,
        "reference": dict(reference), "axes": {k: list(v) for k, v in axes.items()}, "points": points,
        "split": {"method": "stratified by the cases' slices, dealt alternately in sha256(seed:id) order",
                  "seed": seed, "selection": len(selection), "confirmation": len(confirmation)},
        "selection": {"best": runs[best]["settings"], "best_is_reference": best == ref_index,
                      "tie": None if len(tied) < 2 else {
                          "points": [runs[i]["settings"] for i in tied], "mean": None if best_mean is None
                          else round(best_mean, 6),
                          "broken_by": "plan order: the earliest point (the reference's index group runs first)"},
                      "means": [{"settings": runs[i]["settings"],
                                 "mean": None if (m := _mean(_scores(runs[i], metric), selection)) is None
                                 else round(m, 6)} for i in ranked]},
        "confirmation": {"tests": tests, "correction": "holm"},
        "verdict": "confirmed" if confirmed else "no-clear-winner",
        "winner": runs[best]["settings"] if confirmed else None,
        "closest_rivals": [] if confirmed else closest,
        "knee": knee, "curves": curves, "warnings": warnings,
        "pareto": [points[i]["settings"] for i in pareto(points, metric)],
        "stats": {"alpha": alpha, "seed": seed, "test": "the gate's paired tests (exact sign test for 0/1 measures, "
                  "sign-flip otherwise), two sided; intervals: the gate's paired intervals", "family": "holm",
                  "intervals": f"uncorrected, {1 - alpha:.0%} each; the p beside them (p_holm) is Holm-corrected"},
    }


