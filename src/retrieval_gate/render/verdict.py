"""The words of a report: the verdict, the gate in force, the statistics used. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_gate.compare.model import Baseline, Comparison
from retrieval_gate.render.cells import Cell


def verdict(*, comparison: Comparison | None, baseline: Baseline | None, headline: Sequence[Cell],
            worse: Sequence[tuple[str, Cell]] = ()) -> dict[str, str]:
    """``kind``: first_run, not_compared, fail (the gate failed), regressed (a headline metric
    overall: a judged row, Holm-corrected), mixed (something else got worse: ``worse`` holds only
    rows that count — judged ones, and reported ones significant after Holm over the reported
    rows, ``render.cells.worse_cells``), improved (a headline metric overall, nothing worse),
    unchanged."""
    if comparison is None:
        if baseline is None:
            return {"kind": "first_run", "emoji": "🆕", "title": "first run, no baseline yet"}
        return {"kind": "not_compared", "emoji": "ℹ️", "title": "not compared with the baseline"}
    if comparison.verdict == "fail":
        return {"kind": "fail", "emoji": "❌", "title": "gate failed"}
    improved = any(c.status == "improved" for c in headline)
    if any(c.bad for c in headline):
        return {"kind": "regressed", "emoji": "🔴", "title": "regressed"}
    if worse or comparison.regressed:
        title = "better overall, worse in places" if improved else "worse in places"
        return {"kind": "mixed", "emoji": "🟠", "title": title}
    if improved:
        return {"kind": "improved", "emoji": "🟢", "title": "improved"}
    return {"kind": "unchanged", "emoji": "⚪", "title": "no significant change"}


def gate_active(gate: Mapping[str, Any]) -> bool:
    return bool(gate.get("fail_on_regression") or gate.get("max_drop") or gate.get("floors"))


def gate_summary(gate: Mapping[str, Any]) -> str:
    """One line describing the gate knobs in force ("off (report only)" when none is on)."""
    parts = []
    if gate.get("fail_on_regression"):
        text = "fail on regression"
        if gate.get("default_max_drop") is not None:
            text += f" (max drop {gate['default_max_drop']:g}"
            text += ", significant drops only)" if gate.get("require_significance", True) else ")"
        parts.append(text)
    if gate.get("max_drop"):
        parts.append("max drop " + ", ".join(f"{k} {v:g}" for k, v in sorted(gate["max_drop"].items())))
    if gate.get("floors"):
        parts.append("floors " + ", ".join(f"{k} ≥ {v:g}" for k, v in sorted(gate["floors"].items())))
    return "; ".join(parts) if parts else "off (report only)"


CORRECTION_WORDS = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no"}


def correction_text(stats: Mapping[str, Any]) -> str:
    """``Holm-adjusted over the 3 judged rows`` (empty for a comparison from before corrections)."""
    method = stats.get("correction")
    if method is None:
        return ""
    judged = int(stats.get("judged_rows", 0))
    rows = f"the {judged} judged row{'s' if judged != 1 else ''}"
    if method == "none":
        return f"not corrected over {rows}"
    return f"{CORRECTION_WORDS.get(method, method)}-adjusted over {rows}"


def stats_note(stats: Mapping[str, Any]) -> str:
    """The terminal's one-line legend of the CI, p and MDE columns."""
    level = float(stats.get("ci_level", 0.95))
    if stats.get("correction") is None:  # a comparison file from before schema 2
        return f"CI {level:.0%} paired bootstrap; p: sign-flip test."
    if stats.get("ci_level_judged") is None:  # schema 2
        return (f"CI: the sign-flip test inverted at {level:.0%} (judged rows: at the level the correction "
                f"leaves them); p: sign-flip test, judged rows {correction_text(stats)}; MDE: minimum "
                f"detectable effect at n (power {stats.get('power', 0.8):g}).")
    judged = float(stats["ci_level_judged"])
    return (f"CI at {100 * level:.3g}%, judged rows at {100 * judged:.3g}% (Bonferroni): Tango's score interval "
            f"for hit-like (0/1) measures, else a paired t interval (Tango's on fractional counts under 6 "
            f"changed cases); ‡: the CI and the test disagree about 0, the status reads the test. p: exact "
            f"sign test (0/1 measures) or sign-flip test, judged rows {correction_text(stats)}. MDE: the "
            f"smallest true drop the row's test detects at power {stats.get('power', 0.8):g} at its n.")


def stats_line(stats: Mapping[str, Any]) -> str:
    """``paired percentile bootstrap, 10,000 resamples, seed 0`` from a comparison's stats."""
    method = stats.get("ci") or stats.get("method")
    if not method:
        return ""
    parts = [str(method)]
    if correction_text(stats):
        parts.append(f"p of judged rows {correction_text(stats)}")
    if stats.get("resamples"):
        parts.append(f"{int(stats['resamples']):,} resamples")
    if stats.get("seed") is not None:
        parts.append(f"seed {stats['seed']}")
    return ", ".join(parts)


POWER_SLICES_SHOWN = 5


def power_summary(*, overall: Cell | None, slices: Sequence[tuple[str, Cell]]) -> dict[str, Any] | None:
    """The comment's one power sentence: what the primary metric's overall row detects
    (``mde`` at 80 % power, None: no drop detectable), its max drop, and the slices (``(label,
    cell)``, smallest n first) whose MDE exceeds their max drop. None without a compared row."""
    if overall is None or not overall.compared or overall.n == 0:
        return None
    short = [(label, cell) for label, cell in slices if cell.compared and cell.n > 0 and cell.max_drop is not None
             and (cell.mde is None or cell.mde > cell.max_drop + 1e-12)]
    short.sort(key=lambda item: (item[1].n, item[0]))
    return {"display": overall.display, "n": overall.n, "mde": overall.mde, "max_drop": overall.max_drop,
            "judged": overall.gated, "slices": [{"label": label, "n": cell.n, "mde": cell.mde}
                                                 for label, cell in short[:POWER_SLICES_SHOWN]],
            "more_slices": max(0, len(short) - POWER_SLICES_SHOWN)}
