"""Metric names, parsed in one place: ``"nDCG@10"`` → ``MetricSpec("ndcg", 10)``."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from retrieval_gate.errors import UsageError
from retrieval_gate.metrics.measures import DEFAULT_MEASURES, MEASURES, REGISTRY

DISPLAY = {m.name: m.display for m in REGISTRY.values()}
_ALIASES = {alias: m.name for m in REGISTRY.values() for alias in (m.name, *m.aliases)}
_PATTERN = re.compile(r"^\s*([A-Za-z_]+?)\s*(?:@|_)\s*(\d+)\s*$")
PLAIN_METRICS = ("abstention",)  # score keys without a cutoff


@dataclass(frozen=True, order=True)
class MetricSpec:
    measure: str
    k: int

    @property
    def name(self) -> str:
        """Canonical key used in every file: ``ndcg@10``."""
        return f"{self.measure}@{self.k}"

    @property
    def display(self) -> str:
        """Human label: ``nDCG@10``."""
        return f"{DISPLAY[self.measure]}@{self.k}"


def parse_metric(text: str) -> MetricSpec:
    """Parse ``nDCG@10``, ``ndcg_cut_10``, ``P@5``, ``hit@3``… (case-insensitive)."""
    match = _PATTERN.match(text)
    if not match:
        raise UsageError(f"metric {text!r}: expected NAME@K, e.g. ndcg@10 (names: {', '.join(MEASURES)})")
    measure = _ALIASES.get(match.group(1).lower().rstrip("_"))
    if measure is None:
        raise UsageError(f"metric {text!r}: unknown measure (known: {', '.join(MEASURES)})")
    k = int(match.group(2))
    if k < 1:
        raise UsageError(f"metric {text!r}: k must be ≥ 1")
    return MetricSpec(measure, k)


def is_metric_name(name: str) -> bool:
    """Is ``name`` a measure at a cutoff (``ndcg@5``), as opposed to a plain score key?"""
    if "@" not in name:
        return False
    try:
        parse_metric(name)
    except UsageError:
        return False
    return True


def display_name(name: str) -> str:
    """``ndcg@5`` → ``nDCG@5``; a plain score key (``abstention``) unchanged."""
    return parse_metric(name).display if is_metric_name(name) else name


def parse_k_list(text: str | list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """``"1,3,5,10"`` → ``(1, 3, 5, 10)``: sorted, unique, each ≥ 1."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = set()
    for item in items:
        try:
            k = int(str(item).strip())
        except ValueError:
            raise UsageError(f"k list {text!r}: {item!r} is not an integer") from None
        if k < 1:
            raise UsageError(f"k list {text!r}: every k must be ≥ 1")
        out.add(k)
    if not out:
        raise UsageError("k list is empty")
    return tuple(sorted(out))


def headline_k_problem(*, headline_k: int | None, k: Iterable[int]) -> str | None:
    """Why ``headline_k`` cannot headline the cutoffs ``k``, or None: it must be one of them. The
    one statement of the rule (the suite's schema, the action's base settings and ``compare``'s
    moved-headline check call it)."""
    ks = sorted(set(k))
    if headline_k is not None and headline_k not in ks:
        return f"headline_k {headline_k} is not one of the cutoffs k {ks}"
    return None


def metric_specs(ks: tuple[int, ...], measures: tuple[str, ...] = DEFAULT_MEASURES) -> tuple[MetricSpec, ...]:
    """Every measure (default: the default set) at every cutoff, in a stable order (measure
    order, then k)."""
    return tuple(MetricSpec(m, k) for m in measures for k in ks)


# --- The headline -----------------------------------------------------------------------------
# The headline: which measures a report leads with, and at which k. Pure.
#
# hit@k first (the success signal, docs/decisions.md), then recall@k (a lower bound under disjunctive
# gold) and nDCG@k (the ranking signal). The headline k is 5 when measured (a common context
# budget for a RAG answer), else the largest k. Every report, the gate's judged rows, the baseline's history
# and the action's outputs use these definitions.

HEADLINE_MEASURES = ("hit", "recall", "ndcg")


def default_headline_k(ks: Sequence[int]) -> int:
    """5 when measured, else the largest k."""
    return 5 if 5 in ks else max(ks)


def headline_names(headline_k: int, measured: Collection[str] | None = None,
                   measures: Sequence[str] = HEADLINE_MEASURES) -> list[str]:
    """``["hit@5", "recall@5", "ndcg@5"]``, keeping only the names in ``measured`` when given."""
    names = [f"{m}@{headline_k}" for m in measures]
    return names if measured is None else [n for n in names if n in measured]
