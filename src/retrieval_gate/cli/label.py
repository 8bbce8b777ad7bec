"""``retrieval-gate label queue|apply``: the labelling loop. ``queue`` lists the unjudged cards
that outrank the gold of the changed cases (cause ``unjudged``), as the HTML report shows them;
``apply`` merges a reviewer's decisions (the report's "Download labels" file) into the golden set
in its own format, and keeps the "not relevant" ones in the sidecar file beside the cases so the
same card is not asked about again. The work: ``golden.label_apply``, ``golden.topup_run``; the
judgement's format ``golden.decisions``; the report's queue ``compare.label_queue``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.clock import now_iso
from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.files import write_text_atomic
from retrieval_gate.render.escape import escape_terminal

if TYPE_CHECKING:
    from retrieval_gate.golden.label_apply import Applied
    from retrieval_gate.golden.sittings import Prefer

label_app = typer.Typer(name="label", help="The labelling loop: list unjudged cards to label, apply decisions.",
                        no_args_is_help=True, add_completion=False, rich_markup_mode=None)
app.add_typer(label_app, name="label")

CONFIG_HELP = "Config file (default ./retrieval-gate.yml when present)."


def suite_inputs(*, config: Path | None, suite: str, kb: Path | None, cases: Path | None) -> tuple[Path, Path]:
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    config_file, config_path = load_config(config, required=config is not None)
    settings = resolve_suite(config_file, suite=suite, overrides=SuiteOverrides(kb=str(kb) if kb else None,
                                                                                cases=str(cases) if cases else None),
                             config_path=config_path)
    if settings.kb is None or settings.cases is None:
        raise UsageError("label needs --kb and --cases (or a suite that names them)")
    return Path(settings.kb), Path(settings.cases)


@label_app.command("queue")
def queue_command(
    comparison: Path = typer.Option(..., "--comparison", help="Comparison JSON written by `compare --out`."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (default: the suite's)."),
    out: Path | None = typer.Option(None, "--out", help="Also write the queue here as JSONL."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """List the unjudged cards that outrank the gold of the changed cases (cause unjudged), with
    their title, a snippet and the content hash a decision carries. Exit 0; 2 on bad input."""
    from retrieval_gate.artifacts.label_sidecar import queue_for
    from retrieval_gate.artifacts.run_files import read_comparison
    from retrieval_gate.load.dataset import load_dataset

    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    refuse_output_onto_inputs(outputs={"--out": out}, inputs={"--comparison": comparison, "--kb": kb_path,
                                                              "--cases": cases_path, "--config": config})
    loaded = read_comparison(comparison)
    _, knowledge = load_dataset(cases=cases_path, kb=kb_path)
    assert knowledge is not None
    items = queue_for(comparison=loaded, kb=knowledge, cases_path=cases_path)
    for item in items:
        console.print(f"{item.case} · {item.card} (rank {item.rank}, sha {item.sha}) {item.title}\n    {item.snippet}",
                      markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(items):,} card{'' if len(items) == 1 else 's'} to label", markup=False, highlight=False)
    if out is not None:
        write_text_atomic(out, text="".join(json.dumps(i.as_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                       for i in items))
        console.print(f"wrote {out}", markup=False, highlight=False, soft_wrap=True)


@label_app.command("apply")
def apply_command(
    labels: list[Path] = typer.Argument(..., help="labels.jsonl (from the HTML report or the labelling page); with --draft, two labellers' files and optionally a third that settles their disagreements."),
    draft: Path | None = typer.Option(None, "--draft", help="DIR/draft.jsonl of `cases draft`: the labels make new cases (and merge into the cases of earlier sittings)."),
    prefer: list[str] = typer.Option([], "--prefer", help="new: this file's judgement wins a conflict with the golden set, old: the golden set's stays; A or B: with two labels files, that labeller wins their disagreements. Repeat for both."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set to add to (default: the suite's; with --draft created as JSONL when missing)."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Merge labelling judgements into the golden set in its own format (JSONL cases: the case's
    gold; BEIR or qrels: a qrels line), atomically; "not relevant" ones go to the sidecar file
    beside the cases. With --draft the labels make new cases (a no-answer one with empty gold).
    In sittings: a judgement the golden set already holds is counted and skipped; one of a card
    edited since it was judged is set aside in stale.jsonl (the draft's folder, else beside the
    labels) and the rest applied. Exit 2, nothing written, for a grade off the scale, two grades
    for one pair, an id the draft (or the golden set) does not hold, or a grade that conflicts
    with the golden set's (unless --prefer new|old)."""
    from retrieval_gate.golden.draft_folder import read_draft
    from retrieval_gate.golden.label_apply import apply_labels
    from retrieval_gate.golden.labels_file import read_decisions

    if not 1 <= len(labels) <= (3 if draft is not None else 1):
        raise UsageError("label apply takes one labels file; with --draft two labellers' files, or those and a third")
    if unknown := [p for p in prefer if p not in ("A", "B", "new", "old")]:
        raise UsageError(f"--prefer {unknown[0]!r}: expected new or old (against the golden set), A or B (two labellers)")
    sides = [p for p in prefer if p in ("new", "old")]
    labeller = [p for p in prefer if p in ("A", "B")]
    if len(sides) > 1 or len(labeller) > 1:
        raise UsageError("--prefer: at most one of new|old and one of A|B")
    if labeller and len(labels) != 2:
        raise UsageError("--prefer A or B settles the disagreements of two labels files (with --draft)")
    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    drafted = read_draft(draft) if draft is not None else None
    files = [(path, read_decisions(path)) for path in labels]
    applied = apply_labels(files, draft=drafted, draft_path=draft, kb=kb_path, cases=cases_path,
                           prefer=cast("Prefer", sides[0]) if sides else None,
                           prefer_labeller="AB".index(labeller[0]) if labeller else None, labeller="",
                           date=now_iso()[:10])
    _report_applied(applied, labels=labels, draft=draft, kb=kb_path, cases=cases_path, config=config)


