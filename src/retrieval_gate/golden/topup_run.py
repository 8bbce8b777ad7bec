"""``retrieval-gate label top-up``'s orchestrator (docs/golden-set.md "Top up"): results files of
the systems being compared, the golden set, its "not relevant" sidecar and the KB → a draft
folder (``draft.jsonl``, ``label.html``, ``draft.md``, as ``cases draft`` writes it) holding, per
case, the cards of each run's top k that no judgement covers; ``label apply --draft`` adds the
labels to the cases the golden set already holds. The rules are ``golden.topup``."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_gate.artifacts.label_sidecar import current_not_relevant, not_relevant_path, read_not_relevant
from retrieval_gate.artifacts.run_files import read_results
from retrieval_gate.errors import UsageError
from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool
from retrieval_gate.golden.draft_folder import DRAFT_FILES, draft_folder_texts, read_draft, write_draft_files
from retrieval_gate.golden.labels_file import read_stale_pairs
from retrieval_gate.golden.topup import RunTop, TopUp, judged_pairs, orphaned_cases, stale_pairs, unjudged_pool
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb
from retrieval_gate.models import judgements
from retrieval_gate.score.kb_manifest import KbCard, kb_manifest
from retrieval_gate.score.results import Results

DEFAULT_DEPTH = 10
ORPHAN_POOL = "bm25"  # what pools an orphaned case no results file ranked


@dataclass(frozen=True)
class TopUpOptions:
    results: Sequence[Path] = ()
    loaded: Sequence[tuple[str, Results]] = ()  # runs already in memory (the action's): (where from, results)
    depth: int = DEFAULT_DEPTH
    orphaned: bool = False
    stale: Sequence[Path] = ()
    seed: int = 0
    # only these (case, card) pairs, in this order (``compare.decisive``: the cards that decide a
    # comparison's verdict, heaviest first); None: every unjudged card of the runs' tops
    decisive: Sequence[tuple[str, str]] | None = None


@dataclass
class TopUpResult:
    entries: list[DraftEntry]
    top_up: TopUp
    systems: list[str]
    depth: int
    cases: int
    orphaned: dict[str, list[str]] = field(default_factory=dict)
    stale: int = 0
    shallow: list[tuple[str, int]] = field(default_factory=list)  # (system, cards kept) when fewer than depth
    unknown: int = 0  # cases the runs rank that the golden set does not hold
    titles: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    graded: bool = False
    decisive: bool = False  # only the cards that decide a comparison (TopUpOptions.decisive)
    kb_path: Path | None = None  # the KB and golden set topped up: the `label apply` command names them
    cases_path: Path | None = None

    @property
    def cards(self) -> int:
        return self.top_up.total


def _run_name(results_config: dict, path: Path, taken: set[str]) -> str:
    name = results_config.get("retriever") if isinstance(results_config.get("retriever"), str) else path.stem
    name = str(name)
    if name in taken:
        name = f"{name} ({path.as_posix()})"
    taken.add(name)
    return name


def top_up(*, kb: Path, cases: Path, options: TopUpOptions) -> TopUpResult:
    """The top-up of the golden set at ``cases`` for the runs of ``options.results`` (see the module)."""
    if not options.results and not options.loaded and not options.orphaned and not options.stale:
        raise UsageError("label top-up needs --results R.json (one per system compared), --orphaned or --stale FILE")
    case_set = load_cases(cases)
    if case_set.format == "qrels":
        raise UsageError(f"{cases}: a bare qrels file holds no query text; give --cases a JSONL file or a BEIR folder")
    knowledge = load_kb(kb)
    manifest = kb_manifest(knowledge.cards)
    gold = {c.id: judgements(c) for c in case_set.cases}
    # a "not relevant" entry of a card edited since is stale: it judges nothing, the card is offered again
    sidecar = current_not_relevant(read_not_relevant(not_relevant_path(cases)),
                                   sha_now={card: m.sha for card, m in manifest.items()})
    judged = judged_pairs(gold, ((case, card) for case, card, _ in sidecar))
    runs: list[RunTop] = []
    shallow: list[tuple[str, int]] = []
    taken: set[str] = set()
    unknown: set[str] = set()
    for path, results in [*((p, read_results(p)) for p in options.results),
                          *((Path(where), r) for where, r in options.loaded)]:
        name = _run_name(results.config, path, taken)
        ranked = {c.id: c.retrieved for c in results.cases if c.status != "failed"}
        unknown.update(cid for cid in ranked if cid not in gold)
        kept = max((len(r) for r in ranked.values()), default=0)
        if kept < options.depth:
            shallow.append((name, kept))
        runs.append(RunTop(name=name, ranked=ranked))
    orphaned = orphaned_cases(gold, kb_cards=manifest) if options.orphaned else {}
    if orphaned:
        runs.append(_orphan_pool(knowledge, cases=[c for c in case_set.cases if c.id in orphaned], depth=options.depth,
                                 taken=taken))
    rows = [row for path in options.stale for row in read_stale_pairs(path)]
    stale = stale_pairs(rows, cases=gold, kb_cards=manifest)
    waiting = _drafted_waiting(options.stale, rows=rows, gold=gold, manifest=manifest)
    # a no-answer case (no card relevant) judged every card not relevant: nothing of it to top up
    answerable = [c.id for c in case_set.cases if any(g >= 1 for g in gold[c.id].values())]
    found = unjudged_pool(runs, judged=judged, depth=options.depth, cases=answerable,
                          kb_cards=manifest, seed=options.seed, orphaned=orphaned, stale=stale)
    order = [c.id for c in case_set.cases]
    if options.decisive is not None:
        found, order = decisive_only(found, runs, pairs=options.decisive, judged=judged, kb_cards=manifest)
    systems = [r.name for r in runs]
    entries = []
    by_id = {c.id: c for c in case_set.cases}
    for case in (by_id[i] for i in order if i in by_id):
        if case.id not in found.cards:
            continue
        fields = {"locale": case.locale} if case.locale else {}
        entries.append(DraftEntry(id=case.id, query=case.query, intent=case.tags.get("intent", ""), fields=fields,
                                  candidates=[Candidate(card=c, sha=manifest[c].sha) for c in found.cards[case.id]],
                                  pool=Pool(depth=options.depth, systems=systems, found=found.found[case.id]),
                                  log="", top_up=True, replaces=orphaned.get(case.id)))
    for entry in waiting:  # drafted queries not cases yet: offered as drafted queries, not top-up lines
        found.cards[entry.id] = [c.card for c in entry.candidates]
        found.reasons[entry.id] = ["stale"]
        entries.append(entry)
    texts: dict[str, list[tuple[str, str]]] = {}
    wanted = {c for cards in found.cards.values() for c in cards}
    for card in knowledge.cards:
        if card.card_id in wanted:
            texts.setdefault(card.card_id, []).append((card.id, card.text))
    return TopUpResult(entries=entries, top_up=found, systems=systems, depth=options.depth, cases=len(case_set.cases),
                       orphaned=orphaned, stale=sum(len(v) for v in stale.values())
                       + sum(len(e.candidates) for e in waiting), shallow=shallow,
                       unknown=len(unknown), titles={c: manifest[c].title for c in sorted(wanted)},
                       texts={c: "\n\n".join(t for _, t in sorted(parts)) for c, parts in texts.items()},
                       graded=any(c.grades and max(c.grades.values()) > 1 for c in case_set.cases),
                       decisive=options.decisive is not None, kb_path=kb, cases_path=cases)


def decisive_only(full: TopUp, runs: Sequence[RunTop], *, pairs: Sequence[tuple[str, str]],
                  judged: dict[str, set[str]], kb_cards: Collection[str]) -> tuple[TopUp, list[str]]:
    """The top-up cut to ``pairs`` (the decisive cards), each case's cards in their order and the
    cases in the order of their first card — the heaviest first, so the verdict settles soonest.
    A pair already judged, or whose card the KB no longer holds, is left out."""
    out = TopUp(judged_in_top=full.judged_in_top)
    order: list[str] = []
    for case, card in pairs:
        if card not in kb_cards or card in judged.get(case, ()) or card in out.cards.get(case, ()):
            continue
        if case not in out.cards:
            order.append(case)
            out.reasons[case] = ["unjudged"]
            out.found[case] = {}
        out.cards.setdefault(case, []).append(card)
        out.found[case][card] = [run.name for run in runs if card in run.ranked.get(case, ())]
    return out, order


def _drafted_waiting(paths: Sequence[Path], *, rows: Sequence[tuple[str, str]], gold: Mapping[str, object],
                     manifest: Mapping[str, KbCard]) -> list[DraftEntry]:
    """The drafted queries that are not cases yet and wait on a stale judgement: a ``stale.jsonl``
    ``label apply --draft`` wrote sits beside its ``draft.jsonl``; each such query of that draft
    comes back as itself (query, intent, fields, provenance) with its stale cards at their content
    now, so ``label apply --draft`` of the top-up makes it a case like any drafted query."""
    drafted: dict[str, DraftEntry] = {}
    for path in paths:
        beside = path.parent / DRAFT_FILES[0]
        if beside.is_file():
            for case, entry in read_draft(beside).items():
                drafted.setdefault(case, entry)
    cards: dict[str, list[str]] = {}
    for case, card in rows:
        if case not in gold and case in drafted and card in manifest and card not in cards.get(case, []):
            cards.setdefault(case, []).append(card)
    return [drafted[case].model_copy(update={"candidates": [Candidate(card=c, sha=manifest[c].sha) for c in found],
                                             "detect": None, "top_up": None, "replaces": None})
            for case, found in cards.items()]


def _orphan_pool(knowledge, *, cases, depth: int, taken: set[str]) -> RunTop:
    """BM25 over the KB for the orphaned cases (no model needed): candidates to re-judge them."""
    from retrieval_gate.retrieve.bm25 import BM25Retriever, units_from_kb

    retriever = BM25Retriever(units=units_from_kb(knowledge))
    answers = retriever.search([c.query for c in cases], depth, [None] * len(cases))
    name = ORPHAN_POOL if ORPHAN_POOL not in taken else f"{ORPHAN_POOL} (orphaned)"
    return RunTop(name=name, ranked={c.id: list(a.ids) for c, a in zip(cases, answers, strict=True)})


def apply_text(out: Path, *, result: TopUpResult) -> str:
    """The ``label apply`` command of the top-up at ``out`` (the page's "saved" hint, draft.md's last
    line), its paths as written from the repository root and shell-quoted; "" without the inputs."""
    from retrieval_gate.files import from_root, repository_root
    from retrieval_gate.golden.label_page import apply_command

    if result.kb_path is None or result.cases_path is None:
        return ""
    root = repository_root(out / "draft.jsonl")
    return apply_command(draft=from_root(out / "draft.jsonl", root), cases=from_root(result.cases_path, root),
                         kb=from_root(result.kb_path, root))


def summary_lines(result: TopUpResult, *, draft: Path | None = None, apply: str = "") -> list[str]:
    """draft.md's Markdown (and what the command prints): what was compared, how deep, what is
    left to judge; every figure relative to the runs named here."""
    t = result.top_up
    what = ("the unjudged cards whose labels decide the comparison's verdict, those that weigh most on it "
            "first" if result.decisive else f"the cards of each system's top {result.depth} that no judgement covers")
    lines = ["# Top-up of a golden set", "",
             f"- cards to label: {result.cards:,} in {len(result.entries):,} of {result.cases:,} cases ({what})",
             f"- systems compared (top {result.depth} each): {', '.join(result.systems) or 'none'}"]
    for name, (judged, shown) in sorted(t.judged_in_top.items()):
        if shown:
            lines.append(f"- judged@{result.depth} before the top-up, {name}: {judged / shown:.3f} "
                         f"({judged:,} of {shown:,} cards judged)")
    for name, kept in result.shallow:
        lines.append(f"- {name}: its results keep only the top {kept} per case (score with a larger --k to top up "
                     f"{result.depth} deep)")
    if result.orphaned:
        lines.append(f"- orphaned cases (a gold card gone from the KB), drafted again: {len(result.orphaned):,}")
    if result.stale:
        lines.append(f"- stale judgements offered again: {result.stale:,}")
    if result.unknown:
        lines.append(f"- cases the results rank that the golden set does not hold (left out): {result.unknown:,}")
    lines.append("- coverage is relative to these systems: a card none of them ranks in its top "
                 f"{result.depth} stays unjudged")
    if draft is not None:
        command = apply or f"retrieval-gate label apply labels.jsonl --draft {draft.as_posix()}"
        lines += ["", f"Label `label.html`, download the labels, then `{command}` (from the repository root)."]
    return [*lines, ""]


def top_up_texts(out: Path, *, result: TopUpResult) -> dict[str, str]:
    """The draft folder's files by name, as text (the action writes them through its context)."""
    apply = apply_text(out, result=result)
    return draft_folder_texts(result.entries, titles=result.titles, texts=result.texts, graded=result.graded,
                              labeller="", summary=summary_lines(result, draft=out / "draft.jsonl", apply=apply),
                              apply=apply)


def write_top_up(out: Path, *, result: TopUpResult, labeller: str = "") -> list[Path]:
    """The draft folder under ``out`` (``golden.draft_folder.write_draft_files``); the paths written."""
    apply = apply_text(out, result=result)
    return write_draft_files(out, entries=result.entries, titles=result.titles, texts=result.texts,
                             graded=result.graded, labeller=labeller,
                             summary=summary_lines(result, draft=out / "draft.jsonl", apply=apply), apply=apply)
