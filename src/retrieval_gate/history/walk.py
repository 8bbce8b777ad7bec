"""The walk over a baseline's versions, one step at a time, touching only the cases that changed.
Pure. Consecutive refreshes share almost every case (``artifacts.baseline_lines`` hands the same
case object on for the same line; equal cases compare equal otherwise), so each step costs what
changed, not the size of the golden set: the sums behind each headline interval, the hit of each
case, and which cases rank which card are updated for the changed and removed cases alone; the
paired differences of the cases that did not change are zeros."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from retrieval_gate.baseline.model import Baseline, BaselineCase
from retrieval_gate.history.model import Change, StepStat
from retrieval_gate.history.steps import changed_keys, step_stat
from retrieval_gate.metrics.names import lead_metrics
from retrieval_gate.stats.proportion import interval_of

INTERVAL_LEVEL = 0.95


def _score(case: BaselineCase | None, measure: str) -> float | None:
    return case.scores.get(measure) if case is not None and case.status == "scored" else None


def dirty_cases(change: Change, *, holders_before: Mapping[str, set[str]], holders_after: Mapping[str, set[str]],
                rankings: bool) -> set[str] | None:
    """The cases whose dependencies changed at a step; None: all of them (the settings or the
    golden set changed, or a KB change that cannot be placed on cards or rankings). A case depends
    on the cards of its stored ranking before and after the step (``holders_*``: card → the cases
    that rank it)."""
    if change.settings or change.cases.gold_changed or change.kb.unseen:
        return None
    cards = set(change.kb.added) | set(change.kb.removed) | set(change.kb.edited)
    if not cards:
        return set()
    if not rankings:
        return None
    out: set[str] = set()
    for holders in (holders_before, holders_after):
        for card in cards:
            out |= holders.get(card, set())
    return out


@dataclass
class _Sums:
    n: int = 0
    s1: float = 0.0
    s2: float = 0.0
    fractional: int = 0  # values other than 0 and 1

    def add(self, value: float, sign: int) -> None:
        self.n += sign
        self.s1 += sign * value
        self.s2 += sign * value * value
        self.fractional += sign * (value not in (0.0, 1.0))

    def interval(self, *, binary: bool) -> tuple[float, float]:
        mean = self.s1 / self.n if self.n else 0.0
        var = (self.s2 - self.n * mean * mean) / (self.n - 1) if self.n > 1 else 0.0
        return interval_of(n=self.n, mean=mean, var=var, level=INTERVAL_LEVEL, binary=binary)


@dataclass
class Walker:
    """The state between two versions (module docstring)."""

    cases: dict[str, BaselineCase] = field(default_factory=dict)  # the previous version's
    k: int | None = None
    rankings: bool = True
    sums: dict[str, _Sums] = field(default_factory=dict)
    hit: dict[str, int | None] = field(default_factory=dict)
    events: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)  # case → (point, hit) changes
    flips: dict[str, int] = field(default_factory=dict)  # flips at clean steps
    lost_at: dict[str, int] = field(default_factory=dict)  # case → the point it last went 1 → 0
    holders: dict[str, set[str]] = field(default_factory=dict)  # card → the cases that rank it
    points: int = 0

    def advance(self, after: Baseline, *, change: Change | None, alpha: float, resamples: int,
                seed: int) -> tuple[dict[str, tuple[float, float]], dict[str, StepStat]]:
        """Take the next version: ``(interval of each headline measure, step from the previous)``."""
        before = self.cases
        same_k = self.k == after.headline_k
        if same_k:
            changed = changed_keys(before, after.cases)
        else:
            changed = list(after.cases)
            self.sums = {}
        removed = [c for c in before if c not in after.cases]
        measures = lead_metrics(after.headline_k, after.metrics)
        step = self._steps(after, changed=changed, removed=removed, measures=measures, alpha=alpha,
                           resamples=resamples, seed=seed) if same_k and change is not None else {}
        for m in measures:
            sums = self.sums.setdefault(m, _Sums())
            for c in changed:
                old, new = (_score(before.get(c), m) if same_k else None), _score(after.cases[c], m)
                if old is not None:
                    sums.add(old, -1)
                if new is not None:
                    sums.add(new, 1)
            for c in removed:
                old = _score(before[c], m)
                if old is not None and same_k:
                    sums.add(old, -1)
        interval = {m: s.interval(binary=s.fractional == 0) for m, s in self.sums.items() if s.n and m in measures}
        dirty = self._update_holders(after, changed=changed, removed=removed, change=change)
        self._update_hits(after, changed=changed, removed=removed, dirty=dirty, first=change is None)
        self.cases, self.k, self.rankings = after.cases, after.headline_k, after.rankings
        self.points += 1
        return interval, step

    def _steps(self, after: Baseline, *, changed: list[str], removed: list[str], measures: list[str], alpha: float,
               resamples: int, seed: int) -> dict[str, StepStat]:
        before = self.cases
        out = {}
        for m in measures:
            sums = self.sums.get(m)
            if sums is None:
                continue
            paired, fractional = sums.n, sums.fractional
            for c in removed:
                old = _score(before[c], m)
                if old is not None:
                    paired -= 1
                    fractional -= old not in (0.0, 1.0)
            diffs = []
            for c in changed:
                old, new = _score(before.get(c), m), _score(after.cases[c], m)
                fractional += (new is not None and new not in (0.0, 1.0)) - (old is not None and old not in (0.0, 1.0))
                if old is not None and new is None:
                    paired -= 1
                elif old is not None and new is not None:
                    diffs.append(new - old)
            if paired <= 0:
                continue
            vector = np.zeros(paired)
            vector[:len(diffs)] = diffs
            binary = sums.fractional == 0 and fractional == 0  # 0/1 in both versions: the exact sign test
            out[m] = step_stat(vector, binary=binary, alpha=alpha, resamples=resamples, seed=seed)
        return out

    def _update_holders(self, after: Baseline, *, changed: list[str], removed: list[str],
                        change: Change | None) -> set[str] | None:
        cards = set() if change is None else set(change.kb.added) | set(change.kb.removed) | set(change.kb.edited)
        before_holders = {card: set(self.holders.get(card, ())) for card in cards}
        for c in (*changed, *removed):
            old = self.cases.get(c)
            for card in old.ranked if old is not None else ():
                self.holders.get(card, set()).discard(c)
            new = after.cases.get(c)
            for card in new.ranked if new is not None else ():
                self.holders.setdefault(card, set()).add(c)
        if change is None:
            return None
        return dirty_cases(change, holders_before=before_holders, holders_after=self.holders,
                           rankings=self.rankings and after.rankings)

    def _update_hits(self, after: Baseline, *, changed: list[str], removed: list[str], dirty: set[str] | None,
                     first: bool) -> None:
        point, name = self.points, f"hit@{after.headline_k}"
        for c in changed:
            value = _score(after.cases[c], name)
            new = None if value is None else round(value)
            old = self.hit.get(c)
            if c in self.hit and old == new:
                continue
            self.hit[c] = new
            self.events.setdefault(c, []).append((point, new))
            if first or old is None or new is None:
                continue
            if new == 0:
                self.lost_at[c] = point
            if dirty is not None and c not in dirty:
                self.flips[c] = self.flips.get(c, 0) + 1
        for c in removed:
            if c in self.hit:
                del self.hit[c]
                self.events.setdefault(c, []).append((point, None))

    def rows(self) -> dict[str, list[int | None]]:
        """Each case's hit at every point (None: not scored there), by id."""
        out = {}
        for c, events in sorted(self.events.items()):
            row: list[int | None] = [None] * self.points
            for i, (start, value) in enumerate(events):
                end = events[i + 1][0] if i + 1 < len(events) else self.points
                row[start:end] = [value] * (end - start)
            out[c] = row
        return out
