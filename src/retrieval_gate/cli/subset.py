"""``retrieval-gate subset``: a deterministic stratified sample of the cases for the PR suite
(the full set runs on a schedule). Writes the chosen cases — their original JSONL lines,
byte for byte — and a manifest next to them (``<out>.subset.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.errors import UsageError
from retrieval_gate.files import sha256_bytes, write_json_atomic, write_text_atomic
from retrieval_gate.load.subset_manifest import manifest_path


@app.command("subset")
def subset_command(
    cases: Path = typer.Option(..., "--cases", help="Golden set: JSONL cases or a BEIR folder."),
    per_cell: int = typer.Option(..., "--per-cell", help="Cases kept per cell (a cell keeps all it has when smaller)."),
    by: str = typer.Option("kind,locale", "--by", help="Cell fields, comma-separated: kind, locale, form, hard_class, split, tag.KEY, gold.KEY (gold.KEY needs --kb)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the draw inside each cell."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base, for gold.KEY fields."),
    out: Path = typer.Option(..., "--out", help="Where to write the subset (JSONL)."),
) -> None:
    """A deterministic stratified PR subset: every non-empty cell keeps min(N, size) cases,
    adversarial and hard-class cases first. The same inputs and seed give the same file."""
    from retrieval_gate.audit.params import is_coverage_field
    from retrieval_gate.audit.run import audit_cards
    from retrieval_gate.audit.subset import stratified_subset
    from retrieval_gate.load.cases import load_cases
    from retrieval_gate.load.textfile import iter_lines

    fields = [f.strip() for f in by.split(",") if f.strip()]
    if not fields:
        raise UsageError("--by needs at least one field")
    for name in fields:
        if not is_coverage_field(name):
            raise UsageError(f"--by: unknown field {name!r} (known: kind, locale, form, hard_class, split, tag.KEY, gold.KEY)")
    if per_cell < 1:
        raise UsageError("--per-cell must be at least 1")
    if any(f.startswith("gold.") for f in fields) and kb is None:
        raise UsageError("--by gold.KEY needs --kb (the gold cards' metadata)")
    if Path(out).resolve() == Path(cases).resolve():
        raise UsageError("--out must not overwrite --cases")
    if kb is not None:
        from retrieval_gate.load.dataset import load_dataset

        case_set, loaded_kb = load_dataset(cases=cases, kb=kb)
        cards = audit_cards(loaded_kb.cards) if loaded_kb is not None else None
    else:
        case_set, cards = load_cases(cases), None
    chosen, summary = stratified_subset(cases=case_set.cases, by=fields, per_cell=per_cell, seed=seed, cards=cards)
    if case_set.format == "jsonl":
        raw = dict(iter_lines(Path(cases), problems=[]))
        text = "".join(raw[case_set.lines[c.id]].rstrip("\r\n") + "\n" for c in chosen)
    else:  # a BEIR folder: the chosen cases as JSONL
        text = "".join(json.dumps({"id": c.id, "query": c.query, "gold": list(c.gold)}, ensure_ascii=False) + "\n"
                       for c in chosen)
    write_text_atomic(out, text=text)
    manifest = {**summary, "full_cases": case_set.path, "full_cases_sha256": case_set.sha256,
                "subset_sha256": sha256_bytes(text.encode("utf-8"))}
    write_json_atomic(manifest_path(out), data=manifest)
    console.print(f"subset: {summary['n']} of {summary['of']} cases, {len(summary['cells'])} cells "
                  f"(≤ {per_cell} per cell by {', '.join(fields)}, seed {seed})", markup=False, highlight=False)
    console.print(f"wrote {out} and {manifest_path(out)}", markup=False)
