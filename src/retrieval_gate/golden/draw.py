"""From the distinct queries of a log to the drawn ones (docs/golden-set.md). Pure: the vectors
come from the shell's embedder.

- **Pre-sample** (``presample``): a log with more than ``MAX_EMBEDDED`` distinct queries is cut
  to that many before anything is embedded, drawn without replacement with probability
  proportional to traffic (seeded). The rare queries it leaves out could not have been drawn
  often anyway; the traffic shares of the intents are then estimated from the sample.
- **Near-duplicates** (``collapse_near``): queries whose embeddings' cosine is at least
  ``NEAR_COSINE`` are one query; the most frequent wording leads and the counts add up.
- **Typo-level variants** (``collapse_typos``): what the embeddings leave apart (a one-character
  typo can move the cosine below ``NEAR_COSINE``) but the characters say is one query: the
  cosine of character 3-gram TF-IDF vectors at least ``TYPO_COSINE``; merged the same way.
- **Intents** (``cluster_intents``): the log's ``intent`` column when it has one, else
  k-means (scikit-learn) over the embeddings with ``k = clamp(round(√(n/2)), 1, MAX_INTENTS)``,
  each cluster named by its three most distinctive terms (class-based TF-IDF, ``intent_names``)
  and a representative query (the one nearest the centre).
- **Size** (``allocate``): the cases needed for the drop to detect come from the project's own
  power formula (``audit.coverage.required_n``); they are shared across intents by traffic
  (largest remainder) with at least ``min_changed`` (the fewest cases with which the gate's sign
  test can reject at all: 6 at α = 0.05) per intent — fewer is an inventory, not power. Cases the
  golden set already holds count towards their intent.
- **Draw** (``draw``): within each intent, traffic-weighted without replacement, seeded.
- **Pool** (``pool``): the union of each system's top cards, in an order (a hash of the case and
  the card) that says nothing of which system found a card or at what rank.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from retrieval_gate.audit.coverage import required_n
from retrieval_gate.golden.log_clean import LogQuery
from retrieval_gate.stats.power import min_changed

NEAR_COSINE = 0.92
# Typo-level variants (``collapse_typos``): the cosine of character 3-gram TF-IDF vectors (words
# padded, scikit-learn's ``char_wb``) at which two wordings are one query. Measured by
# benchmarks/bench_typo_collapse.py (docs/golden-set.md): one-character typos of real queries
# reach it, distinct real queries of the same collection do not.
TYPO_COSINE = 0.80
_TYPO_BLOCK = 256
MAX_EMBEDDED = 20_000
MAX_INTENTS = 20
NO_INTENT = "(none)"
_WORD_RE = re.compile(r"[^\W\d_][\w'-]+", re.UNICODE)
# Function words that never name an intent, in the languages of the examples and the design documents
# (English, Portuguese, Spanish); what is common to every intent in any language is down-weighted
# by the class-based TF-IDF of ``intent_names`` anyway.
STOP = frozenset((
    # English
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "me", "my", "of", "on", "or", "the", "to", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your", "not", "no", "this", "that", "there", "their", "they", "we", "our",
    # Portuguese
    "o", "os", "as", "um", "uma", "uns", "umas", "de", "do", "da", "dos", "das", "em", "no", "na", "nos",
    "nas", "ao", "aos", "à", "às", "por", "pelo", "pela", "para", "pra", "com", "sem", "e", "ou", "que",
    "qual", "quais", "como", "quando", "onde", "porque", "porquê", "quem", "se", "não", "sim", "é", "são",
    "eu", "meu", "minha", "meus", "minhas", "seu", "sua", "seus", "suas", "você", "vocês", "ele", "ela",
    "isso", "isto", "esse", "essa", "este", "esta", "mais", "muito", "já", "posso", "pode", "tem", "ter",
    # Spanish
    "el", "la", "los", "las", "un", "una", "del", "al", "en", "y", "o", "con", "sin", "por", "para", "cómo",
    "qué", "cuál", "cuando", "cuándo", "dónde", "mi", "mis", "tu", "su", "sus", "es", "son", "puedo",
    "puede", "lo", "le", "se", "yo", "usted", "este", "esta", "más", "muy",
))


def min_per_intent(alpha: float = 0.05) -> int:
    """The documented minimum per intent: the fewest cases the sign test can reject with."""
    return min_changed(alpha)


def presample(queries: Sequence[LogQuery], *, limit: int = MAX_EMBEDDED, seed: int) -> list[LogQuery]:
    """At most ``limit`` queries, traffic-weighted without replacement, in their input order."""
    if len(queries) <= limit:
        return list(queries)
    rng = np.random.default_rng(seed)
    counts = np.array([q.count for q in queries], dtype=np.float64)
    keys = rng.random(len(queries)) ** (1.0 / counts)  # Efraimidis–Spirakis weighted sampling
    chosen = np.sort(np.argsort(-keys, kind="stable")[:limit])
    return [queries[i] for i in chosen]


def collapse_near(queries: Sequence[LogQuery], *, vectors: np.ndarray,
                  threshold: float = NEAR_COSINE) -> tuple[list[LogQuery], np.ndarray, int]:
    """Near-duplicates merged (cosine ≥ ``threshold`` with a more frequent leader): the leaders,
    their vectors and how many queries were merged into them. Vectors are unit-normalised."""
    vecs = np.asarray(vectors, dtype=np.float32)
    out, kept, merged = _merge(queries, near_of=lambda i, free: np.flatnonzero((vecs @ vecs[i] >= threshold) & free))
    return out, vecs[kept] if kept else vecs[:0], merged


def collapse_typos(queries: Sequence[LogQuery], *, vectors: np.ndarray,
                   threshold: float = TYPO_COSINE) -> tuple[list[LogQuery], np.ndarray, int]:
    """Typo-level variants merged as ``collapse_near`` merges near-duplicates: two wordings whose
    character 3-gram TF-IDF vectors (scikit-learn, ``char_wb``) have a cosine of at least
    ``threshold`` are one query, led by the more frequent one."""
    if len(queries) < 2:
        return list(queries), np.asarray(vectors, dtype=np.float32), 0
    from sklearn.feature_extraction.text import TfidfVectorizer

    grams = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True, sublinear_tf=True,
                            dtype=np.float32).fit_transform([q.text for q in queries]).tocsr()
    neighbours: list[np.ndarray] = []
    for start in range(0, len(queries), _TYPO_BLOCK):  # the similarities, a block of rows at a time
        block = (grams[start:start + _TYPO_BLOCK] @ grams.T).tocsr()
        for row in range(block.shape[0]):
            lo, hi = block.indptr[row], block.indptr[row + 1]
            neighbours.append(block.indices[lo:hi][block.data[lo:hi] >= threshold])
    out, kept, merged = _merge(queries, near_of=lambda i, free: neighbours[i][free[neighbours[i]]])
    vecs = np.asarray(vectors, dtype=np.float32)
    return out, vecs[kept], merged


def _merge(queries: Sequence[LogQuery], *, near_of: Callable[[int, np.ndarray], np.ndarray],
           ) -> tuple[list[LogQuery], list[int], int]:
    """One merge of both collapses: each query in traffic order (then first seen), not merged yet,
    leads the queries ``near_of(i, free)`` finds among those still free; the leaders (their counts
    and lines summed), their indices and how many queries were merged into them."""
    order = sorted(range(len(queries)), key=lambda i: (-queries[i].count, queries[i].first_line))
    merged_into = np.full(len(queries), -1)
    out: list[LogQuery] = []
    kept: list[int] = []
    merged = 0
    for i in order:
        if merged_into[i] >= 0:
            continue
        near = near_of(i, merged_into < 0)
        merged_into[near] = i
        merged_into[i] = i
        members = [int(j) for j in near if j != i]
        merged += len(members)
        lead = queries[i]
        out.append(replace(lead, count=lead.count + sum(queries[j].count for j in members),
                           lines=lead.lines + sum(queries[j].lines for j in members)))
        kept.append(i)
    return out, kept, merged


def terms(text: str) -> list[str]:
    return [w for w in (m.group(0).casefold() for m in _WORD_RE.finditer(text)) if w not in STOP]


@dataclass(frozen=True)
class Intent:
    name: str
    representative: str
    traffic: int
    queries: int


def cluster_intents(queries: Sequence[LogQuery], *, vectors: np.ndarray, seed: int) -> tuple[list[str], list[Intent]]:
    """Each query's intent and the intents (by traffic, descending): the ``intent`` field when
    some query has one, else k-means clusters named by their terms."""
    if any("intent" in q.fields for q in queries):
        labels = [q.fields.get("intent", NO_INTENT) for q in queries]
        reps = {}
        for q, label in sorted(zip(queries, labels, strict=True), key=lambda p: -p[0].count):
            reps.setdefault(label, q.text)
    else:
        labels, reps = _kmeans(queries, vectors, seed=seed)
    traffic: Counter = Counter()
    sizes: Counter = Counter()
    for q, label in zip(queries, labels, strict=True):
        traffic[label] += q.count
        sizes[label] += 1
    intents = [Intent(name=n, representative=reps[n], traffic=traffic[n], queries=sizes[n])
               for n in sorted(traffic, key=lambda n: (-traffic[n], n))]
    return labels, intents


def _kmeans(queries: Sequence[LogQuery], vectors: np.ndarray, *, seed: int) -> tuple[list[str], dict[str, str]]:
    from sklearn.cluster import KMeans

    k = max(1, min(MAX_INTENTS, round(math.sqrt(len(queries) / 2)), len(queries)))
    if k == 1:
        assignment = np.zeros(len(queries), dtype=int)
        centres = vectors.mean(axis=0, keepdims=True)
    else:
        model = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(vectors)
        assignment, centres = model.labels_, model.cluster_centers_
    names: dict[int, str] = {}
    reps: dict[str, str] = {}
    clusters = [[i for i in range(len(queries)) if assignment[i] == c] for c in range(len(centres))]
    named = intent_names([[queries[i] for i in members] for members in clusters])
    for c, members in enumerate(clusters):
        if not members:
            continue
        name = " · ".join(named[c]) or "misc"
        while name in reps:
            name += f" ({c})"
        best = max(members, key=lambda i: (float(vectors[i] @ centres[c]), queries[i].count))
        names[c], reps[name] = name, queries[best].text
    return [names[int(a)] for a in assignment], reps


def intent_names(clusters: Sequence[Sequence[LogQuery]], *, top: int = 3) -> list[list[str]]:
    """Each cluster's ``top`` most distinctive terms, by class-based TF-IDF (Grootendorst's
    BERTopic): a term's weight in cluster c is ``tf(t, c) · log(1 + A / f(t))``, where ``tf`` is
    the traffic of c's queries holding t, ``f(t)`` its traffic in all clusters and ``A`` the mean
    traffic of terms per cluster; ties by the term. A word every intent uses weighs little."""
    tf: list[Counter] = []
    for members in clusters:
        words: Counter = Counter()
        for q in members:
            words.update({w: q.count for w in set(terms(q.text))})
        tf.append(words)
    overall: Counter = Counter()
    for words in tf:
        overall.update(words)
    filled = [sum(words.values()) for words in tf if words]
    mean = sum(filled) / len(filled) if filled else 0.0
    return [[w for w, _ in sorted(((w, n * math.log(1 + mean / overall[w])) for w, n in words.items()),
                                   key=lambda p: (-p[1], p[0]))[:top]] for words in tf]


def cases_for(drop: float, *, alpha: float = 0.05) -> int:
    """The cases needed to see a drop of ``drop`` in hit@k at 80 % power (``required_n``)."""
    needed = required_n(drop, alpha=alpha)
    if needed is None:
        raise ValueError(f"no golden set of up to ten million cases detects a drop of {drop}")
    return needed


def allocate(intents: Sequence[Intent], *, total: int, existing: Mapping[str, int], minimum: int,
             per_intent: int | None = None) -> dict[str, int]:
    """New cases to draw per intent: ``total`` shared by traffic (largest remainder; or
    ``per_intent`` each), at least ``minimum`` per intent, less what the golden set already
    holds, never more than the intent's queries. With ``total``, what an intent cannot supply of
    its share (too few queries) is shared again by traffic among the intents that still have
    queries, until it is placed or no intent has a query left."""
    cap = {i.name: i.queries for i in intents}
    have = {i.name: existing.get(i.name, 0) for i in intents}
    want = ({i.name: per_intent for i in intents} if per_intent is not None
            else _by_traffic(total, intents))
    quota = {n: max(0, min(cap[n], max(want[n], minimum) - have[n])) for n in want}
    if per_intent is None:
        short = sum(max(0, want[n] - have[n] - quota[n]) for n in want)
        while short > 0:
            room = [i for i in intents if quota[i.name] < cap[i.name]]
            placed = 0
            for n, extra in _by_traffic(short, room).items():
                add = min(extra, cap[n] - quota[n])
                quota[n] += add
                placed += add
            if not placed:  # no intent has a query left
                break
            short -= placed
    return quota


def _by_traffic(total: int, intents: Sequence[Intent]) -> dict[str, int]:
    """``total`` shared by traffic, largest remainder (ties by name): the shares sum to ``total``."""
    traffic = sum(i.traffic for i in intents) or 1
    raw = {i.name: total * i.traffic / traffic for i in intents}
    share = {n: math.floor(v) for n, v in raw.items()}
    for n in sorted(raw, key=lambda n: (-(raw[n] - share[n]), n))[:max(0, total - sum(share.values()))]:
        share[n] += 1
    return share


def draw(queries: Sequence[LogQuery], *, labels: Sequence[str], quota: Mapping[str, int], seed: int,
         excluded: Sequence[bool] = ()) -> list[int]:
    """Indices of the drawn queries: ``quota[intent]`` per intent, traffic-weighted without
    replacement (seeded per intent), in intent then traffic order."""
    chosen: list[int] = []
    for name in sorted(quota):
        members = [i for i, label in enumerate(labels) if label == name and not (excluded and excluded[i])]
        members.sort(key=lambda i: queries[i].text)
        take = min(quota[name], len(members))
        if not take:
            continue
        rng = np.random.default_rng([seed, int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)])
        counts = np.array([queries[i].count for i in members], dtype=np.float64)
        keys = rng.random(len(members)) ** (1.0 / counts)
        picked = [members[j] for j in np.argsort(-keys, kind="stable")[:take]]
        chosen.extend(sorted(picked, key=lambda i: (-queries[i].count, queries[i].text)))
    return chosen


def pool(ranked: Mapping[str, Sequence[str]], *, depth: int, case: str,
         seed: int) -> tuple[list[str], dict[str, list[str]]]:
    """The union of each system's top ``depth`` cards, each once, in a hashed order; and, per
    card, the systems that found it (kept in the draft file, never shown on the page)."""
    found: dict[str, list[str]] = {}
    for system in sorted(ranked):
        for card in list(dict.fromkeys(ranked[system]))[:depth]:
            found.setdefault(card, []).append(system)
    order = sorted(found, key=lambda c: hashlib.sha256(f"{seed}\x1f{case}\x1f{c}".encode()).hexdigest())
    return order, {c: found[c] for c in sorted(found)}


def case_id(text: str) -> str:
    """A drafted case's id: ``log-`` and 10 hex digits of the normalised query's hash."""
    return "log-" + hashlib.sha256(" ".join(text.casefold().split()).encode()).hexdigest()[:10]
