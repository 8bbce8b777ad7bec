"""The badge's colours are told apart: the label's grey and each state's colour (up, down, no
significant change, no step yet) differ from one another by a clear distance in RGB."""

from __future__ import annotations

import itertools

from retrieval_gate.render.badge import BADGE_COLOURS, LABEL_COLOUR


def _rgb(colour: str) -> tuple[int, ...]:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))


def test_every_badge_colour_is_apart_from_the_label_and_the_others() -> None:
    colours = {"label": LABEL_COLOUR, **BADGE_COLOURS}
    for (a, x), (b, y) in itertools.combinations(colours.items(), 2):
        distance = sum((p - q) ** 2 for p, q in zip(_rgb(x), _rgb(y), strict=True)) ** 0.5
        assert distance >= 60, (a, b, distance)
    # the old pair, #555 beside #57606a, was 24 apart
    assert sum((p - q) ** 2 for p, q in zip(_rgb("#555"), _rgb("#57606a"), strict=True)) ** 0.5 < 25
