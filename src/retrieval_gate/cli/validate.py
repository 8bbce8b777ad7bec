from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.errors import InputError, Problem, RetrievalGateError
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.integrity import integrity_problems
from retrieval_gate.load.kb import load_kb


@app.command()
def validate(
    kb: Path = typer.Option(..., "--kb", help="Knowledge base: JSONL cards, BEIR folder, or a folder of Markdown/text cards."),
    cases: Path = typer.Option(..., "--cases", help="Golden set: JSONL cases or a BEIR folder."),
) -> None:
    """Dataset integrity: every problem in the KB and the cases, and every gold id that does not
    resolve to a KB card. Exit 2 with file:line for each problem."""
    problems: list[Problem] = []
    loaded_kb = loaded_cases = None
    for loader, path in ((load_kb, kb), (load_cases, cases)):
        try:
            value = loader(path)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if loader is load_kb:
            loaded_kb = value
        else:
            loaded_cases = value
    if loaded_kb is not None and loaded_cases is not None:
        problems.extend(integrity_problems(cases=loaded_cases, kb=loaded_kb))
    if problems:
        raise InputError(problems)
    assert loaded_kb is not None and loaded_cases is not None
    n_gold = sum(1 for c in loaded_cases.cases if c.gold)
    console.print(
        f"ok: {len(loaded_cases.cases)} cases ({n_gold} with gold, "
        f"{len(loaded_cases.cases) - n_gold} no-answer), {len(loaded_kb.card_ids)} cards; "
        "every gold id resolves to a card"
    )


__all__ = ["RetrievalGateError", "validate"]
