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

from retrieval_gate.history.model import (
    Drop,
    Gap,
    HistoryStats,
    LostCase,
    Point,
    SuiteHistory,
    Version,
)
from retrieval_gate.history.steps import aggregates_of, change_between, pr_number, pr_page
from retrieval_gate.history.walk import Walker

FLAKY_FLIPS = 2
DROPS_SHOWN = 5


def build_history(versions: Iterable[Version], *, suite: str, alpha: float, resamples: int,
                  seed: int = 0, pull_page: str | None = None) -> SuiteHistory:
    """The history of one suite (module docstring); ``versions`` oldest first. Each point's PR is
    the one the measured commit's message names (the merge or squash commit the refresh measured),
    else the one the refresh commit's own message names; ``pull_page`` (``…/pull/{n}``) links it."""
    walker = Walker()
    points: list[Point] = []
    gaps: list[Gap] = []
    path, previous = "", None
    for version in versions:
        path = version.path
        if version.baseline is None:
            gaps.append(Gap(sha=version.sha, date=version.date, reason=version.problem or "unreadable"))
            continue
        baseline = version.baseline
        change = None
        if previous is not None:
            change = change_between(before=previous[1], after=baseline, kb_before=previous[0].kb, kb_after=version.kb)
        interval, step = walker.advance(baseline, change=change, alpha=alpha, resamples=resamples, seed=seed)
        headline, slices, n = aggregates_of(baseline)
        pr = pr_number(version.measured_message)
        pr = pr_number(version.message) if pr is None else pr
        points.append(Point(sha=version.sha, date=version.date, ref=baseline.ref, measured_sha=baseline.sha,
                            pr=pr, pr_url=pr_page(pull_page, pr), subject=version.message.split("\n", 1)[0][:200],
                            n=n, headline=headline, interval={m: v for m, v in interval.items() if m in headline},
                            slices=slices, change=change, step=step))
        previous = (version, baseline)
    measures = list(points[-1].headline) if points else []
    rows = walker.rows()
    return SuiteHistory(suite=suite, path=path, headline_k=walker.k or 5, measures=measures, points=points, gaps=gaps,
                        flaky=sorted(c for c, count in walker.flips.items() if count >= FLAKY_FLIPS),
                        lost=lost_cases(rows, lost_at=walker.lost_at, points=points),
                        drops=largest_drops(points, measures=measures), cases=rows,
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
            out.append(Drop(measure=measure, point=i, sha=point.sha, pr=point.pr, pr_url=point.pr_url,
                            delta=delta, p=stat.p, significant=stat.significant,
                            changed=point.change.kinds() if point.change is not None else []))
    return out
