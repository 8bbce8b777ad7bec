from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import app
from retrieval_gate.errors import UsageError


@app.command()
def validate(
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base: JSONL cards, BEIR folder, or a folder of Markdown/text cards (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set: JSONL cases or a BEIR folder (default: the suite's)."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
    strict: bool = typer.Option(False, "--strict", help="Also refuse (exit 2) gold ids that name no card of the KB — a deleted card, or a typo — which are otherwise findings (exit 0)."),
) -> None:
    """Dataset integrity: every problem in the KB and the cases, and every gold id that does not
    resolve to a KB card. Exit 2 with file:line for each problem. A gold id that names no card is
    a finding (exit 0: eval scores it as a loss, ``gold-removed``) — told apart by the baseline's
    KB manifest as a card deleted since the baseline or never a card (a typo) — and refused by
    ``--strict`` (exit 2)."""
    from retrieval_gate.load.dataset import check_dataset
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    config_file, config_path = load_config(config, required=config is not None)
    settings = resolve_suite(config_file, suite=suite, config_path=config_path,
                             overrides=SuiteOverrides(kb=str(kb) if kb else None, cases=str(cases) if cases else None))
    if settings.kb is None or settings.cases is None:
        missing = " and ".join(flag for flag, value in (("--kb", settings.kb), ("--cases", settings.cases))
                               if value is None)
        raise UsageError(f"validate needs {missing} (or a suite of retrieval-gate.yml that names them; "
                         "`retrieval-gate init` writes one)")
    # streamed: a cases file of any size is checked in the memory of its ids (docs/performance.md)
    checked = check_dataset(cases=Path(settings.cases), kb=Path(settings.kb),
                            missing_gold="refuse" if strict else "score")
    missing = checked.missing
    if missing:
        from retrieval_gate.artifacts.baseline import read_kb_manifest
        from retrieval_gate.load.boundary import bound_echoes
        from retrieval_gate.render.escape import escape_terminal
        from retrieval_gate.settings import default_baseline_path

        baseline_path = default_baseline_path(configured=settings.baseline, suite=suite, results_suite=None)
        before = read_kb_manifest(baseline_path) if baseline_path.is_file() else None
        for where, case_id, gold, line in missing:
            at = f"{where}:{line}" if line is not None else where
            if before is not None and gold in before:
                why = (f"a card of the baseline's KB ({baseline_path}) that this KB deleted: scored as a loss "
                       "(gold-removed) — restore the card or update the case")
            elif before is not None:
                why = f"never a card (not in the baseline's KB either, {baseline_path}): a typo? fix the id"
            else:
                why = "deleted, or never a card (no baseline KB manifest to tell): restore the card or fix the case"
            typer.echo(escape_terminal(bound_echoes(f"finding: {at}: case {case_id!r}: gold id {gold!r} is not a "
                                                    f"card in {settings.kb}: {why}")))
    n_gold = checked.with_gold
    # A plain line (no rich: start-up time), as console.print(soft_wrap=True) would print it.
    typer.echo(
        f"ok: {checked.cases} cases ({n_gold} with gold, "
        f"{checked.cases - n_gold} no-answer), {checked.cards} cards; "
        + (f"{len(missing)} gold id{'s' if len(missing) != 1 else ''} name no card (findings above; "
           "--strict refuses them)" if missing else "every gold id resolves to a card")
    )
