"""Representative inputs for the report renderers, built deterministically.

Results come from the real scoring pipeline (``assemble_results`` over synthetic cases and
rankings). Comparisons and baselines are built here by hand (plain pydantic models), with a small,
obvious paired computation, so the renderers are tested without depending on ``compare``:

- delta = mean over common cases of (current − baseline) for the cases that carry the key;
- the CI is a stand-in, delta ± 1.96 · 0.5 / √n (the widest normal interval of a proportion; the
  renderer shows a CI, it does not compute one);
- status: improved when the CI is above 0, regressed when below, unchanged when no paired case
  changed, underpowered for a drop with a stand-in MDE above 0.02, else ok; headline rows on
  overall are the judged ones.

The builders are cached: treat what they return as read-only.

Regenerate the golden files with ``python -m tests.golden.regenerate`` (or
``RG_UPDATE_GOLDEN=1 pytest tests/unit/test_render_golden.py``); then READ the diff.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist, stdev
from typing import Any

from retrieval_gate.baseline.model import Baseline, BaselineCase, ConfigChange, HistoryEntry
from retrieval_gate.compare.changes_model import ChangedCase, Displacer, GoldRank
from retrieval_gate.compare.model import CaseChange, Comparison, ComparisonRow
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.results import Results

KS = (1, 5, 10)
HEADLINE = ("hit@5", "recall@5", "ndcg@5")
MEASURES = ("hit", "recall", "ndcg", "mrr")
CREATED = "2026-03-01T12:00:00+00:00"


@dataclass(frozen=True)
class Scenario:
    name: str
    results: Results
    comparison: Comparison | None = None
    baseline: Baseline | None = None
    links: dict[str, str] | None = None


def make_cases(n: int, *, seed: int = 1, tag_values: int = 3, locales: Sequence[str] = ("pt-BR", "en"),
               hard_classes: Sequence[str] = ("normal", "near-duplicate"), no_gold_every: int = 0,
               id_fn: Callable[[int], str] | None = None, query_fn: Callable[[int], str] | None = None) -> list[Case]:
    """``n`` cases; gold of 1 or 2 cards ``c{i}a`` / ``c{i}b``; every ``no_gold_every``-th has none."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        no_gold = no_gold_every and i % no_gold_every == no_gold_every - 1
        gold = () if no_gold else ((f"c{i}a", f"c{i}b") if rng.random() < 0.4 else (f"c{i}a",))
        cases.append(Case(
            id=id_fn(i) if id_fn else f"q{i:04d}",
            query=query_fn(i) if query_fn else f"how do I configure feature {i}?",
            gold=gold,
            kind="adversarial" if i % 5 == 4 else "golden",
            locale=locales[i % len(locales)],
            form="GAP" if i % 3 == 0 else "MATCH",
            hard_class=hard_classes[i % len(hard_classes)],
            tags={"team": f"t{i % tag_values}"},
        ))
    return cases


def make_rankings(cases: Sequence[Case], *, quality: float, seed: int) -> dict[str, RankedList]:
    """Each gold card lands at a random rank in 1..10 with probability ``quality`` (else absent);
    the other slots are distractors."""
    rng = random.Random(seed)
    out = {}
    for case in cases:
        ranked = [f"d{case.id}-{j}" for j in range(10)]
        for g in case.gold:
            if rng.random() < quality:
                ranked[rng.randrange(10)] = g
        out[case.id] = RankedList(ids=tuple(dict.fromkeys(ranked)))
    return out


def scored_results(cases: Sequence[Case], rankings: dict[str, RankedList], *, suite: str = "docs",
                 config: dict[str, Any] | None = None) -> Results:
    case_set = CaseSet(cases=tuple(cases), path="cases.jsonl", sha256="0" * 64, format="jsonl")
    return assemble_results(
        case_set=case_set, rankings=rankings, metrics=metric_specs(KS, MEASURES), ks=KS, suite=suite,
        config=config or {"retriever": "dense", "model": "all-MiniLM-L6-v2", "k": list(KS)},
        headline_k=5, created_at=CREATED,
    )


