"""A suite's history from its committed baseline versions, oldest first. Pure.

``build_history`` walks the versions once, holding two at a time (a quarter of refreshes of a
large golden set does not fit in memory at once): each readable version is a point, each one that
is not a gap (its sha and the reason); each point after the first gets the step from the previous
point (``history.steps``).

**Flaky**: a case whose hit at the headline k flipped (1 → 0 or 0 → 1 between two neighbouring
points that both scored it) at least ``FLAKY_FLIPS`` times at *clean* steps — steps where no
setting changed, the golden set's file did not change (a case's gold is not in the baseline, so an
edit of the golden set counts against every case), and no KB card the case depends on changed: a
card of its stored ranking before or after the step (a baseline without rankings, or a KB that
changed without a manifest on one side: every case depends on the change). What is left is
nondeterminism or near-ties.

**Lost** (never recovered): a case present at the last point, missing there, that was a hit at
some earlier point; named with the point at which it was lost the last time.

**Drops**: per headline measure, the ``DROPS_SHOWN`` steps with the largest paired drop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.history.model import (
    Change,
    Drop,
    Gap,
    HistoryStats,
    LostCase,
    Point,
    SuiteHistory,
    Version,
)
from retrieval_gate.history.steps import Scores, change_between, headline_scores, point_headline, pr_number, step_stats

FLAKY_FLIPS = 2
DROPS_SHOWN = 5
INTERVAL_LEVEL = 0.95


def dirty_cases(change: Change, *, before: Baseline, after: Baseline) -> set[str] | None:
    """The cases whose dependencies changed at a step; None: all of them (settings, the golden
    set, or a KB change that cannot be placed on cards or rankings)."""
    if change.settings or change.cases.gold_changed or change.kb.unseen:
        return None
    cards = set(change.kb.added) | set(change.kb.removed) | set(change.kb.edited)
    if not cards:
        return set()
    if not (before.rankings and after.rankings):
        return None
    out = set()
    for cases in (before.cases, after.cases):
        for case_id, case in cases.items():
            if not cards.isdisjoint(case.ranked):
                out.add(case_id)
    return out


@dataclass
class _Walk:
    """What the walk keeps: the points, the hits of every case at every point, the clean flips."""

    points: list[Point] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    hits: dict[str, list[int | None]] = field(default_factory=dict)
    flips: dict[str, int] = field(default_factory=dict)
    lost_at: dict[str, int] = field(default_factory=dict)  # case → the point it last went 1 → 0
    headline_k: int = 5
    path: str = ""

    def record_hits(self, baseline: Baseline, *, dirty: set[str] | None, first: bool) -> None:
        index = len(self.points) - 1
        name = f"hit@{baseline.headline_k}"
        for case_id, case in baseline.cases.items():
            value = case.scores.get(name) if case.status == "scored" else None
            hit = None if value is None else round(value)
            row = self.hits.get(case_id)
            if row is None:
                row = self.hits[case_id] = [None] * index
            row.append(hit)
        for row in self.hits.values():
            if len(row) == index:
                row.append(None)
        if first:
            return
        for case_id, row in self.hits.items():
            old, new = row[-2], row[-1]
            if old is None or new is None or old == new:
                continue
            if new == 0:
                self.lost_at[case_id] = index
            if dirty is not None and case_id not in dirty:
                self.flips[case_id] = self.flips.get(case_id, 0) + 1


def build_history(versions: Iterable[Version], *, suite: str, alpha: float, resamples: int,
                  seed: int = 0) -> SuiteHistory:
    """The history of one suite (module docstring); ``versions`` oldest first."""
    walk = _Walk()
    previous: tuple[Version, Baseline, Scores] | None = None
    for version in versions:
        walk.path = version.path
        if version.baseline is None:
            walk.gaps.append(Gap(sha=version.sha, date=version.date, reason=version.problem or "unreadable"))
            continue
        baseline = version.baseline
        scores = headline_scores(baseline)
        headline, interval, slices, n = point_headline(baseline, scores=scores, level=INTERVAL_LEVEL)
        change, step, dirty = None, {}, None
        if previous is not None:
            before_version, before, before_scores = previous
            change = change_between(before=before, after=baseline, kb_before=before_version.kb, kb_after=version.kb)
            step = step_stats(before=before_scores, after=scores, alpha=alpha, resamples=resamples, seed=seed)
            dirty = dirty_cases(change, before=before, after=baseline)
        walk.points.append(Point(sha=version.sha, date=version.date, ref=baseline.ref, measured_sha=baseline.sha,
                                 pr=pr_number(version.message), subject=version.message.split("\n", 1)[0][:200],
                                 n=n, headline=headline, interval=interval, slices=slices, change=change, step=step))
        walk.record_hits(baseline, dirty=dirty, first=previous is None)
        walk.headline_k = baseline.headline_k
        previous = (version, baseline, scores)
    measures = list(walk.points[-1].headline) if walk.points else []
    return SuiteHistory(suite=suite, path=walk.path, headline_k=walk.headline_k, measures=measures,
                        points=walk.points, gaps=walk.gaps,
                        flaky=sorted(c for c, count in walk.flips.items() if count >= FLAKY_FLIPS),
                        lost=lost_cases(walk.hits, lost_at=walk.lost_at, points=walk.points),
                        drops=largest_drops(walk.points, measures=measures),
                        cases=dict(sorted(walk.hits.items())),
                        stats=HistoryStats(alpha=alpha, resamples=resamples, seed=seed))


def lost_cases(hits: dict[str, list[int | None]], *, lost_at: dict[str, int], points: list[Point]) -> list[LostCase]:
    """Cases a miss at the last point that were a hit before (module docstring), by id."""
    out = []
    for case_id, row in sorted(hits.items()):
        if row and row[-1] == 0 and 1 in row and case_id in lost_at:
            index = lost_at[case_id]
            out.append(LostCase(id=case_id, sha=points[index].sha, point=index))
    return out


def largest_drops(points: list[Point], *, measures: list[str]) -> list[Drop]:
    """Per measure, the ``DROPS_SHOWN`` largest paired drops, largest first (then oldest)."""
    out = []
    for measure in measures:
        steps = [(point.step[measure].delta, i) for i, point in enumerate(points)
                 if measure in point.step and point.step[measure].delta < 0]
        for delta, i in sorted(steps)[:DROPS_SHOWN]:
            point, stat = points[i], points[i].step[measure]
            out.append(Drop(measure=measure, point=i, sha=point.sha, pr=point.pr, delta=delta, p=stat.p,
                            significant=stat.significant,
                            changed=point.change.kinds() if point.change is not None else []))
    return out