def _say(text: str) -> None:
    console.print(escape_terminal(text), markup=False, highlight=False, soft_wrap=True)


def _report_applied(applied: Applied, *, labels: list[Path], draft: Path | None, kb: Path, cases: Path,
                    config: Path | None) -> None:
    """What was added, kept, set aside, and the next command to run."""
    from retrieval_gate.golden.cases_draft import pool_heading
    from retrieval_gate.golden.draft_folder import free_draft_folder, read_draft
    from retrieval_gate.golden.label_apply import intent_lines, pool_lines

    m, plan = applied.merge, applied.plan
    for obj in plan.cases if plan else []:
        _say(f"added {obj['id']}: {', '.join(obj['gold']) or 'no answer (empty gold)'}")
    for case, cards in m.set_gold.items():
        for card, grade in cards.items():
            _say(f"added {case}: {card} (grade {grade})")
    for case, cards in m.remove_gold.items():
        _say(f"taken out of {case}'s gold: {', '.join(sorted(cards))}")
    for d in m.not_relevant:
        _say(f"not relevant {d.case}: {d.card}")
    for case, gone in applied.still_orphaned.items():
        _say(f"{case} still names {', '.join(gone)}, gone from the KB: no card was judged relevant (label one "
             "that answers it, or take the case out)")
    for s in applied.stale:
        now = s.kb_sha or "gone from the KB"
        _say(f"{s.where[0]}:{s.where[1]}: set aside: card {s.decision.card!r} of {s.decision.case} changed since it was "
             f"judged (hash {s.decision.sha} then, {now} now)")
    for path in applied.written:
        _say(f"wrote {path}")
    cards = sum(len(c) for c in m.set_gold.values())
    head = (f"{len(plan.cases):,} cases added, {cards:,} cards added to cases that exist" if plan is not None
            else f"{cards:,} added to the golden set")
    parts = [head, f"{len(m.not_relevant):,} kept as not relevant", f"already applied: {applied.already:,}",
             f"set aside as stale: {len(applied.stale):,}"]
    if m.replaced:
        parts.append(f"replaced by --prefer new: {m.replaced:,}")
    if m.kept_old:
        parts.append(f"kept by --prefer old: {m.kept_old:,}")
    if applied.superseded:
        parts.append(f"judged again at the card's content now: {applied.superseded:,}")
    _say(", ".join(parts))
    unlabelled = sum(applied.unlabelled.values())
    if draft is not None:
        _say(f"{unlabelled:,} drafted queries not labelled yet" + (
            f" ({applied.waiting_stale:,} of them wait on a card set aside as stale)" if applied.waiting_stale else "")
            + (f", {applied.judged_nothing:,} judged with no card relevant and no 'no answer' left out"
            if applied.judged_nothing else ""))
    if applied.stale:
        _say(f"{len(applied.stale):,} judgement(s) of edited cards kept in {applied.stale_file} (a top-up with "
             "--stale offers those cards again)")
    if draft is not None and plan is not None:
        for line in ["what the golden set can detect, per intent:", *intent_lines(applied),
                     pool_heading(read_draft(draft).values()), *pool_lines(plan, systems=applied.systems)]:
            _say(line)
    q = shlex.quote
    to_label = unlabelled - applied.waiting_stale
    if draft is not None and to_label:
        _say(f"next: open {draft.parent / 'label.html'}, label the {to_label:,} queries left, Download labels, then "
             f"retrieval-gate label apply {q(str(labels[0]))} --draft {q(str(draft))} --cases {q(str(cases))} "
             f"--kb {q(str(kb))}")
    elif (applied.stale or applied.stale_kept) and applied.stale_file is not None:
        folder = free_draft_folder(Path("top-up"))
        _say(f"next: retrieval-gate label top-up --stale {q(str(applied.stale_file))} --out {q(str(folder))} "
             f"--cases {q(str(cases))} --kb {q(str(kb))} (it offers the "
             f"{max(len(applied.stale), applied.stale_kept):,} set-aside judgement(s) for labelling again), then "
             "label apply its labels")
    elif config is None and not Path("retrieval-gate.yml").is_file():
        _say(f"next: retrieval-gate init --kb {q(str(kb))} --cases {q(str(cases))} (config, workflows, first baseline)")
    else:
        _say(f"next: retrieval-gate validate --kb {q(str(kb))} --cases {q(str(cases))}" + (
            ", then commit: git add " + " ".join(q(str(p)) for p in applied.written) if applied.written else ""))
        if applied.written:
            _say("then, for a comparison waiting on these labels: eval (or score) the PR again and compare — a results "
                 "file keeps the labels it was scored with; compare rescores the baseline's side itself")


