"""The numbers a baseline keeps: a run's headline (hit / recall / nDCG at the headline k on
``overall``), rounded to ``DECIMALS``. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from retrieval_gate.metrics.headline import headline_names
from retrieval_gate.score.results import MetricCell
from retrieval_gate.score.scoring import OVERALL

DECIMALS = 6  # every number written to a baseline is rounded to this many decimals


def headline_numbers(
    aggregates: Mapping[str, Mapping[str, MetricCell]], headline_k: int
) -> tuple[dict[str, float], int]:
    """``({"hit@5": 0.8, "recall@5": …, "ndcg@5": …}, n)`` from the overall slice; n is the
    largest n among them (the cases with gold)."""
    overall = aggregates.get(OVERALL, {})
    cells = {name: overall[name] for name in headline_names(headline_k, measured=overall)}
    return ({name: round(cell.value, DECIMALS) for name, cell in cells.items()},
            max((cell.n for cell in cells.values()), default=0))

