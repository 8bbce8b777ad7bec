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
) -> None:
    """Dataset integrity: every problem in the KB and the cases, and every gold id that does not
    resolve to a KB card. Exit 2 with file:line for each problem."""
    from retrieval_gate.load.dataset import load_dataset
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
    loaded_cases, loaded_kb = load_dataset(cases=Path(settings.cases), kb=Path(settings.kb))
    assert loaded_kb is not None
    n_gold = sum(1 for c in loaded_cases.cases if c.gold)
    # A plain line (no rich: start-up time), as console.print(soft_wrap=True) would print it.
    typer.echo(
        f"ok: {len(loaded_cases.cases)} cases ({n_gold} with gold, "
        f"{len(loaded_cases.cases) - n_gold} no-answer), {len(loaded_kb.card_ids)} cards; "
        "every gold id resolves to a card"
    )
