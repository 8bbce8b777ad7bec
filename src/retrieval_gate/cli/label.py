"""``retrieval-gate label queue|apply``: the labelling loop. ``queue`` lists the unjudged cards
that outrank the gold of the changed cases (cause ``unjudged``), as the HTML report shows them;
``apply`` merges a reviewer's decisions (the report's "Download labels" file) into the golden set
in its own format, and keeps the "not relevant" ones in the sidecar file beside the cases so the
same card is not asked about again. The pure part: ``retrieval_gate.audit.label_queue``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.clock import now_iso
from retrieval_gate.errors import InputError, OutputError, Problem, UsageError
from retrieval_gate.files import confined, write_text_atomic
from retrieval_gate.render.escape import escape_terminal

if TYPE_CHECKING:
    from retrieval_gate.audit.agree import Record
    from retrieval_gate.models import CaseSet

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
    from retrieval_gate.artifacts.labels import queue_for
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
        console.print(f"wrote {out}", markup=False, highlight=False)


def read_decisions(path: Path) -> list[tuple[int, Record]]:
    """The records of a labels file: decisions, and (from the drafting page) no-answer words."""
    from pydantic import ValidationError

    from retrieval_gate.audit.label_queue import Decision, NoAnswer
    from retrieval_gate.load.textfile import display, iter_json_objects, raise_if, validation_problems

    if not path.is_file():
        raise UsageError(f"{path}: no such labels file")
    problems: list[Problem] = []
    out: list[tuple[int, Record]] = []
    for number, obj in iter_json_objects(path, problems=problems):
        try:
            out.append((number, NoAnswer.model_validate(obj) if "no_answer" in obj else Decision.model_validate(obj)))
        except ValidationError as exc:
            problems.extend(validation_problems(path, line=number, exc=exc))
    if not out and not problems:
        problems.append(Problem(display(path), None, "no decisions: the labels file is empty"))
    raise_if(problems)
    return out


@label_app.command("apply")
def apply_command(
    labels: list[Path] = typer.Argument(..., help="labels.jsonl (from the HTML report or the labelling page); with --draft, two labellers' files and optionally a third that settles their disagreements."),
    draft: Path | None = typer.Option(None, "--draft", help="DIR/draft.jsonl of `cases draft`: the labels make new cases."),
    prefer: str | None = typer.Option(None, "--prefer", help="With two labels files: A or B wins their disagreements."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set to add to (default: the suite's; with --draft created as JSONL when missing)."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Merge labelling decisions into the golden set in its own format (JSONL cases: the case's
    gold; BEIR or qrels: a qrels line), atomically; "not relevant" ones go to the sidecar file
    beside the cases. With --draft the labels make new cases (a no-answer one with empty gold).
    Refuses the whole file (exit 2, nothing written) when a decision names an unknown case or
    card, or a card whose content changed since it was judged."""
    if draft is not None:
        return _apply_draft(labels, draft=draft, prefer=prefer, kb=kb, cases=cases, config=config, suite=suite)
    if len(labels) != 1 or prefer is not None:
        raise UsageError("several labels files and --prefer apply to a draft: give --draft DIR/draft.jsonl")
    _apply_decisions(labels[0], kb=kb, cases=cases, config=config, suite=suite)


def _say(text: str) -> None:
    console.print(escape_terminal(text), markup=False, highlight=False, soft_wrap=True)


