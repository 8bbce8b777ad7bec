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
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import write_text_atomic

if TYPE_CHECKING:
    from retrieval_gate.audit.label_queue import Decision
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
    from retrieval_gate.artifacts.results import read_comparison
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


def read_decisions(path: Path) -> list[tuple[int, Decision]]:
    from pydantic import ValidationError

    from retrieval_gate.audit.label_queue import Decision
    from retrieval_gate.load.textfile import display, iter_json_objects, raise_if, validation_problems

    if not path.is_file():
        raise UsageError(f"{path}: no such labels file")
    problems: list[Problem] = []
    out = []
    for number, obj in iter_json_objects(path, problems=problems):
        try:
            out.append((number, Decision.model_validate(obj)))
        except ValidationError as exc:
            problems.extend(validation_problems(path, line=number, exc=exc))
    if not out and not problems:
        problems.append(Problem(display(path), None, "no decisions: the labels file is empty"))
    raise_if(problems)
    return out


@label_app.command("apply")
def apply_command(
    labels: Path = typer.Argument(..., help="labels.jsonl downloaded from the HTML report."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set to add to (default: the suite's)."),
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Merge labelling decisions into the golden set in its own format (JSONL cases: the case's
    gold; BEIR or qrels: a qrels line), atomically; "not relevant" ones go to the sidecar file
    beside the cases. Refuses the whole file (exit 2, nothing written) when a decision names an
    unknown case or card, or a card whose content changed since it was judged."""
    from retrieval_gate.artifacts.labels import not_relevant_path, read_not_relevant
    from retrieval_gate.audit.label_queue import add_to_jsonl, add_to_qrels, not_relevant_lines, plan_labels
    from retrieval_gate.load.cases import qrels_path
    from retrieval_gate.load.dataset import load_dataset
    from retrieval_gate.load.textfile import display, read_bytes
    from retrieval_gate.score.kb_manifest import kb_manifest

    kb_path, cases_path = suite_inputs(config=config, suite=suite, kb=kb, cases=cases)
    decisions = read_decisions(labels)
    case_set, knowledge = load_dataset(cases=cases_path, kb=kb_path)
    assert knowledge is not None
    manifest = kb_manifest(knowledge.cards)
    sidecar = not_relevant_path(cases_path)
    plan = plan_labels(decisions=decisions, gold=_judged(case_set), manifest=manifest,
                       not_relevant={(c, d) for c, d, _ in read_not_relevant(sidecar)})
    if plan.refused:
        raise InputError([Problem(display(labels), line, reason) for line, reason in plan.refused])
    if plan.relevant:
        target = cases_path if case_set.format == "jsonl" else qrels_path(cases_path)
        text = read_bytes(target).decode("utf-8")
        merged = add_to_jsonl(text, additions=plan.relevant) if case_set.format == "jsonl" else add_to_qrels(text, additions=plan.relevant)
        write_text_atomic(target, text=merged)
        for d in plan.relevant:
            console.print(f"added {d.case}: {d.card} (grade {d.grade})", markup=False, highlight=False)
        console.print(f"wrote {target}", markup=False, highlight=False)
    if plan.not_relevant:
        before = read_bytes(sidecar).decode("utf-8") if sidecar.is_file() else ""
        if before and not before.endswith("\n"):
            before += "\n"
        write_text_atomic(sidecar, text=before + not_relevant_lines(plan.not_relevant))
        for d in plan.not_relevant:
            console.print(f"not relevant {d.case}: {d.card}", markup=False, highlight=False)
        console.print(f"wrote {sidecar}", markup=False, highlight=False)
    for line, reason in plan.skipped:
        console.print(f"{display(labels)}:{line}: nothing to do: {reason}", markup=False, highlight=False)
    console.print(f"{len(plan.relevant):,} added to the golden set, {len(plan.not_relevant):,} kept as not relevant",
                  markup=False, highlight=False)


def _judged(case_set: CaseSet) -> dict[str, dict[str, int]]:
    from retrieval_gate.models import judgements

    return {c.id: judgements(c) for c in case_set.cases}
