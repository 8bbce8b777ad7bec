"""One point of the history and the step to it from the previous one. Pure.

- ``point_headline``: the headline numbers of a version (its overall aggregates, as the baseline
  keeps them), their 95 % interval over the per-case scores (``stats.proportion.mean_interval``:
  Wilson for hit@k, t for the others) and each slice's n and headline;
- ``step_stats``: per headline measure, the paired difference over the cases both versions scored
  — the gate's own tests (``stats.sign_flip.sign_flip_tests``, the exact sign test for 0/1 scores,
  else the sign-flip permutation test; ``stats.paired_interval.paired_interval`` and ``reconcile``,
  as ``compare.comparison`` uses them), two-sided at ``alpha``;
- ``change_between``: the settings keys that changed (the fingerprint without the KB's hash,
  ``baseline.fingerprint.settings_changes``), the KB cards added, removed and edited
  (by content hash, on the KB manifests beside the two versions), the cases added and
  removed, and whether the golden set's file changed;
- ``pr_number``: the pull request (``Merge pull request #12``, ``… (#12)``) or merge request
  (``See merge request group/project!12``) a commit message names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from retrieval_gate.baseline.fingerprint import config_changes, settings_changes, settings_view
from retrieval_gate.baseline.model import Baseline
from retrieval_gate.history.model import CasesStep, Change, KbStep, SettingChange, SliceCell, StepStat
from retrieval_gate.metrics.headline import headline_names
from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.paired_interval import paired_interval, reconcile
from retrieval_gate.stats.proportion import mean_interval
from retrieval_gate.stats.sign_flip import sign_flip_tests

GOLD_INPUT = "inputs.cases"
KB_INPUT = "inputs.kb"
_PR = re.compile(r"(?:pull request #|\(#|merge request \S*!)(\d{1,9})\b", re.IGNORECASE)

Scores = dict[str, dict[str, float]]  # measure → case id → score


def pr_number(message: str) -> int | None:
    found = _PR.search(message)
    return int(found.group(1)) if found else None


def headline_scores(baseline: Baseline) -> Scores:
    """Each headline measure's per-case scores (scored cases only)."""
    measures = headline_names(baseline.headline_k)
    out: Scores = {m: {} for m in measures}
    for case_id, case in baseline.cases.items():
        if case.status != "scored":
            continue
        for m in measures:
            value = case.scores.get(m)
            if value is not None:
                out[m][case_id] = value
    return {m: values for m, values in out.items() if values}


def _binary(values: np.ndarray) -> bool:
    return bool(np.isin(values, (0.0, 1.0)).all())


def point_headline(baseline: Baseline, *, scores: Scores, level: float
                   ) -> tuple[dict[str, float], dict[str, tuple[float, float]], dict[str, SliceCell], int]:
    """``(headline, interval, slices, n)`` of one version (module docstring)."""
    measures = headline_names(baseline.headline_k)
    overall = baseline.aggregates.get(OVERALL, {})
    headline = {m: overall[m].value for m in measures if m in overall}
    n = max((overall[m].n for m in headline), default=0)
    interval = {}
    for m in headline:
        values = np.fromiter(scores.get(m, {}).values(), dtype=np.float64)
        if len(values):
            interval[m] = mean_interval(values.tolist(), level=level, binary=_binary(values))
    slices = {}
    for name, cells in sorted(baseline.aggregates.items()):
        if name == OVERALL:
            continue
        values = {m: cells[m].value for m in measures if m in cells}
        if values:
            slices[name] = SliceCell(n=max(cells[m].n for m in values), headline=values)
    return headline, interval, slices, n


def step_stats(*, before: Scores, after: Scores, alpha: float, resamples: int, seed: int) -> dict[str, StepStat]:
    """The paired step of every measure both versions have (module docstring)."""
    out = {}
    for measure in sorted(set(before) & set(after)):
        old, new = before[measure], after[measure]
        paired = sorted(set(old) & set(new))
        if not paired:
            continue
        base = np.fromiter((old[c] for c in paired), dtype=np.float64, count=len(paired))
        cur = np.fromiter((new[c] for c in paired), dtype=np.float64, count=len(paired))
        diffs = cur - base
        binary = _binary(base) and _binary(cur)
        p = float(sign_flip_tests(diffs, resamples=resamples, seed=seed).two_sided[0])
        ci, _method = paired_interval(diffs, binary=binary, level=1 - alpha)
        ci, _agrees, _extended = reconcile(ci, significant=p < alpha)
        out[measure] = StepStat(delta=math.fsum(diffs.tolist()) / len(paired), ci=ci, p=p, n=len(paired),
                                significant=p < alpha, lost=int(np.count_nonzero(diffs < 0)),
                                gained=int(np.count_nonzero(diffs > 0)))
    return out


def change_between(*, before: Baseline, after: Baseline, kb_before: Mapping[str, KbCard] | None,
                   kb_after: Mapping[str, KbCard] | None) -> Change:
    """What differed between two versions (module docstring)."""
    changes = config_changes(baseline=settings_view(before.fingerprint), current=settings_view(after.fingerprint))
    settings = [SettingChange(key=c.key, old=c.baseline, new=c.current)
                for c in settings_changes(changes) if c.key != GOLD_INPUT]
    kb_hash_changed = any(c.key == KB_INPUT for c in changes)
    if kb_before is not None and kb_after is not None:
        kb = KbStep(added=sorted(set(kb_after) - set(kb_before)), removed=sorted(set(kb_before) - set(kb_after)),
                    edited=sorted(c for c in set(kb_before) & set(kb_after) if kb_before[c].sha != kb_after[c].sha))
    else:
        kb = KbStep(unseen=kb_hash_changed)
    return Change(settings=settings, kb=kb,
                  cases=CasesStep(added=sorted(set(after.cases) - set(before.cases)),
                                  removed=sorted(set(before.cases) - set(after.cases)),
                                  gold_changed=any(c.key == GOLD_INPUT for c in changes)))
