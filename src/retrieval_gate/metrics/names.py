"""Metric names, parsed in one place: ``"nDCG@10"`` → ``MetricSpec("ndcg", 10)``, ``"Rprec"`` →
``MetricSpec("rprec", None)``.

As ir_measures writes them: a measure's name (letters, digits, ``_``; any case; an alias of the
registry), then ``@`` and the cutoff for a measure that takes one (``P@5``, ``nDCG@10``; trec_eval's
``ndcg_cut_10`` too), nothing for one that takes none (``Rprec``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from retrieval_gate.errors import UsageError
from retrieval_gate.metrics.measures import MEASURES, REGISTRY

DISPLAY = {m.name: m.display for m in REGISTRY.values()}
_ALIASES = {alias: m.name for m in REGISTRY.values() for alias in (m.name, *m.aliases)}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TREC_CUT = re.compile(r"^(.+?)_([0-9]+)$")  # trec_eval's ndcg_cut_10, P_5
PLAIN_METRICS = ("abstention",)  # score keys that are not measures


@dataclass(frozen=True, order=True)
class MetricSpec:
    measure: str
    k: int | None  # None: a measure without a cutoff (``Measure.cutoff`` is False)

    @property
    def name(self) -> str:
        """Canonical key used in every file: ``ndcg@10``, ``rprec``."""
        return self.measure if self.k is None else f"{self.measure}@{self.k}"

    @property
    def display(self) -> str:
        """Human label: ``nDCG@10``, ``Rprec``."""
        return DISPLAY[self.measure] if self.k is None else f"{DISPLAY[self.measure]}@{self.k}"


def _written(measure: str) -> str:
    """How a measure is written: ``ndcg@K``, ``rprec``."""
    return f"{measure}@K" if REGISTRY[measure].cutoff else measure


def parse_measure(text: str) -> str:
    """A measure's canonical name from its name or an alias (``nDCG`` → ``ndcg``, ``Rprec`` →
    ``rprec``); a whole metric name (``ndcg@10``) gives its measure."""
    name = text.strip()
    if "@" in name:
        return parse_metric(name).measure
    measure = _ALIASES.get(name.lower())
    if measure is None:
        raise UsageError(f"measure {text!r}: unknown measure (known: {', '.join(MEASURES)})")
    return measure


def parse_metric(text: str) -> MetricSpec:
    """Parse ``nDCG@10``, ``ndcg_cut_10``, ``P@5``, ``hit@3``, ``Rprec``… (case-insensitive)."""
    name, at, k_text = text.strip().rpartition("@")
    if not at:
        name, k_text = text.strip(), ""
        match = _TREC_CUT.match(name)
        if name.lower() not in _ALIASES and match:
            name, k_text = match.group(1), match.group(2)
    name, k_text = name.strip(), k_text.strip()
    if not _NAME.match(name) or (at and not re.fullmatch(r"[0-9]+", k_text)):
        raise UsageError(f"metric {text!r}: expected NAME@K (e.g. ndcg@10), or NAME for a measure without a "
                         f"cutoff; measures: {', '.join(map(_written, MEASURES))}")
    measure = _ALIASES.get(name.lower())
    if measure is None:
        raise UsageError(f"metric {text!r}: unknown measure (known: {', '.join(MEASURES)})")
    record = REGISTRY[measure]
    if not record.cutoff:
        if k_text:
            raise UsageError(f"metric {text!r}: {record.display} takes no cutoff; write {measure}")
        return MetricSpec(measure, None)
    if not k_text:
        raise UsageError(f"metric {text!r}: {record.display} takes a cutoff; write {measure}@K, e.g. {measure}@10")
    k = int(k_text)
    if k < 1:
        raise UsageError(f"metric {text!r}: k must be ≥ 1")
    return MetricSpec(measure, k)


def is_metric_name(name: str) -> bool:
    """Is ``name`` a measure's key (``ndcg@5``, ``rprec``), as opposed to a plain score key
    (``abstention``)?"""
    try:
        parse_metric(name)
    except UsageError:
        return False
    return True


def display_name(name: str) -> str:
    """``ndcg@5`` → ``nDCG@5``, ``rprec`` → ``Rprec``; a plain score key (``abstention``) unchanged."""
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


def lead_metrics(headline_k: int, metrics: Sequence[str]) -> list[str]:
    """What a report leads with, the first being the primary metric the gate judges: the headline
    measures measured (``headline_names``); when a suite measures none of them, its other measures
    at the headline k; else its first three (a suite of measures without a cutoff: ``rprec``).
    ``metrics``: the measured metrics in the grid's order (``Results.metrics``)."""
    return (headline_names(headline_k, measured=metrics)
            or [m for m in metrics if is_metric_name(m) and parse_metric(m).k == headline_k]
            or [m for m in metrics if is_metric_name(m)][:3])