def _apply_decisions(labels: Path, *, kb: Path | None, cases: Path | None, config: Path | None, suite: str) -> None:
    from retrieval_gate.artifacts.labels import not_relevant_path, read_not_relevant
    from retrieval_gate.audit.draft_cases import bad_id
    from retrieval_gate.audit.label_queue import Decision, add_to_jsonl, add_to_qrels, not_relevant_lines, plan_labels
    from retrieval_gate.load.cases import load_cases, qrels_path
    from retrieval_gate.load.dataset import load_dataset
    from retrieval_gate.load.textfile import display, read_bytes
    from retrieval_gate.score.kb_manifest import kb_manifest

    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    records = read_decisions(labels)
    if (bad := next(((n, r) for n, r in records if not isinstance(r, Decision)), None)) is not None:
        raise InputError(Problem(display(labels), bad[0], "a no-answer label belongs to a draft: give --draft"))
    decisions = [(n, r) for n, r in records if isinstance(r, Decision)]
    case_set, knowledge = load_dataset(cases=cases_path, kb=kb_path)
    assert knowledge is not None
    manifest = kb_manifest(knowledge.cards)
    sidecar = not_relevant_path(cases_path)
    plan = plan_labels(decisions=decisions, gold=_judged(case_set), manifest=manifest,
                       not_relevant={(c, d) for c, d, _ in read_not_relevant(sidecar)})
    refused = list(plan.refused)
    if case_set.format != "jsonl":  # a qrels line: an id with a tab or a newline would write other lines
        refused += [(n, f"id {d.case if bad_id(d.case) else d.card!r} holds whitespace or a control character: "
                        "a qrels line cannot hold it") for n, d in decisions if bad_id(d.case) or bad_id(d.card)]
    if refused:
        raise InputError([Problem(display(labels), line, reason) for line, reason in sorted(refused)])
    target = cases_path if case_set.format == "jsonl" else qrels_path(cases_path)
    for path in ([target] if plan.relevant else []) + ([sidecar] if plan.not_relevant else []):
        confined(path)  # every target checked before anything is written
    if plan.relevant:
        text = read_bytes(target).decode("utf-8")
        merged = add_to_jsonl(text, additions=plan.relevant) if case_set.format == "jsonl" else add_to_qrels(text, additions=plan.relevant)
        write_text_atomic(target, text=merged)
        after = _judged(load_cases(cases_path))
        if missing := [d for d in plan.relevant if d.card not in after.get(d.case, {})]:
            raise OutputError(Problem(str(target), None, f"cannot write: {len(missing)} decision(s) not in the golden "
                                                         f"set as read back (first: {missing[0].case} {missing[0].card})"))
        for d in plan.relevant:
            _say(f"added {d.case}: {d.card} (grade {d.grade})")
        _say(f"wrote {target}")
    if plan.not_relevant:
        before = read_bytes(sidecar).decode("utf-8") if sidecar.is_file() else ""
        if before and not before.endswith("\n"):
            before += "\n"
        write_text_atomic(sidecar, text=before + not_relevant_lines(plan.not_relevant))
        for d in plan.not_relevant:
            _say(f"not relevant {d.case}: {d.card}")
        _say(f"wrote {sidecar}")
    for line, reason in plan.skipped:
        _say(f"{display(labels)}:{line}: nothing to do: {reason}")
    console.print(f"{len(plan.relevant):,} added to the golden set, {len(plan.not_relevant):,} kept as not relevant",
                  markup=False, highlight=False)


def _apply_draft(labels: list[Path], *, draft: Path, prefer: str | None, kb: Path | None, cases: Path | None,
                 config: Path | None, suite: str) -> None:
    from retrieval_gate.artifacts.draft import read_draft
    from retrieval_gate.audit.agree import judged, reconcile
    from retrieval_gate.evaluation.draft import pool_heading
    from retrieval_gate.evaluation.golden import apply_draft, intent_lines, pool_lines, raise_refused, refusals
    from retrieval_gate.load.textfile import display

    if not 1 <= len(labels) <= 3:
        raise UsageError("label apply --draft takes one labels file, two labellers' files, or those and a third")
    if prefer is not None and (len(labels) != 2 or prefer not in ("A", "B")):
        raise UsageError("--prefer A or B settles the disagreements of two labels files")
    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    drafted = read_draft(draft)
    files = [(path, read_decisions(path)) for path in labels]
    raise_refused(refusals(files, draft=drafted, kb=kb_path, cases=cases_path))
    if len(files) == 1:
        records = [r for _, r in files[0][1]]
    else:
        sets = [judged(recs) for _, recs in files]
        records, conflicts = reconcile(sets, prefer=None if prefer is None else "AB".index(prefer))
        if conflicts:
            raise InputError([Problem(display(labels[0]), sets[0].lines.get((case, card)) or sets[0].lines.get((case, "")),
                                      f"{case} {card}: the labellers disagree (grades {' vs '.join(map(str, grades))}); "
                                      "a third file or --prefer A|B settles it") for case, card, grades in conflicts])
    applied = apply_draft(records, draft=drafted, cases=cases_path, labeller="", date=now_iso()[:10])
    plan = applied.plan
    for obj in plan.cases:
        _say(f"added {obj['id']}: {', '.join(obj['gold']) or 'no answer (empty gold)'}")
    for d in plan.additions:  # a top-up's judgements of cases already there
        _say(f"added {d.case}: {d.card} (grade {d.grade})")
    for path in applied.written:
        _say(f"wrote {path}")
    _say((f"{len(plan.additions):,} cards added to cases already there, " if plan.additions else "")
         + f"{len(plan.cases):,} cases added, {len(plan.not_relevant):,} kept as not relevant, {plan.unjudged:,} "
         f"drafted queries nobody judged left out" + (f", {len(plan.judged_nothing):,} judged with no card relevant "
                                                     "and no 'no answer' left out" if plan.judged_nothing else ""))
    for line in ["what the golden set can detect, per intent:", *intent_lines(applied),
                 pool_heading(drafted.values()),
                 *pool_lines(plan, systems=sorted({s for e in drafted.values() if e.pool for s in e.pool.systems}))]:
        _say(line)


