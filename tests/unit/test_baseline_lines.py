"""``artifacts.baseline_lines.VersionReader``: each version reads as ``baseline_from_text`` reads the
whole text — a refresh that changed a few lines, one that added and removed cases, a reformatted
file, an id twice, a comma missing, a conflict marker inside the cases — and the manifest likewise."""

from __future__ import annotations

import json

import pytest

from retrieval_gate.artifacts.baseline import baseline_from_text, baseline_text, kb_manifest_text, manifest_from_text
from retrieval_gate.artifacts.baseline_lines import VersionReader, split_block
from retrieval_gate.errors import BaselineError
from retrieval_gate.score.kb_manifest import KbCard
from tests.history_repo import Refresh, make_baseline


def text_of(hits: dict[str, int]) -> str:
    return baseline_text(make_baseline(Refresh(cases={c: (h, 0.5 * h, [f"k-{c}"]) for c, h in hits.items()})))


def test_versions_read_as_the_codec_reads_them_whole() -> None:
    reader = VersionReader()
    versions = [text_of({"a": 1, "b": 1, "c": 0}), text_of({"a": 1, "b": 0, "c": 0}),
                text_of({"a": 1, "c": 1, "d": 1}), text_of({"a": 1, "b": 1, "c": 0})]
    read = [reader.baseline(t, source="v") for t in versions]
    assert read == [baseline_from_text(t, source="v") for t in versions]
    assert read[0].cases["a"] is read[1].cases["a"]  # the same line: the same parsed case
    assert list(read[2].cases) == ["a", "c", "d"]


@pytest.mark.parametrize("edit", ["reformatted", "duplicate", "comma", "conflict"])
def test_a_text_off_the_codecs_layout_is_read_whole(edit: str) -> None:
    reader = VersionReader()
    good = text_of({"a": 1, "b": 1})
    reader.baseline(good, source="v0")
    lines = good.split("\n")
    i = next(n for n, line in enumerate(lines) if line.startswith('    "a"'))
    if edit == "reformatted":
        text = json.dumps(json.loads(good), indent=4)
    elif edit == "duplicate":
        text = "\n".join([*lines[:i + 1], lines[i], *lines[i + 1:]])
    elif edit == "comma":
        text = "\n".join([*lines[:i], lines[i].rstrip(","), *lines[i + 1:]])
    else:
        text = "\n".join([*lines[:i], "<<<<<<< HEAD", *lines[i:]])
    try:
        expected = baseline_from_text(text, source="v1")
    except BaselineError as exc:
        with pytest.raises(BaselineError) as raised:
            reader.baseline(text, source="v1")
        assert str(raised.value) == str(exc)
    else:
        assert edit == "reformatted" and reader.baseline(text, source="v1") == expected


def test_the_manifest_reads_as_its_codec_reads_it() -> None:
    reader = VersionReader()
    texts = [kb_manifest_text({"k1": KbCard(sha="1" * 64, title="one"), "k2": KbCard(sha="2" * 64)}, suite="s"),
             kb_manifest_text({"k1": KbCard(sha="3" * 64, title="one"), "k3": KbCard(sha="4" * 64)}, suite="s")]
    assert [reader.manifest(t, source="m") for t in texts] == [manifest_from_text(t, source="m") for t in texts]


def test_split_block_by_hand() -> None:
    text = '{\n  "cases": {\n    "a": {"x": 1},\n    "b": {"x": 2}\n  },\n  "z": 1\n}\n'
    prefix, lines, suffix = split_block(text, opener='  "cases": {')
    assert lines == ['    "a": {"x": 1}', '    "b": {"x": 2}']
    assert prefix + ",\n".join(lines) + suffix == text
    assert split_block(text.replace('{"x": 1},', '{"x": 1}'), opener='  "cases": {') is None
