"""One point of the history and the step to it from the previous one. Pure.

- ``aggregates_of``: the headline numbers of a version (its overall aggregates, as the baseline
  keeps them) and each slice's n and headline;
- ``step_stat``: the paired difference of one measure over the cases both versions scored
  — the gate's own tests (``stats.sign_flip.sign_flip_tests``, the exact sign test for 0/1 scores,
  else the sign-flip permutation test; ``stats.paired_interval.paired_interval`` and ``reconcile``,
  as ``compare.comparison`` uses them), two-sided at ``alpha``;
- ``change_between``: the settings keys that changed (the fingerprint without the KB's hash,
  ``baseline.fingerprint.settings_changes``), the KB cards added, removed and edited
  (by content hash, on the KB manifests beside the two versions), the cases added and
  removed, and whether the golden set's file changed;
- ``pr_number``: the pull request (``Merge pull request #12``, ``… (#12)``, ``Merged PR 12:``) or
  merge request (``See merge request group/project!12``) a commit message names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from itertools import compress
from operator import is_not

import numpy as np

from retrieval_gate.baseline.fingerprint import config_changes, settings_changes, settings_view
from retrieval_gate.baseline.model import Baseline
from retrieval_gate.history.model import CasesStep, Change, KbStep, SettingChange, SliceCell, StepStat
from retrieval_gate.metrics.names import lead_metrics
from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.paired_interval import paired_interval, reconcile
from retrieval_gate.stats.sign_flip import sign_flip_tests

GOLD_INPUT = "inputs.cases"
KB_INPUT = "inputs.kb"
_PR = re.compile(r"(?:pull request [#!]|\(#|merge request \S*!|^Merged PR )(\d{1,9})\b", re.IGNORECASE | re.MULTILINE)
_QUOTED = re.compile(r'["\u201c][^"\u201c\u201d\n]*["\u201d]')  # a title quoted on one line: ``Revert "Add x (#5)"``


def changed_keys(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    """The keys of ``after`` whose value is not ``before``'s (new ones included), in ``after``'s
    order. Consecutive versions hand on the same objects for what did not change, so where both
    hold the same keys in the same order the objects are compared by identity in C first."""
    keys = list(after)
    if keys == list(before):
        odd = compress(keys, map(is_not, before.values(), after.values()))
        return [k for k in odd if before[k] != after[k]]
    return [k for k in keys if (old := before.get(k)) is not after[k] and old != after[k]]


def pr_number(message: str) -> int | None:
    """The pull / merge request a commit message names: GitHub's merge commit (``Merge pull request
    #12 from …``) or squash subject (``… (#12)``), GitLab's ``See merge request group/project!12``,
    Azure DevOps' ``Merged PR 12: …``; the refresh commit the action writes says ``pull request #12``
    or ``merge request !12``. What a message quotes is another commit's title, not this commit's
    pull request: a squashed revert ``Revert "Add x (#5)" (#12)`` is #12. None: none named."""
    found = _PR.search(_QUOTED.sub('""', message))
    return int(found.group(1)) if found else None


def pr_page(pattern: str | None, number: int | None) -> str | None:
    """The pull request's page on the forge from its ``pattern`` (``…/pull/{n}``), or None."""
    return pattern.replace("{n}", str(number)) if pattern and number is not None else None


def aggregates_of(baseline: Baseline) -> tuple[dict[str, float], dict[str, SliceCell], int]:
    """``(headline, slices, n)`` of one version: its overall headline values (as the baseline keeps
    them), every other slice's n and headline, and the overall n."""
    measures = lead_metrics(baseline.headline_k, baseline.metrics)
    overall = baseline.aggregates.get(OVERALL, {})
    headline = {m: overall[m].value for m in measures if m in overall}
    n = max((overall[m].n for m in headline), default=0)
    slices = {}
    for name, cells in sorted(baseline.aggregates.items()):
        values = {m: cells[m].value for m in measures if m in cells}
        if name != OVERALL and values:
            slices[name] = SliceCell(n=max(cells[m].n for m in values), headline=values)
    return headline, slices, n


def step_stat(diffs: np.ndarray, *, binary: bool, alpha: float, resamples: int, seed: int) -> StepStat:
    """The paired step of one measure over its ``diffs`` (after − before, one per paired case,
    zeros included): the gate's tests (module docstring), two-sided at ``alpha``."""
    p = float(sign_flip_tests(diffs, resamples=resamples, seed=seed).two_sided[0])
    ci, _method = paired_interval(diffs, binary=binary, level=1 - alpha)
    ci, _agrees, _extended = reconcile(ci, significant=p < alpha)
    return StepStat(delta=math.fsum(diffs.tolist()) / len(diffs), ci=ci, p=p, n=len(diffs), significant=p < alpha,
                    lost=int(np.count_nonzero(diffs < 0)), gained=int(np.count_nonzero(diffs > 0)))


def change_between(*, before: Baseline, after: Baseline, kb_before: Mapping[str, KbCard] | None,
                   kb_after: Mapping[str, KbCard] | None) -> Change:
    """What differed between two versions (module docstring)."""
    changes = config_changes(baseline=settings_view(before.fingerprint), current=settings_view(after.fingerprint))
    settings = [SettingChange(key=c.key, old=c.baseline, new=c.current)
                for c in settings_changes(changes) if c.key != GOLD_INPUT]
    kb_hash_changed = any(c.key == KB_INPUT for c in changes)
    if kb_before is not None and kb_after is not None:
        edited = sorted(c for c in changed_keys(kb_before, kb_after)
                        if (old := kb_before.get(c)) is not None and old.sha != kb_after[c].sha)
        kb = KbStep(added=sorted(set(kb_after) - set(kb_before)), removed=sorted(set(kb_before) - set(kb_after)),
                    edited=edited)
    else:
        kb = KbStep(unseen=kb_hash_changed)
    return Change(settings=settings, kb=kb,
                  cases=CasesStep(added=sorted(set(after.cases) - set(before.cases)),
                                  removed=sorted(set(before.cases) - set(after.cases)),
                                  gold_changed=any(c.key == GOLD_INPUT for c in changes)))
