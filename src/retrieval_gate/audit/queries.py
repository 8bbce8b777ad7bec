"""Checks on the queries: leakage into cards, duplicates, and splits that share what they should
not (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from retrieval_gate.audit.minhash import components, signatures, similar_pairs
from retrieval_gate.audit.model import Finding
from retrieval_gate.models import Case


def split_of(case: Case) -> str | None:
    """The case's split (``split: dev|heldout|…`` in the cases file, kept as the tag ``split``)."""
    return case.tags.get("split")


def leaked_queries(
    *,
    query_shingles: Sequence[np.ndarray],
    card_shingles: Sequence[np.ndarray],
    containment: float,
) -> list[tuple[int, int, float]]:
    """``(query index, card index, share)`` for every query whose shingles are found in a card
    at a share ≥ ``containment`` (empty shingle sets never leak).

    Prefix filtering keeps this linear in the corpus: a card can hold ≥ ``containment`` of a
    query's m shingles only if it holds at least one of the query's ``floor((1 - containment)·m)
    + 1`` shingles that are rarest in the corpus, so only those are looked up per card; every
    candidate is then verified exactly."""
    live = [i for i, q in enumerate(query_shingles) if len(q)]
    if not live:
        return []
    vocab = np.unique(np.concatenate([query_shingles[i] for i in live]))
    df = np.zeros(len(vocab), dtype=np.int64)
    for _, idx in _matches(vocab, card_shingles):
        np.add.at(df, idx, 1)
    prefix_of: dict[int, list[int]] = {}
    for i in live:
        q = query_shingles[i]
        m = len(q)
        keep = int(np.floor((1.0 - containment) * m + 1e-9)) + 1
        q_df = df[np.searchsorted(vocab, q)]
        order = np.lexsort((q, q_df))[:keep]
        for h in q[order]:
            prefix_of.setdefault(int(h), []).append(i)
    prefix = np.array(sorted(prefix_of), dtype=vocab.dtype)
    candidates: dict[int, set[int]] = {}
    for cards, idx in _matches(prefix, card_shingles):
        for c, h in zip(cards.tolist(), prefix[idx].tolist(), strict=True):
            candidates.setdefault(c, set()).update(prefix_of[h])
    out: list[tuple[int, int, float]] = []
    for c in sorted(candidates):
        card = card_shingles[c]
        for i in sorted(candidates[c]):
            q = query_shingles[i]
            share = len(_positions(card, q)) / len(q)
            if share >= containment:
                out.append((i, c, share))
    return sorted(out)


MATCH_BATCH = 2_000_000  # card shingles looked up per numpy pass


def _matches(sorted_vocab: np.ndarray, card_shingles: Sequence[np.ndarray]):
    """Yield ``(card indices, vocab indices)`` of every card shingle found in ``sorted_vocab``,
    a batch of cards at a time (one ``searchsorted`` per batch instead of one per card)."""
    if not len(sorted_vocab):
        return
    start = 0
    while start < len(card_shingles):
        end, size = start, 0
        while end < len(card_shingles) and (size < MATCH_BATCH or end == start):
            size += len(card_shingles[end])
            end += 1
        lengths = [len(card_shingles[c]) for c in range(start, end)]
        if size:
            flat = np.concatenate(card_shingles[start:end])
            owner = np.repeat(np.arange(start, end), lengths)
            pos = np.minimum(np.searchsorted(sorted_vocab, flat), len(sorted_vocab) - 1)
            hit = sorted_vocab[pos] == flat
            yield owner[hit], pos[hit]
        start = end


