"""Create or refresh a baseline from a results file. Pure.

The new baseline takes everything from the results (fingerprint, aggregates, per-case scores
rounded to 6 decimals, each case's ranking of max(k) distinct cards with the retriever's scores
rounded to 4 decimals, no text) and keeps the old baseline's history, with one entry appended
for this run: ``{sha, ref, timestamp, headline: {hit@k, recall@k, ndcg@k on overall}, n}``.
A rerun on the same commit (same non-empty sha as the last entry) replaces that entry instead of
adding a second point. The history keeps the last ``history_limit`` entries.

Results whose rankings are all empty (no case retrieved a single card: an empty or misspelled
collection, a retriever that failed on every case) measured nothing, and as a baseline would make
every later run look like an improvement: ``no_rankings_problem`` says so, and the shells that
take a results file from outside (``baseline update``, the action's ``write-baseline``) refuse it
(exit 2). ``eval`` already refuses to write such results (``score.validity``).
"""

from __future__ import annotations

from retrieval_gate.baseline.fingerprint import fingerprint
from retrieval_gate.baseline.model import DECIMALS, Baseline, BaselineCase, HistoryEntry, headline_numbers
from retrieval_gate.defaults import DEFAULT_HISTORY_LIMIT
from retrieval_gate.errors import BaselineError, UsageError
from retrieval_gate.score.results import MetricCell, Results

RANK_SCORE_DECIMALS = 4  # the retriever's scores: for display (margins), not for statistics


def update_baseline(
    *,
    baseline: Baseline | None,
    results: Results,
    sha: str | None,
    ref: str | None,
    timestamp: str | None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
) -> Baseline:
    if history_limit < 1:
        raise UsageError(f"history limit {history_limit}: must be ≥ 1")
    if baseline is not None and baseline.suite != results.suite:
        raise BaselineError(
            f"the baseline is for suite {baseline.suite!r} but the results are for suite {results.suite!r}; "
            "refusing to mix them (use the baseline file of that suite)")
    headline, n = headline_numbers(results.aggregates, headline_k=results.headline_k,
                                      metrics=list(results.metrics))
    entry = HistoryEntry(sha=sha, ref=ref, timestamp=timestamp, headline=headline, n=n)
    history = list(baseline.history) if baseline is not None else []
    if history and sha and history[-1].sha == sha:
        history[-1] = entry
    else:
        history.append(entry)
    return Baseline(
        suite=results.suite,
        tool_version=results.tool_version,
        sha=sha,
        ref=ref,
        updated_at=timestamp,
        k=list(results.k),
        headline_k=results.headline_k,
        metrics=list(results.metrics),
        fingerprint=fingerprint(results),
        completeness=results.completeness.model_copy(deep=True),
        aggregates={name: {m: MetricCell(value=round(c.value, DECIMALS), n=c.n) for m, c in cells.items()}
                    for name, cells in results.aggregates.items()},
        cases={case.id: BaselineCase(scores={m: round(v, DECIMALS) for m, v in case.scores.items()},
                                     status=case.status, slices=list(case.slices), ranked=list(case.retrieved),
                                     ranked_scores=[round(v, RANK_SCORE_DECIMALS) for v in case.retrieved_scores])
               for case in results.cases},
        history=history[-history_limit:],
        rankings=True,
    )


def no_rankings_problem(results: Results) -> str | None:
    """Why ``results`` cannot become a baseline because no case retrieved anything, or None."""
    if not results.cases or any(case.retrieved for case in results.cases):
        return None
    failed = results.completeness.failed
    return (f"every ranking in the results is empty: none of the {len(results.cases)} cases retrieved a card"
            + (f" ({failed} failed)" if failed else "")
            + f" (retriever {str(results.config.get('retriever', '?'))[:200]!r}); a baseline of it would measure "
            "nothing: check the retriever (its collection, its ids) and evaluate again")
