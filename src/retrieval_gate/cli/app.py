"""The typer application object and the consoles shared by every command."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    name="retrieval-gate",
    help="Measure the retrieval step of a RAG system: hit@k, recall@k, nDCG@k per slice, "
    "against a versioned baseline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


@app.callback()
def _root() -> None:
    """retrieval-gate: measure retrieval on every pull request."""

REL_LEVEL_HELP = ("Grade from which a card counts as relevant for hit/recall/precision/MRR/MAP, as trec_eval -l "
                  "(default 1; nDCG always uses the grades as gains).")
MEAN_HELP = ("Which cases each mean covers: relevant (default: cases with a relevant card), trec (as trec_eval: "
             "judged cases in the run) or trec-c (as trec_eval -c: every judged case).")