def make_baseline(results: Results, *, history: Sequence[float] = (), sha: str = "a1b2c3d4e5f60718293a",
                  fingerprint: dict[str, Any] | None = None) -> Baseline:
    """A baseline from a results object; ``history`` = earlier hit@5 values, oldest first; the
    baseline's own hit@5 is appended as the newest entry (as a refresh does)."""
    own = results.aggregates["overall"]["hit@5"].value
    entries = [HistoryEntry(sha=f"{i:02d}{sha[2:]}"[:40], ref="main", timestamp=f"2026-02-{i + 1:02d}T00:00:00Z",
                            headline={"hit@5": v, "ndcg@5": v * 0.8}, n=results.completeness.scored)
               for i, v in enumerate(history)]
    entries.append(HistoryEntry(sha=sha, ref="main", timestamp="2026-02-28T00:00:00Z",
                                headline={"hit@5": own}, n=results.completeness.scored))
    return Baseline(
        tool_version="0.1.0", suite=results.suite, sha=sha, ref="main", updated_at="2026-02-28T00:00:00Z",
        k=list(results.k), headline_k=results.headline_k, metrics=list(results.metrics),
        fingerprint=fingerprint or {"model": "all-MiniLM-L6-v2", "retriever": "dense", "k": list(KS)},
        completeness=results.completeness, aggregates=results.aggregates,
        cases={c.id: BaselineCase(scores=c.scores, status=c.status, slices=c.slices, ranked=c.retrieved)
               for c in results.cases},
        history=entries, rankings=True,
    )


def _rank(ranked: Sequence[str], card: str) -> int | None:
    return ranked.index(card) + 1 if card in ranked else None


_MOVEMENT_ORDER = {"lost-hit": 0, "worse": 1, "better": 2, "gained-hit": 3}


def changed_by_hand(base: Results, cur: Results, *, cause: str) -> list[ChangedCase]:
    """Every paired case with gold whose gold cards' ranks moved: lost / gained when hit@5 did,
    else worse / better by nDCG@5 (then by the sum of ranks, absent = 11); the card now first,
    when it is not gold, as the one displacer of a case that got worse. Sorted lost, worse,
    better, gained; by the nDCG@5 change (largest harm first), then id."""
    before = {c.id: c for c in base.cases}
    out = []
    for c in cur.cases:
        b = before.get(c.id)
        if b is None or not c.gold or "hit@5" not in c.scores or "hit@5" not in b.scores:
            continue
        gold = [GoldRank(card=g, rank_before=_rank(b.retrieved, g), rank_after=_rank(c.retrieved, g)) for g in c.gold]
        if all(g.rank_before == g.rank_after for g in gold):
            continue
        dh, dn = c.scores["hit@5"] - b.scores["hit@5"], c.scores["ndcg@5"] - b.scores["ndcg@5"]
        ranks_after = sum(g.rank_after or 11 for g in gold)
        ranks_before = sum(g.rank_before or 11 for g in gold)
        movement = ("lost-hit" if dh < 0 else "gained-hit" if dh > 0 else "worse" if dn < 0 else "better" if dn > 0
                    else "worse" if ranks_after > ranks_before else "better")
        top = c.retrieved[0] if c.retrieved else None
        displaced = [Displacer(card=top, rank=1, judged=False)] \
            if movement in ("lost-hit", "worse") and top is not None and top not in c.gold else []
        out.append(ChangedCase(id=c.id, query=c.query, slices=c.slices, gold=gold, movement=movement,
                               metric="ndcg@5", metric_before=b.scores["ndcg@5"], metric_after=c.scores["ndcg@5"],
                               displaced_by=displaced, cause=cause))
    out.sort(key=lambda x: (_MOVEMENT_ORDER[x.movement],
                            (x.metric_after - x.metric_before) * (1 if _MOVEMENT_ORDER[x.movement] < 2 else -1), x.id))
    return out


def paired(base: Results, cur: Results, slice_name: str, metric: str) -> tuple[float | None, int]:
    """Mean of (current − baseline) over cases in both runs, in the slice, carrying the key."""
    before = {c.id: c.scores[metric] for c in base.cases if slice_name in c.slices and metric in c.scores}
    diffs = [c.scores[metric] - before[c.id] for c in cur.cases
             if slice_name in c.slices and metric in c.scores and c.id in before]
    return (sum(diffs) / len(diffs) if diffs else None), len(diffs)


def n_changed_by_hand(base: Results, cur: Results, slice_name: str, metric: str) -> int:
    """How many paired cases changed their score."""
    before = {c.id: c.scores[metric] for c in base.cases if slice_name in c.slices and metric in c.scores}
    return sum(1 for c in cur.cases if slice_name in c.slices and metric in c.scores and c.id in before
               and abs(c.scores[metric] - before[c.id]) > 1e-9)


def mde_by_hand(base: Results, cur: Results, slice_name: str, metric: str) -> tuple[float, int]:
    """(z_.975 + z_.8)·sd/√n from the paired differences' sample sd, or z²/(n + z²) without spread;
    and the n at which that reaches 0.02."""
    before = {c.id: c.scores[metric] for c in base.cases if slice_name in c.slices and metric in c.scores}
    diffs = [c.scores[metric] - before[c.id] for c in cur.cases
             if slice_name in c.slices and metric in c.scores and c.id in before]
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    sd = stdev(diffs) if len(diffs) > 1 else 0.0
    if sd > 0:
        return z * sd / len(diffs) ** 0.5, math.ceil((z * sd / 0.02) ** 2)
    return z * z / (len(diffs) + z * z), math.ceil(z * z * 0.98 / 0.02)