def _positions(sorted_haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Indices into ``sorted_haystack`` (sorted, distinct) of the ``needles`` it holds."""
    if not len(sorted_haystack) or not len(needles):
        return np.zeros(0, dtype=np.int64)
    pos = np.searchsorted(sorted_haystack, needles)
    pos = np.minimum(pos, len(sorted_haystack) - 1)
    return pos[sorted_haystack[pos] == needles]


LEAK_CARDS_LISTED = 20


def leakage_findings(
    *,
    cases: Sequence[Case],
    card_ids: Sequence[str],
    leaks: Sequence[tuple[int, int, float]],
) -> list[Finding]:
    """One finding per leaking case: medium when a card it leaks into is gold (lexical retrieval
    is flattered), low when none is (an unlabelled answer, or a copied distractor). The cards are
    listed most contained first (at most ``LEAK_CARDS_LISTED``; ``data.n_cards`` counts all)."""
    per_case: dict[int, list[tuple[float, str]]] = {}
    for i, c, share in leaks:
        per_case.setdefault(i, []).append((share, card_ids[c]))
    out = []
    for i, found in sorted(per_case.items()):
        case = cases[i]
        found.sort(key=lambda item: (-item[0], item[1]))
        gold = [card for _, card in found if card in case.gold]
        top_share, top_card = found[0]
        shown = [card for _, card in found[:LEAK_CARDS_LISTED]]
        named = gold[0] if gold else top_card
        share = next(s for s, card in found if card == named)
        how = "verbatim" if share >= 1.0 else f"near-verbatim ({share:.0%} of its word n-grams)"
        others = f" (and {len(found) - 1} more card{'s' if len(found) > 2 else ''})" if len(found) > 1 else ""
        if gold:
            reason = f"the query appears {how} in its gold card {named}{others}: lexical retrieval is flattered"
        else:
            reason = (f"the query appears {how} in card {named}{others}, which is not gold: an unlabelled "
                      "answer, or a copied distractor?")
        out.append(Finding(kind="query_leakage", severity="medium" if gold else "low", cases=(case.id,),
                           cards=tuple(sorted(set(shown) | set(gold[:LEAK_CARDS_LISTED]))), reason=reason,
                           data={"containment": round(top_share, 4), "gold": bool(gold), "n_cards": len(found)}))
    return out


def query_groups(
    *,
    cases: Sequence[Case],
    normalised: Sequence[str],
    char_shingles: Sequence[np.ndarray],
    threshold: float,
    num_perm: int,
    seed: int,
) -> list[Finding]:
    """Duplicate and near-duplicate queries (exact after normalisation, or MinHash over character
    n-grams ≥ ``threshold``), grouped; a group that spans splits is ``split_query_overlap``."""
    pairs: list[tuple[int, int, float]] = []
    first: dict[str, int] = {}
    for i, text in enumerate(normalised):
        if text in first:
            pairs.append((first[text], i, 1.0))
        else:
            first[text] = i
    sigs = signatures(char_shingles, num_perm=num_perm, seed=seed)
    pairs.extend(similar_pairs(sigs, threshold=threshold, num_perm=num_perm))
    out = []
    for members in components(len(cases), pairs=pairs):
        ids = tuple(sorted(cases[i].id for i in members))
        splits = sorted({s for s in (split_of(cases[i]) for i in members) if s is not None})
        same_text = len({normalised[i] for i in members}) == 1
        what = "the same query" if same_text else "near-duplicate queries"
        if len(splits) > 1:
            out.append(Finding(kind="split_query_overlap", severity="high", cases=ids,
                               reason=f"{what} in splits {', '.join(splits)}: the held-out measure "
                                      "is not held out",
                               data={"splits": splits}))
        elif same_text:
            out.append(Finding(kind="duplicate_query", severity="medium", cases=ids,
                               reason=f"{len(ids)} cases ask {what}: one question counts {len(ids)} times"))
        else:
            out.append(Finding(kind="near_duplicate_query", severity="low", cases=ids,
                               reason=f"{len(ids)} cases ask {what} (character n-gram Jaccard ≥ {threshold:g})"))
    return out


def split_shared_gold(*, cases: Sequence[Case], group_of: Mapping[str, str]) -> list[Finding]:
    """Cases of different splits whose gold falls in one card group (a card and its
    near-duplicates): tuning on one split has seen the other's answers."""
    by_group: dict[str, dict[str, list[Case]]] = {}
    for case in cases:
        split = split_of(case)
        if split is None:
            continue
        for group in dict.fromkeys(group_of.get(g, g) for g in case.gold):
            by_group.setdefault(group, {}).setdefault(split, []).append(case)
    out = []
    for group, splits in sorted(by_group.items()):
        if len(splits) < 2:
            continue
        members = [c for split_cases in splits.values() for c in split_cases]
        cards = sorted({g for c in members for g in c.gold if group_of.get(g, g) == group})
        ids = tuple(sorted({c.id for c in members}))
        names = sorted(splits)
        out.append(Finding(kind="split_shared_gold", severity="high", cases=ids, cards=tuple(cards),
                           reason=f"splits {', '.join(names)} share the gold card group of {group}: "
                                  "group by source card before splitting",
                           data={"splits": {s: sorted(c.id for c in splits[s]) for s in names},
                                 "group": group}))
    return out