@label_app.command("top-up")
def top_up_command(
    results: list[Path] = typer.Option([], "--results", help="A results JSON of a system being compared (repeat: one per system)."),
    out: Path = typer.Option(..., "--out", help="Folder for draft.jsonl, label.html and draft.md."),
    depth: int = typer.Option(10, "--depth", min=1, max=1000, help="Each run's top cards looked at."),
    orphaned: bool = typer.Option(False, "--orphaned", help="Also draft the cases whose gold card the KB no longer holds, for re-judging."),
    stale: list[Path] = typer.Option([], "--stale", help="stale.jsonl of `label apply` (repeat): offer those judgements again."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (default: the suite's)."),
    labeller: str = typer.Option("", "--labeller", help="A name the labelling page writes into each label."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """For every case, the cards of each run's top --depth that no judgement covers (gold at any
    grade, the not-relevant sidecar), each once, written as a draft folder that `label apply
    --draft DIR/draft.jsonl` applies like any draft. Exit 0; 2 on bad input."""
    from retrieval_gate.evaluation.topup import TopUpOptions, summary_lines, top_up, write_top_up

    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    refuse_output_onto_inputs(outputs={f"--out ({name})": out / name for name in ("draft.jsonl", "label.html",
                                                                                  "draft.md")},
                              inputs={"--kb": kb_path, "--cases": cases_path, "--config": config,
                                      **{f"--results {p}": p for p in results}, **{f"--stale {p}": p for p in stale}})
    result = top_up(kb=kb_path, cases=cases_path, options=TopUpOptions(results=results, depth=depth,
                                                                        orphaned=orphaned, stale=stale))
    written = write_top_up(out, result=result, labeller=labeller)
    for line in summary_lines(result)[2:-1]:
        _say(line.removeprefix("- "))
    for path in written:
        _say(f"wrote {path}")
    if result.cards:
        _say(f"next: open {out / 'label.html'}, label, Download labels, then")
        _say(f"  retrieval-gate label apply labels.jsonl --draft {out / 'draft.jsonl'} --cases {cases_path}"
             f" --kb {kb_path}")
    else:
        _say("nothing to label: every card of these tops is judged")


@label_app.command("agree")
def agree_command(
    first: Path = typer.Argument(..., help="One labeller's labels.jsonl."),
    second: Path = typer.Argument(..., help="The other labeller's labels.jsonl."),
    draft: Path | None = typer.Option(None, "--draft", help="DIR/draft.jsonl: agreement per intent."),
) -> None:
    """Agreement of two labellers on the pairs both judged: Cohen's kappa overall and per intent,
    and the pairs they disagree on. Exit 0; 2 on bad input."""
    from retrieval_gate.artifacts.draft import read_draft
    from retrieval_gate.audit.agree import agreement, judged

    intents = {e.id: e.intent for e in read_draft(draft).values()} if draft is not None else {}
    result = agreement(judged(read_decisions(first)), b=judged(read_decisions(second)), intent_of=intents)

    def k(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    _say(f"{result.pairs:,} pairs judged by both; Cohen's kappa {k(result.kappa)}")
    for name, (n, value) in result.by_intent.items():
        _say(f"  {name}: {n:,} pairs, kappa {k(value)}")
    _say(f"{len(result.disagree):,} pairs disagree" + (":" if result.disagree else ""))
    for case, card, a, b in result.disagree:
        _say(f"  {case} {card}: {a} vs {b}")


def _judged(case_set: CaseSet) -> dict[str, dict[str, int]]:
    from retrieval_gate.models import judgements

    return {c.id: judgements(c) for c in case_set.cases}