def make_comparison(base: Results, cur: Results, *, gate: dict[str, Any] | None = None,
                    config_changes: Sequence[ConfigChange] = (), fail: bool = False) -> Comparison:
    rows = []
    for slice_name in sorted(set(base.aggregates) | set(cur.aggregates)):
        for metric in cur.metrics:
            old = base.aggregates.get(slice_name, {}).get(metric)
            new = cur.aggregates.get(slice_name, {}).get(metric)
            if old is None and new is None:
                continue
            delta, n = paired(base, cur, slice_name, metric)
            judged = slice_name == "overall" and metric == "hit@5"  # the primary measure alone
            # a judged row's interval: two-sided 90 % (z = 1.645), matching its one-sided test at 0.05
            half = (1.645 if judged else 1.96) * 0.5 / n ** 0.5 if n else 0.0
            ci = None if delta is None else (delta - half, delta + half)
            status = ("new" if old is None else "missing" if new is None else
                      "improved" if ci and ci[0] > 0 else "regressed" if ci and ci[1] < 0 else "ok")
            mde, needed = mde_by_hand(base, cur, slice_name, metric) if n else (None, None)
            changed = n_changed_by_hand(base, cur, slice_name, metric)
            if status == "ok" and n and changed == 0:
                status = "unchanged"
            elif status == "ok" and mde is not None and mde > 0.02 and delta is not None and delta < 0:
                status = "underpowered"
            rows.append(ComparisonRow(
                slice=slice_name, metric=metric, baseline=None if old is None else old.value,
                current=None if new is None else new.value, delta=delta, n=n,
                n_baseline=0 if old is None else old.n, n_current=0 if new is None else new.n,
                ci=ci, status=status, mde=mde, n_needed=needed if status == "underpowered" else None,
                max_drop=0.02, gated=judged, ci_level=(0.90 if judged else 0.95) if n else None,
                n_changed=changed if n else None))
    before = {c.id: c for c in base.cases}
    lost, gained = [], []
    for c in cur.cases:
        b = before.get(c.id)
        if b is None or "hit@5" not in c.scores or "hit@5" not in b.scores:
            continue
        top = c.retrieved[0] if c.retrieved else None
        change = CaseChange(id=c.id, query=c.query, metric="hit@5", baseline=b.scores["hit@5"],
                            current=c.scores["hit@5"], delta=c.scores["hit@5"] - b.scores["hit@5"],
                            slices=c.slices, possibly_relevant=top if top not in c.gold else None)
        if change.delta < 0:
            lost.append(change)
        elif change.delta > 0:
            gained.append(change)
    base_ids, cur_ids = {c.id for c in base.cases}, {c.id for c in cur.cases}
    regressed = any(r.status == "regressed" for r in rows)
    failures = [f"{r.metric} on {r.slice}: dropped {abs(r.delta or 0):.3f}, CI below zero"
                for r in rows if fail and r.status == "regressed" and r.gated]
    return Comparison(
        suite=cur.suite, headline_k=cur.headline_k, metrics=list(cur.metrics),
        baseline_sha="a1b2c3d4e5f60718293a", baseline_ref="main", baseline_updated_at="2026-02-28T00:00:00Z",
        like_for_like=not config_changes, config_changes=list(config_changes),
        cases_added=sorted(cur_ids - base_ids), cases_removed=sorted(base_ids - cur_ids),
        n_paired=len(cur_ids & base_ids), rows=rows, lost_hits=lost, gained_hits=gained,
        gate=gate or {}, stats={"method": "paired bootstrap", "resamples": 10_000, "seed": 0, "alpha": 0.05,
                                "correction": "holm", "judged_rows": 1, "ci_level": 0.95,
                                "ci_level_judged": 0.90, "sided": "judged rows: one-sided"},
        regressed=regressed, failures=failures, verdict="fail" if failures else "pass",
        changed_cases=changed_by_hand(base, cur, cause="config" if config_changes else "ranking"),
    )


LINKS = {"run": "https://github.com/acme/docs/actions/runs/42",
         "artifact": "https://github.com/acme/docs/actions/runs/42/artifacts/7"}


@cache
def first_run() -> Scenario:
    cases = make_cases(40, no_gold_every=10)
    return Scenario("first_run", scored_results(cases, make_rankings(cases, quality=0.7, seed=2)))


@cache
def improvement() -> Scenario:
    cases = make_cases(120)
    base = scored_results(cases, make_rankings(cases, quality=0.55, seed=3))
    cur = scored_results(cases, make_rankings(cases, quality=0.85, seed=4))
    baseline = make_baseline(base, history=(0.50, 0.52, 0.55, 0.54, 0.58))
    return Scenario("improvement", cur, make_comparison(base, cur), baseline, LINKS)


