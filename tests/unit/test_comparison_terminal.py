"""render.terminal.print_comparison: the table and the lines around it, as plain text."""

from __future__ import annotations

from rich.console import Console

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.render.terminal import print_comparison
from tests.unit.compare_data import HEADLINE, make_case, make_results

METRICS = (*HEADLINE, "mrr@5")


def comparison(gate: GateSettings):
    before = make_results([make_case(f"q{i:03d}", dict.fromkeys(METRICS, 1.0), slices=["overall", "locale=pt-BR"],
                                     query=f"pergunta {i}") for i in range(40)], config={"model": "m1"},
                          metrics=METRICS)
    after = make_results([make_case(f"q{i:03d}", dict.fromkeys(METRICS, float(i >= 12)),
                                    slices=["overall", "locale=pt-BR"], query=f"pergunta {i}") for i in range(40)],
                         config={"model": "m2"}, metrics=METRICS)
    base = update_baseline(baseline=None, results=before, sha="0123456789abcdef", ref="main",
                           timestamp="2026-05-01T10:00:00Z")
    return compare(results=after, baseline=base, gate=gate, resamples=2_000)


def render(gate: GateSettings, **kwargs) -> str:
    console = Console(record=True, width=100, force_terminal=False, color_system=None)
    print_comparison(comparison(gate), console, **kwargs)
    return console.export_text()


def test_report_only_output():
    text = render(GateSettings())
    assert "baseline 0123456 on main (2026-05-01) · 40 cases paired · 0 added · 0 removed" in text
    assert "not like-for-like" in text and "config.model: 'm1' → 'm2'" in text
    assert "locale=pt-BR" in text and "hit@5" in text and "nDCG@5" in text
    assert "−0.300" in text and "regressed *" in text and "<0.001" in text
    assert "what changed: 12 case(s) moved · 12 lost hits: 12 retrieval settings change" in text
    assert ('q000 "pergunta 0" [lost hit] gold card-q000 — → — · nDCG@5 1.000 → 0.000 · cause: the retrieval '
            "settings changed") in text
    assert "… and 2 more worse" in text
    assert "verdict: PASS (regressed, report only: no gate is on)" in text


def test_failing_gate_output_lists_the_reasons():
    text = render(GateSettings(fail_on_regression=True))
    assert ("gate: hit@5 on overall: dropped by 0.300 (12 lost, 0 gained of 40 paired; one-sided p < 0.001), "
            "more than the max drop 0.02"
            in text)
    assert text.rstrip().endswith("verdict: FAIL")


def test_other_metrics_are_left_to_all_rows():
    assert "2 more rows (other metrics)" in render(GateSettings())
    everything = render(GateSettings(), all_rows=True)
    assert "more rows" not in everything and "MRR@5" in everything


def test_an_unchanged_run_prints_no_what_changed_lines():
    from retrieval_gate.score.kb_manifest import KbCard

    manifest = {"card-q1": KbCard(sha="0" * 16, title="Q1")}
    before = make_results([make_case("q1", dict.fromkeys(METRICS, 1.0))], metrics=METRICS)
    before = before.model_copy(update={"kb_cards": manifest})
    base = update_baseline(baseline=None, results=before, sha=None, ref=None, timestamp=None)
    console = Console(record=True, width=100, force_terminal=False, color_system=None)
    comparison = compare(results=before, baseline=base, gate=GateSettings(), resamples=2_000, kb_before=manifest)
    assert comparison.kb_changes is not None and comparison.changed_cases == []
    print_comparison(comparison, console)
    assert "what changed" not in console.export_text() and "KB:" not in console.export_text()


def test_a_case_id_comes_with_its_question_shortened_and_without_controls():
    from retrieval_gate.compare.model import ChangedCase

    comp = comparison(GateSettings())
    long = "how do I reset my password when the \x1b[31mlink\x1b[0m expired and support is closed for the weekend?"
    first = comp.changed_cases[0]
    changed = [first.model_copy(update={"query": long}), *comp.changed_cases[1:]]
    assert isinstance(first, ChangedCase)
    console = Console(record=True, width=100, force_terminal=False, color_system=None)
    print_comparison(comp.model_copy(update={"changed_cases": changed}), console)
    text = console.export_text()
    line = next(t for t in text.splitlines() if t.strip().startswith(first.id + " "))
    assert '"how do I reset my password when the' in line and "…\" [lost hit]" in line
    assert "\x1b" not in text and "weekend" not in line