@label_app.command("top-up")
def top_up_command(
    results: list[Path] = typer.Option([], "--results", help="A results JSON of a system being compared (repeat: one per system)."),
    baseline: Path | None = typer.Option(None, "--baseline", help="The baseline the PR's --results (one) is compared with: write only the unjudged cards whose labels decide the comparison's verdict, heaviest first (none when the labels already decide it). Without it: every unjudged card of the runs' tops."),
    out: Path = typer.Option(..., "--out", help="Folder for draft.jsonl, label.html and draft.md."),
    depth: int = typer.Option(10, "--depth", min=1, max=1000, help="Each run's top cards looked at."),
    orphaned: bool = typer.Option(False, "--orphaned", help="Also draft the cases whose gold card the KB no longer holds, for re-judging."),
    stale: list[Path] = typer.Option([], "--stale", help="stale.jsonl of `label apply` (repeat): offer those judgements again."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (default: the suite's)."),
    labeller: str = typer.Option("", "--labeller", help="A name the labelling page writes into each label."),
    force: bool = typer.Option(False, "--force", help="Replace the draft folder --out holds already (without it: exit 2)."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
    judgements: str | None = typer.Option(None, "--judgements", help="With --baseline: how the golden set was judged, complete or pooled, as compare --judgements (default: the suite's 'judgements', else what the results recorded)."),
) -> None:
    """For every case, the cards of each run's top --depth that no judgement covers (gold at any
    grade, the not-relevant sidecar), each once, written as a draft folder that `label apply
    --draft DIR/draft.jsonl` applies like any draft. Exit 0; 2 on bad input, or when --out holds a
    draft folder already (another folder, or --force)."""
    from retrieval_gate.golden.draft_folder import refuse_replacing_draft
    from retrieval_gate.golden.topup_run import TopUpOptions, summary_lines, top_up, write_top_up

    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    refuse_output_onto_inputs(outputs={f"--out ({name})": out / name for name in ("draft.jsonl", "label.html",
                                                                                  "draft.md")},
                              inputs={"--kb": kb_path, "--cases": cases_path, "--config": config,
                                      **{f"--results {p}": p for p in results}, **{f"--stale {p}": p for p in stale},
                                      **({"--baseline": baseline} if baseline is not None else {})})
    if judgements is not None:
        from retrieval_gate.compare.judgements import check_judgements

        check_judgements(judgements)
    refuse_replacing_draft(out, force=force)
    decisive = None
    if baseline is not None:
        decisive = _decisive_pairs(results=results, baseline=baseline, config=config, suite=suite,
                                   judgements=judgements)
        if not decisive:
            return
    result = top_up(kb=kb_path, cases=cases_path, options=TopUpOptions(results=results, depth=depth,
                                                                        orphaned=orphaned, stale=stale,
                                                                        decisive=decisive))
    written = write_top_up(out, result=result, labeller=labeller)
    for line in summary_lines(result)[2:-1]:
        _say(line.removeprefix("- "))
    for path in written:
        _say(f"wrote {path}")
    if result.cards:
        q = shlex.quote
        _say(f"next: open {out / 'label.html'}, label, Download labels, then")
        _say(f"  retrieval-gate label apply labels.jsonl --draft {q(str(out / 'draft.jsonl'))} --cases {q(str(cases_path))}"
             f" --kb {q(str(kb_path))}")
    else:
        _say("nothing to label: every card of these tops is judged")


def _decisive_pairs(*, results: list[Path], baseline: Path, config: Path | None,
                    suite: str, judgements: str | None = None) -> list[tuple[str, str]]:
    """The (case, card) pairs whose labels decide the comparison of the one --results with
    --baseline under the suite's gate (``compare.decisive``), heaviest first; empty, and said,
    when the labels already decide it."""
    from retrieval_gate.artifacts.baseline import read_baseline
    from retrieval_gate.artifacts.run_files import read_results
    from retrieval_gate.compare.comparison import decision_of
    from retrieval_gate.compare.judgements import judgements_of
    from retrieval_gate.settings import load_config, resolve_suite

    if len(results) != 1:
        raise UsageError(f"label top-up --baseline compares one run with the baseline: give exactly one --results "
                         f"(got {len(results)})")
    loaded, base = read_results(results[0]), read_baseline(baseline)
    config_file, config_path = load_config(config, required=config is not None)
    name = suite if suite in config_file.suites else "default"
    suite_config = resolve_suite(config_file, suite=name, config_path=config_path)
    gate = suite_config.gate
    if not (gate.fail_on_regression or gate.floors):
        gate = gate.model_copy(update={"fail_on_regression": True})  # what a gate would decide, on or not
    if judgements_of(loaded, judgements or suite_config.judgements) == "complete":
        _say("nothing to label: the golden set is judged complete (a card outside the gold is not relevant), so "
             "the labels decide the verdict")
        return []
    decision = decision_of(results=loaded, baseline=base, gate=gate, rescore=True)
    if decision is None:
        raise UsageError(f"{baseline}: the baseline keeps no rankings (written before they were stored), so which "
                         "cards decide the verdict is unknown; refresh it (retrieval-gate baseline update) or drop "
                         "--baseline for the full top-up")
    if decision.decided:
        _say(f"nothing to label: no labelling of the unjudged cards changes the verdict ({decision.best.upper()})")
        return []
    word = {"pass": "passes", "fail": "fails"}
    _say(f"{len(decision.cards):,} cards in {len(decision.cases):,} cases can change the verdict (the gate "
         f"{word[decision.best]} with the cards only this run ranks relevant, {word[decision.worst]} with those only "
         f"the baseline ranks relevant); this sitting: the {decision.sitting:,} that settle it if they are not "
         "relevant — apply the labels and compare again")
    return [(c.case, c.card) for c in decision.cards[:decision.sitting]]


@label_app.command("agree")
def agree_command(
    first: Path = typer.Argument(..., help="One labeller's labels.jsonl."),
    second: Path = typer.Argument(..., help="The other labeller's labels.jsonl."),
    draft: Path | None = typer.Option(None, "--draft", help="DIR/draft.jsonl: agreement per intent; ids not in it refused."),
    cases: Path | None = typer.Option(None, "--cases", help="The golden set whose scale the grades are on (default: binary or graded 0-3, the labelling page's)."),
) -> None:
    """Agreement of two labellers on the pairs both judged: Cohen's kappa overall and per intent,
    and the pairs they disagree on. Exit 0; 2 on bad input (a grade off the scale, two grades for
    one pair in a file, "no answer" beside a relevant card, an id the draft does not hold)."""
    from retrieval_gate.golden.agreement import agreement, judged
    from retrieval_gate.golden.draft_folder import read_draft
    from retrieval_gate.golden.label_apply import agree_problems
    from retrieval_gate.golden.labels_file import read_decisions

    drafted = read_draft(draft) if draft is not None else None
    files = [(path, read_decisions(path)) for path in (first, second)]
    if problems := agree_problems(files, draft=drafted, cases=cases):
        raise InputError(problems)
    intents = {e.id: e.intent for e in drafted.values()} if drafted is not None else {}
    result = agreement(judged(files[0][1]), b=judged(files[1][1]), intent_of=intents)

    def k(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    _say(f"{result.pairs:,} pairs judged by both; Cohen's kappa {k(result.kappa)}")
    for name, (n, value) in result.by_intent.items():
        _say(f"  {name}: {n:,} pairs, kappa {k(value)}")
    _say(f"{len(result.disagree):,} pairs disagree" + (":" if result.disagree else ""))
    for case, card, a, b in result.disagree:
        _say(f"  {case} {card}: {a} vs {b}")