@cache
def regression() -> Scenario:
    cases = make_cases(90, tag_values=2)
    base = scored_results(cases, make_rankings(cases, quality=0.85, seed=5))
    cur = scored_results(cases, make_rankings(cases, quality=0.55, seed=6))
    gate = {"fail_on_regression": True, "default_max_drop": 0.02, "require_significance": True,
            "floors": {"hit@5": 0.7}, "max_drop": {}, "alpha": 0.05}
    baseline = make_baseline(base, history=(0.80, 0.83, 0.86))
    return Scenario("regression", cur, make_comparison(base, cur, gate=gate, fail=True), baseline, LINKS)


@cache
def config_change() -> Scenario:
    cases = make_cases(60)
    base = scored_results(cases[:55], make_rankings(cases[:55], quality=0.7, seed=7))
    cur_cases = cases[3:]
    cur = scored_results(cur_cases, make_rankings(cur_cases, quality=0.72, seed=8),
                       config={"retriever": "dense", "model": "bge-small-en-v1.5", "k": list(KS)})
    changes = [ConfigChange(key="model", baseline="all-MiniLM-L6-v2", current="bge-small-en-v1.5"),
               ConfigChange(key="chunking", baseline={"size": 1200, "overlap": 150},
                            current={"size": 800, "overlap": 100})]
    baseline = make_baseline(base, history=(0.70,))
    return Scenario("config_change", cur, make_comparison(base, cur, config_changes=changes), baseline)


HUGE_CASES = 3000
HUGE_TAGS = 40


@cache
def huge() -> Scenario:
    cases = make_cases(HUGE_CASES, tag_values=HUGE_TAGS, locales=tuple(f"l{i}" for i in range(12)),
                       hard_classes=("normal", "near-duplicate", "prose-free", "boilerplate", "specific"),
                       query_fn=lambda i: f"a rather long question number {i} about the configuration of "
                       f"subsystem {i % 97} and how it interacts with the retrieval layer")
    base = scored_results(cases, make_rankings(cases, quality=0.75, seed=9))
    cur = scored_results(cases, make_rankings(cases, quality=0.7, seed=10))
    baseline = make_baseline(base, history=tuple(0.6 + 0.01 * i for i in range(20)))
    return Scenario("huge", cur, make_comparison(base, cur), baseline, LINKS)


HOSTILE_ID = "q|1`x\n<script>alert(1)</script>"
HOSTILE_QUERY = "@octocat see #123 | `rm -rf` <img src=x onerror=alert(1)> https://evil.example/x\n# heading"
HOSTILE_TAG = "@team|<b>x</b>"


@cache
def hostile() -> Scenario:
    def id_fn(i: int) -> str:
        return HOSTILE_ID if i == 0 else f"q{i}"

    cases = make_cases(12, id_fn=id_fn, query_fn=lambda i: HOSTILE_QUERY, locales=("pt|BR\n@all",),
                       hard_classes=("`code`",))
    cases = [c.model_copy(update={"tags": {"team": HOSTILE_TAG}}) for c in cases]
    base_rankings = make_rankings(cases, quality=0.99, seed=11)
    base_rankings[HOSTILE_ID] = RankedList(ids=(cases[0].gold[0], "d0"))
    cur_rankings = make_rankings(cases, quality=0.2, seed=12)
    del cur_rankings[HOSTILE_ID]  # missing from the run: failed
    base = scored_results(cases, base_rankings, suite="docs --> <b>")
    cur = scored_results(cases, cur_rankings, suite="docs --> <b>")
    changes = [ConfigChange(key="model|x", baseline="a`b", current="@c\n#4")]
    baseline = make_baseline(base, history=(0.9, 0.95))
    return Scenario("hostile", cur, make_comparison(base, cur, config_changes=changes), baseline)


@cache
def rerun() -> Scenario:
    """An identical rerun: no case changed (the comment stays short, the rest collapsed). Its history:
    refreshes recorded without a sha on ``refs/heads/main``, the same hit@5 each time (once rounded,
    once not): the sparkline is flat, the chart's labels are dates, not the ref."""
    cases = make_cases(41)
    base = scored_results(cases, make_rankings(cases, quality=0.8, seed=13))
    own = base.aggregates["overall"]["hit@5"].value
    baseline = make_baseline(base, history=(round(own, 3), own))
    baseline = baseline.model_copy(update={"history": [
        entry.model_copy(update={"sha": None, "ref": "refs/heads/main"}) for entry in baseline.history]})
    return Scenario("rerun", base, make_comparison(base, base), baseline, LINKS)


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "rerun": rerun,
    "first_run": first_run,
    "improvement": improvement,
    "regression": regression,
    "config_change": config_change,
    "huge": huge,
    "hostile": hostile,
}
