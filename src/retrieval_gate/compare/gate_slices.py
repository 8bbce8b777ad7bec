"""The checks that guard a comparison, in one place for the CLI's ``compare`` and the action's
``pr`` flow alike (``check_comparable``): the gate's keys name slices that exist — a floor or max
drop on ``hit@5:tag.area=acount`` (a typo) is a usage error naming the unknown slice and the known
ones, never a gate that fails on a row that cannot exist, nor one that silently judges nothing —
and the headline k did not move by default. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from retrieval_gate.compare.gate import GateSettings, parse_key
from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import headline_k_problem

if TYPE_CHECKING:
    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.score.results import Results

MAX_LISTED = 40


def check_comparable(*, results: Results, baseline: Baseline, gate: GateSettings, headline_k: int | None) -> None:
    """Every check a comparison passes before it is judged (a ``UsageError``: exit 2, the same words
    from ``retrieval-gate compare`` and from the action): the gate's slices exist, the headline k
    did not move by default. ``headline_k``: the suite's configured one (None = the default)."""
    check_gate_slices(gate=gate, slices=[*results.aggregates, *baseline.aggregates])
    check_headline_k(results_k=results.headline_k, baseline_k=baseline.headline_k, configured=headline_k,
                     ks=results.k)


def check_gate_slices(*, gate: GateSettings, slices: Iterable[str]) -> None:
    """Raise UsageError when a floor or max-drop key names a slice in neither run."""
    known = sorted(set(slices))
    for kind, keys in (("--floor", gate.floors), ("--max-drop", gate.max_drop)):
        for key in keys:
            if ":" not in key:
                continue
            _, slice_name = parse_key(key)
            if slice_name not in known:
                shown = ", ".join(known[:MAX_LISTED]) + (" …" if len(known) > MAX_LISTED else "")
                raise UsageError(f"{kind} {key!r} (or the config's gate): no slice {slice_name!r} in the results or "
                                 f"the baseline; known slices: {shown}")


def check_headline_k(*, results_k: int, baseline_k: int, configured: int | None, ks: Iterable[int]) -> None:
    """A headline k that moved by default (k lost the 5 the baseline was judged at, so the
    default became the largest cutoff) is a usage error: the gate would silently judge another
    metric. Setting ``headline_k`` (or ``--headline-k``) says the move is meant."""
    if configured is not None or results_k == baseline_k or headline_k_problem(headline_k=baseline_k, k=ks) is None:
        return
    cutoffs = ", ".join(str(k) for k in sorted(set(ks)))
    raise UsageError(f"the headline k moved from {baseline_k} (the baseline's) to {results_k} because k "
                     f"[{cutoffs}] no longer measures {baseline_k}: add {baseline_k} to k (--k / the config's k), "
                     f"or say headline_k: {results_k} (--headline-k, one of {cutoffs}) and refresh the baseline")
