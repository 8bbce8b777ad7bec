from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import app


@app.command()
def validate(
    kb: Path = typer.Option(..., "--kb", help="Knowledge base: JSONL cards, BEIR folder, or a folder of Markdown/text cards."),
    cases: Path = typer.Option(..., "--cases", help="Golden set: JSONL cases or a BEIR folder."),
) -> None:
    """Dataset integrity: every problem in the KB and the cases, and every gold id that does not
    resolve to a KB card. Exit 2 with file:line for each problem."""
    from retrieval_gate.load.dataset import load_dataset

    loaded_cases, loaded_kb = load_dataset(cases=cases, kb=kb)
    assert loaded_kb is not None
    n_gold = sum(1 for c in loaded_cases.cases if c.gold)
    # A plain line (no rich: start-up time), as console.print(soft_wrap=True) would print it.
    typer.echo(
        f"ok: {len(loaded_cases.cases)} cases ({n_gold} with gold, "
        f"{len(loaded_cases.cases) - n_gold} no-answer), {len(loaded_kb.card_ids)} cards; "
        "every gold id resolves to a card"
    )
