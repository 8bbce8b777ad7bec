"""How a golden set was judged: ``complete`` or ``pooled`` (docs/baseline.md "What the labels
know"). Pure.

- ``complete``: every card that answers a case is in its gold (a hand-made set whose questions
  list every card that answers them; docs/decisions.md "A golden set says how it was judged"). A
  card outside the gold is not relevant, as trec_eval reads a run; the gate's status is ``pass``
  or ``fail``, never ``needs-labels``.
- ``pooled``: the set was judged from a pool of systems (``label apply`` from a draft, the "not
  relevant" sidecar): a card outside the judgements is *unjudged*. The gate asks for labels only
  where some labelling of the unjudged cards changes its decision (``compare.decisive``).

Set by the suite key ``judgements`` (``compare --judgements``); else the results record what the
run read (``config.judgements``: the golden set's pool provenance, ``artifacts.label_sidecar.
golden_judgements``); else a results file from before that key reads ``pooled`` where a case
carries a "not relevant" judgement, else ``complete``.
"""

from __future__ import annotations

from typing import Literal

from retrieval_gate.errors import UsageError
from retrieval_gate.score.results import Results

Judgements = Literal["complete", "pooled"]
JUDGEMENTS: tuple[str, ...] = ("complete", "pooled")


def check_judgements(value: str, *, flag: str = "--judgements") -> Judgements:
    """``value`` when it names a way of judging; else a UsageError naming ``flag``."""
    if value not in JUDGEMENTS:
        raise UsageError(f"{flag} {value!r}: expected complete or pooled")
    return value  # type: ignore[return-value]


def judgements_of(results: Results, given: str | None = None) -> Judgements:
    """The way the comparison reads ``results``' golden set: ``given`` (the flag, the suite key),
    else what the results recorded, else from the judgements the cases carry."""
    if given is not None:
        return check_judgements(given)
    recorded = results.config.get("judgements")
    if recorded in JUDGEMENTS:
        return recorded  # type: ignore[no-any-return]
    return "pooled" if any(case.not_relevant for case in results.cases) else "complete"
