"""The audit: every check over plain data, assembled into one report. Pure: the shell loads the
files, chunks the KB and passes everything in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from retrieval_gate import __version__
from retrieval_gate.audit.cards import ambiguous_gold, card_groups, cluster_findings, near_duplicate_clusters
from retrieval_gate.audit.coverage import coverage_findings, coverage_matrix, default_fields
from retrieval_gate.audit.label_review import label_review, review_findings
from retrieval_gate.audit.model import KINDS, AuditCard, AuditReport, Finding, sort_findings
from retrieval_gate.audit.params import AuditParams
from retrieval_gate.audit.queries import leakage_findings, leaked_queries, query_groups, split_shared_gold
from retrieval_gate.audit.text import WordHasher, char_shingles, shingle_hashes, words
from retrieval_gate.audit.unwinnable import orphaned_gold, unwinnable_findings
from retrieval_gate.models import Card, Case
from retrieval_gate.score.provenance import provenance


def audit_cards(entries: Sequence[Card], chunks: Mapping[str, int] | None = None) -> dict[str, AuditCard]:
    """KB entries → one ``AuditCard`` per card (KB order): the title and text of every entry of
    the card joined, each entry's metadata, and its chunk count when ``chunks`` is given."""
    texts: dict[str, list[str]] = {}
    metas: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        texts.setdefault(entry.card_id, []).append(
            f"{entry.title}\n{entry.text}" if entry.title.strip() and entry.text.strip() else entry.text)
        metas.setdefault(entry.card_id, []).append(entry.metadata)
    return {card: AuditCard(id=card, text="\n".join(parts), metadata=tuple(metas[card]),
                            chunks=None if chunks is None else chunks.get(card, 0))
            for card, parts in texts.items()}


def run_audit(
    *,
    cases: Sequence[Case],
    entries: Sequence[Card],
    params: AuditParams,
    chunks: Mapping[str, int] | None = None,
    max_drop: float = 0.02,
    alpha: float = 0.05,
    retrieved: Mapping[str, Sequence[str]] | None = None,
    k: int = 5,
    cases_sha256: str | None = None,
    kb_sha256: str | None = None,
    subset: Mapping[str, Any] | None = None,
    not_relevant: Mapping[str, Collection[str]] | None = None,
) -> AuditReport:
    """Every check of the audit (see ``model.KINDS``). ``retrieved`` (case id → its ranked cards,
    from a results file) turns on the label-completeness review at ``k`` and gives the coverage
    cells their measured hit rates."""
    cards = audit_cards(entries, chunks)
    card_ids = list(cards)
    hasher = WordHasher()
    card_sh = [shingle_hashes(hasher(words(cards[c].text)), size=params.shingle_size) for c in card_ids]

    findings: list[Finding] = []
    clusters = near_duplicate_clusters(ids=card_ids, shingles=card_sh, threshold=params.threshold,
                                       num_perm=params.num_perm, seed=params.seed)
    findings += cluster_findings(clusters, threshold=params.threshold)
    findings += ambiguous_gold(cases, clusters=clusters)

    query_words = [words(c.query) for c in cases]
    query_sh = [shingle_hashes(hasher(w), size=params.shingle_size) if len(w) >= params.leak_min_words
                else shingle_hashes(hasher([]), size=params.shingle_size) for w in query_words]
    leaks = leaked_queries(query_shingles=query_sh, card_shingles=card_sh, containment=params.leak_containment)
    findings += leakage_findings(cases=cases, card_ids=card_ids, leaks=leaks)
    findings += query_groups(cases=cases, normalised=[" ".join(w) for w in query_words],
                             char_shingles=[char_shingles(c.query, size=params.query_shingle_chars) for c in cases],
                             threshold=params.query_threshold, num_perm=params.num_perm, seed=params.seed)
    findings += split_shared_gold(cases=cases, group_of=card_groups(card_ids, clusters=clusters))
    findings += unwinnable_findings(cases=cases, cards=cards, min_chars=params.min_card_chars)
    findings += orphaned_gold(cases=cases, cards=cards)

    hits = None
    review = None
    if retrieved is not None:
        hits = {case.id: any(g in set(case.gold) for g in retrieved.get(case.id, ())[:k]) for case in cases}
        review, items = label_review(cases=cases, retrieved=retrieved, k=k, limit=params.review_limit,
                                     not_relevant=not_relevant)
        findings += review_findings(items, k=k)
    fields = list(params.coverage) if params.coverage is not None else default_fields(cards)
    coverage = coverage_matrix(cases=cases, cards=cards, fields=fields, max_drop=max_drop, alpha=alpha,
                               power=params.power, metric=f"hit@{k}", hits=hits)
    findings += coverage_findings(coverage)

    findings = sort_findings(findings)
    by_kind = Counter(f.kind for f in findings)
    by_severity = Counter(f.severity for f in findings)
    return AuditReport(
        tool_version=__version__,
        params=params.model_dump(mode="json"),
        provenance=provenance(cases=cases, entries=entries, cases_sha256=cases_sha256, kb_sha256=kb_sha256,
                              subset=subset),
        counts={"cases": len(cases), "cards": len(cards), "cases_with_gold": sum(1 for c in cases if c.gold),
                "findings": len(findings), "near_duplicate_clusters": len(clusters)},
        by_kind={kind: by_kind.get(kind, 0) for kind in KINDS},
        by_severity={s: by_severity.get(s, 0) for s in ("high", "medium", "low")},
        findings=findings,
        coverage=coverage,
        label_review=review,
    )
