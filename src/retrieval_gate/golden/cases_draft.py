"""``retrieval-gate cases draft``'s orchestrator (docs/golden-set.md): a query log → the drafted
queries with their pooled candidates. Read and clean the log (streamed; exact duplicates
collapse as it is read, so memory grows with the distinct queries, not the lines), pre-sample,
embed the distinct queries once with the suite's model (through the embedding cache), collapse
near-duplicates, find intents, size and allocate from the power formula, draw, and pool each
drawn query's candidates from every pool retriever. The pure steps are ``golden.log_clean`` and
``golden.draw``; the embedder and the store are handed in by tests or built from the suite."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.audit.coverage import best_case_mde
from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import UsageError
from retrieval_gate.evaluation.chunks import suite_chunks
from retrieval_gate.evaluation.dense_parts import EvalProgress, Silent, VectorStore
from retrieval_gate.evaluation.pipeline import Pipeline
from retrieval_gate.files import confined, from_root, repository_root
from retrieval_gate.golden import draw as core
from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool
from retrieval_gate.golden.draft_folder import DRAFT_FILES, write_draft_files
from retrieval_gate.golden.label_page import apply_command
from retrieval_gate.golden.log_clean import MAX_QUERY_CHARS, CleanReport, RawQuery, clean_log
from retrieval_gate.golden.log_reader import iter_log
from retrieval_gate.golden.masking import DEFAULT_REGION, coverage_note
from retrieval_gate.golden.masking_names import draft_masker
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb
from retrieval_gate.load.textfile import raise_if
from retrieval_gate.render.escape import md_text
from retrieval_gate.retrieve.custom import RunRetriever
from retrieval_gate.retrieve.spec import RetrieverSpec, parse_retriever, parse_retriever_list
from retrieval_gate.score.kb_manifest import kb_manifest
from retrieval_gate.settings import SuiteConfig

DEFAULT_POOL = ("dense", "bm25")
MAX_POOL_DEPTH = 1000


@dataclass(frozen=True)
class DraftOptions:
    log: Path
    query_column: str = "query"
    keep_pii: bool = False
    detect: float = 0.05
    per_intent: bool = False
    size: int | None = None
    seed: int = 0
    depth: int = 10
    pool: str | None = None
    region: str = DEFAULT_REGION  # the region national phone numbers are read in (--region)
    slice_columns: tuple[str, ...] = ()  # --slice-column: kept beside intent and locale
    max_chars: int = MAX_QUERY_CHARS


@dataclass
class DraftResult:
    entries: list[DraftEntry]
    clean: CleanReport
    distinct: int
    presampled: int
    near: int
    excluded: int
    typos: int
    intents: list[core.Intent]
    drawn: Counter
    existing: Counter
    needed: int
    minimum: int
    systems: list[str]
    depths: dict[str, int] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    graded: bool = False
    sized: bool = False  # --size N gave the size (not --detect)
    kb: str = ""  # the KB and cases paths the draft was made with (the page's `label apply` hint)
    cases: str = ""
    coverage: str = ""  # what the masking does not cover (names and addresses without Presidio)


def pool_specs(suite_config: SuiteConfig, *, pool: str | None, depth: int = 10) -> list[tuple[RetrieverSpec, int]]:
    """``--pool`` as given (``dense:20,bm25:20,hybrid:10``: any retriever spec the suite takes,
    each with its own depth, ``--depth`` where none is said), else dense + BM25 + the suite's own
    retrievers when they are others, each at ``depth``."""
    if pool is not None:
        items = [(parse_retriever(spec), d if d is not None else depth) for spec, d in map(split_depth, pool.split(","))
                 if spec.strip()]
    else:
        items = [(s, depth) for s in dict.fromkeys([*parse_retriever_list(",".join(DEFAULT_POOL)),
                                                     *suite_config.retrievers])]
    names = [s.name for s, _ in items]
    if len(set(names)) != len(names):
        raise UsageError(f"--pool {pool!r}: retriever {next(n for n in names if names.count(n) > 1)!r} is listed twice")
    if len(set(names)) < 2:
        raise UsageError(f"--pool {pool!r}: a pool needs at least two different retrievers (e.g. dense,bm25)")
    return items


_DEPTH_RE = re.compile(r"(?s)(.*\S)\s*:\s*(\d+)\s*")


def split_depth(item: str) -> tuple[str, int | None]:
    """``"dense:20"`` → ``("dense", 20)``; ``"bm25"`` → ``("bm25", None)``. A trailing ``:N``
    is a depth except the port of a URL without a path (``http://host:8080`` stays whole:
    write ``http://host:8080/search:20``)."""
    match = _DEPTH_RE.fullmatch(item)
    if match is None:
        return item, None
    base, number = match.group(1), int(match.group(2))
    if base.lower().startswith(("http://", "https://")) and "/" not in base.split("://", 1)[1]:
        return item, None  # ``http://host:8080``: a port
    if not 1 <= number <= MAX_POOL_DEPTH:
        raise UsageError(f"--pool {item!r}: a depth is 1 to {MAX_POOL_DEPTH}")
    return base, number


def pool_heading(entries: Iterable[DraftEntry]) -> str:
    """``label apply``'s heading of the pool figures: relative to the pool, which it names."""
    pools = {(tuple(e.pool.systems), e.pool.depth, tuple(sorted((e.pool.depths or {}).items())))
             for e in entries if e.pool}
    named = "; ".join(pool_text(list(systems), depth=depth, depths=dict(depths)) for systems, depth, depths in
                      sorted(pools)) or "no pool recorded"
    return (f"relevant cards per pool system (relative to the pool — {named}: a relevant card no pooled "
            "system ranked is not counted):")


def pool_text(systems: Sequence[str], *, depth: int, depths: Mapping[str, int] | None = None) -> str:
    """``dense (top 20), bm25 (top 10)``: the systems and how deep each was pooled."""
    depths = depths or {}
    return ", ".join(f"{s} (top {depths.get(s, depth)})" for s in systems)


def draft_cases(*, suite_config: SuiteConfig, suite: str, options: DraftOptions, embedder: Embedder | None = None,
                store: VectorStore | None = None, progress: EvalProgress | None = None) -> DraftResult:
    progress = progress or Silent()
    if suite_config.kb is None:
        raise UsageError("cases draft needs --kb (or a suite that names one)")
    pooled = pool_specs(suite_config, pool=options.pool, depth=options.depth)
    specs = [s for s, _ in pooled]
    depth_of = {s.name: d for s, d in pooled}
    problems: list = []
    rows = (RawQuery(line=n, text=t, count=c, fields=f)
            for n, t, c, f in iter_log(options.log, query_column=options.query_column, problems=problems))
    masker = draft_masker(options.region, personal=not options.keep_pii)
    distinct, report = clean_log(rows, keep_pii=options.keep_pii, masker=masker, slice_columns=options.slice_columns,
                                 max_chars=options.max_chars)
    raise_if(problems)
    if not distinct:
        raise UsageError(f"{options.log}: no query left after cleaning ({report.read:,} lines read)")
    sample = core.presample(distinct, seed=options.seed)
    kb = load_kb(Path(suite_config.kb))
    cases_path = Path(suite_config.cases) if suite_config.cases else None
    existing_cases = load_cases(cases_path).cases if cases_path is not None and cases_path.exists() else ()
    chunks = suite_chunks(kb, chunking=suite_config.chunking, model=suite_config.model)
    with Pipeline(suite_config=suite_config, suite=suite, specs=specs, embedder=embedder, store=store,
                  progress=progress, dense=True) as pipe:
        builder = pipe.build(kb=kb, chunks=chunks)
        dense = pipe.dense
        assert dense is not None and dense.embedder is not None
        vectors = _unit(dense.embedder.embed_queries([q.text for q in sample]))
        leaders, lead_vectors, near = core.collapse_near(sample, vectors=vectors)
        leaders, lead_vectors, typos = core.collapse_typos(leaders, vectors=lead_vectors)
        excluded = [False] * len(leaders)
        labels, intents = core.cluster_intents(leaders, vectors=lead_vectors, seed=options.seed)
        existing: Counter = Counter()
        if existing_cases:
            known = _unit(dense.embedder.embed_queries([c.query for c in existing_cases]))
            sims = lead_vectors @ known.T
            excluded = list(sims.max(axis=1) >= core.NEAR_COSINE)
            nearest = sims.argmax(axis=0)  # a case without an intent counts towards its nearest query's
            existing.update(c.tags.get("intent") or labels[int(nearest[j])] for j, c in enumerate(existing_cases))
        minimum = core.min_per_intent(suite_config.gate.alpha)
        needed = options.size if options.size is not None else core.cases_for(options.detect,
                                                                              alpha=suite_config.gate.alpha)
        # what each intent can still give: its queries less those the golden set already asks
        drawable = Counter(label for label, out in zip(labels, excluded, strict=True) if not out)
        quota = core.allocate([replace(i, queries=drawable[i.name]) for i in intents], total=needed,
                              existing=existing, minimum=minimum,
                              per_intent=needed if options.per_intent and options.size is None else None)
        picked = core.draw(leaders, labels=labels, quota=quota, seed=options.seed, excluded=excluded)
        queries = [leaders[i].text for i in picked]
        ranked = {s.name: [r.ids for r in _search(builder.build(s), queries, depth_of[s.name])] for s in specs}
    manifest = kb_manifest(kb.cards)
    entries = []
    for j, i in enumerate(picked):
        q = leaders[i]
        cid = core.case_id(q.text)
        order, found = core.pool({name: lists[j][:depth_of[name]] for name, lists in ranked.items()},
                                 depth=max(depth_of.values()), case=cid, seed=options.seed)
        entries.append(DraftEntry(id=cid, query=q.text, intent=labels[i], count=q.count,
                                  fields={k: v for k, v in q.fields.items() if k != "intent"},
                                  candidates=[Candidate(card=c, sha=manifest[c].sha) for c in order if c in manifest],
                                  pool=Pool(depth=max(depth_of.values()), systems=[s.name for s in specs],
                                            depths=depth_of if len(set(depth_of.values())) > 1 else None,
                                            found=found),
                                  log=options.log.name, detect=options.detect))
    texts: dict[str, list[tuple[str, str]]] = {}
    for card in kb.cards:
        texts.setdefault(card.card_id, []).append((card.id, card.text))
    return DraftResult(entries=entries, clean=report, distinct=len(distinct), presampled=len(sample), near=near,
                       typos=typos, excluded=sum(excluded), intents=intents, drawn=Counter(labels[i] for i in picked),
                       existing=existing, needed=needed, minimum=minimum, systems=[s.name for s in specs],
                       depths=depth_of,
                       titles={c: m.title for c, m in manifest.items()},
                       texts={c: "\n\n".join(t for _, t in sorted(parts)) for c, parts in texts.items()},
                       graded=any(c.grades and max(c.grades.values()) > 1 for c in existing_cases),
                       sized=options.size is not None, kb=str(suite_config.kb),
                       cases=str(suite_config.cases or "cases.jsonl"), coverage=coverage_note(masker))


def _search(retriever: Any, queries: list[str], depth: int) -> list[Any]:
    """Each drafted query's ranking: a ``run:`` file answers by the drafted case id (``case_id``
    of the query, so a run can be made for the drafted queries), every other retriever by text."""
    if isinstance(retriever, RunRetriever):
        return retriever.search_cases([core.case_id(q) for q in queries], depth)
    return retriever.search(queries, depth, [None] * len(queries))


def _unit(vectors: Any) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


LONG_HINT_SHARE = 0.05  # the share of the distinct queries the long-query cut may drop before a hint


def long_lines(clean: CleanReport, *, distinct: int) -> list[str]:
    """The first lines of the output: what the long-query cut (``--max-chars``) dropped, and a
    hint when it is more than ``LONG_HINT_SHARE`` of the distinct queries."""
    why = f"over {clean.max_chars} characters"
    lines = clean.dropped.get(why, 0)
    share = clean.too_long / (distinct + clean.too_long) if distinct + clean.too_long else 0.0
    out = [f"- long queries dropped (--max-chars {clean.max_chars}): {clean.too_long:,} distinct ({lines:,} lines), "
           f"{share:.1%} of the distinct queries"]
    if share > LONG_HINT_SHARE:
        out.append(f"- hint: more than {LONG_HINT_SHARE:.0%} of the distinct queries were cut as too long: if they are "
                   f"real questions, draft again with a larger --max-chars (e.g. --max-chars {clean.max_chars * 4})")
    return out


def summary_lines(result: DraftResult, *, detect: float) -> list[str]:
    """draft.md's Markdown: what the long-query cut dropped first, then what cleaning did, the
    intents, what the drawn set can detect — its power over distinct information needs."""
    c = result.clean
    dropped = ", ".join(f"{n:,} {why}" for why, n in sorted(c.dropped.items())) or "none"
    total = len(result.entries) + sum(result.existing.values())
    mde = best_case_mde(total) if total else 1.0
    depth = max(result.depths.values(), default=10)
    lines = ["# Draft of a golden set", "",
             *long_lines(c, distinct=result.distinct),
             f"- log lines read: {c.read:,}; dropped: {dropped}",
             f"- distinct queries: {result.distinct:,} ({c.duplicates:,} exact duplicates collapsed)",
             f"- embedded: {result.presampled:,}" + (" (a traffic-weighted pre-sample)" if result.presampled <
                                                     result.distinct else ""),
             f"- near-duplicates collapsed: {result.near:,} (cosine ≥ {core.NEAR_COSINE}) and typo-level variants "
             f"{result.typos:,} (character 3-gram cosine ≥ {core.TYPO_COSINE}): the power below counts distinct "
             "information needs",
             f"- near-duplicates of existing cases left out: {result.excluded:,}",
             *masked_lines(result),
             f"- pool: {pool_text(result.systems, depth=depth, depths=result.depths)}"
             " — every coverage figure is relative to this pool: a relevant card none of these systems ranks "
             "that deep is never judged",
             (f"- cases asked for (--size): {result.needed:,}" if result.sized else
              f"- cases needed for a drop of {detect:g} in hit@k at 80 % power: {result.needed:,}")
             + f"; minimum per intent {result.minimum}",
             f"- drawn: {len(result.entries):,} distinct information needs; with the "
             f"{sum(result.existing.values()):,} existing cases the smallest detectable drop overall is {mde:.3f}", "",
             "| intent | traffic | queries | existing | drawn | MDE | representative |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for i in result.intents:
        n = result.drawn[i.name] + result.existing[i.name]
        cell = f"{best_case_mde(n):.3f}" if n else "—"
        short = " (short)" if not n or best_case_mde(n) > detect else ""
        lines.append(f"| {_md(i.name)} | {i.traffic:,} | {i.queries:,} | {result.existing[i.name]:,} | "
                     f"{result.drawn[i.name]:,} | {cell}{short} | {_md(i.representative)} |")
    return [*lines, ""]


def masked_lines(result: DraftResult) -> list[str]:
    """draft.md's masking lines: the masks by kind (``<kind>``, as they stand in the text), what
    the masking does not cover, the log columns dropped (not on the allow-list) with the rows
    that had them."""
    c = result.clean
    # the kinds are the masker's own names (golden.masking.KINDS), shown as they stand in the text
    masked = ", ".join(f"{n:,} `<{kind}>`" for kind, n in sorted(c.masked.items())) or "none"
    shown = sorted(c.dropped_columns.items())[:MAX_COLUMNS_SHOWN]
    dropped = ", ".join(f"{_md(name)} ({n:,} rows)" for name, n in shown)
    if len(c.dropped_columns) > MAX_COLUMNS_SHOWN:
        dropped += f" and {len(c.dropped_columns) - MAX_COLUMNS_SHOWN:,} more"
    lines = [f"- secrets and personal data masked: {masked}"]
    if result.coverage:
        lines.append(f"- {_md(result.coverage)}")
    lines.append(f"- log columns dropped (kept: count, intent, locale and --slice-column): {dropped or 'none'}")
    return lines


MAX_COLUMNS_SHOWN = 20


def _md(text: str) -> str:
    """Log text in draft.md: the project's one Markdown escaper (``render.escape.md_text``)."""
    return str(md_text(text))


def write_draft_folder(out: Path, *, result: DraftResult, detect: float, labeller: str = "") -> list[Path]:
    """DIR/draft.jsonl, DIR/label.html and DIR/draft.md (``write_draft_files``); the paths written."""
    root = repository_root(out)
    apply = apply_command(draft=from_root(confined(out / DRAFT_FILES[0]), root),
                          cases=from_root(Path(result.cases or "cases.jsonl"), root),
                          kb=from_root(Path(result.kb), root)) if result.kb else ""
    return write_draft_files(out, entries=result.entries, titles=result.titles, texts=result.texts,
                             graded=result.graded, labeller=labeller, summary=summary_lines(result, detect=detect),
                             apply=apply, traffic={i.name: i.traffic for i in result.intents})
