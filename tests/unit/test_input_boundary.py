"""The input boundary's limits (load/boundary.py) and the YAML loader (load/yamltext.py), one
rule per row, each checked on both sides of its limit."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from retrieval_gate.load import boundary
from retrieval_gate.load.yamltext import MAX_EXPANDED_NODES, safe_load


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[" * 64 + "]" * 64, json.loads("[" * 64 + "]" * 64)),
        ('{"a": "' + "[" * 500 + '"}', {"a": "[" * 500}),  # brackets inside strings do not nest
        ('{"id": "\\ud83d\\ude00"}', {"id": "\U0001F600"}),  # a valid surrogate pair is one character
        ("1" * 100, int("1" * 100)),
        ("-1e308", -1e308),
        ('{"a": 1, "b": {"a": 2}}', {"a": 1, "b": {"a": 2}}),  # the same key in two objects is fine
    ],
)
def test_inputs_inside_the_limits_parse_as_json_would(text: str, value: object) -> None:
    assert boundary.loads(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),
        ('{"a": ' * 65 + "1" + "}" * 65, "nested deeper than 64 levels"),
        ("1" * 101, "integer of 101 digits"),
        ("[NaN]", "NaN is not allowed"),
        ("[Infinity]", "Infinity is not allowed"),
        ("[-Infinity]", "-Infinity is not allowed"),
        ("[1e400]", "number '1e400' is out of range"),
        ('{"gold": ["A"], "gold": []}', "duplicate key 'gold'"),
        ('["\\ud800"]', "lone surrogate"),
        ('{"\\udfff": 1}', "lone surrogate"),
    ],
)
def test_inputs_outside_the_limits_are_refused(text: str, message: str) -> None:
    with pytest.raises(boundary.JsonRefused, match=message.replace("(", r"\(").replace("[", r"\[")):
        boundary.loads(text)


def test_a_refusal_locates_its_line_in_a_document() -> None:
    text = '{\n  "a": 1,\n  "b": NaN\n}'
    with pytest.raises(boundary.JsonRefused) as caught:
        boundary.loads(text)
    assert boundary.line_of(text, caught.value.needle) == 3


def test_quote_cuts_long_values_and_says_how_long() -> None:
    assert boundary.quote("short") == "'short'"
    quoted = boundary.quote("x" * 10_000_000)
    assert len(quoted) < 120 and quoted.endswith("… (10,000,000 characters)")


def test_yaml_merge_keys_and_aliases_work_in_config_files() -> None:
    data = safe_load("base: &b {k: [1, 2]}\nsuite:\n  <<: *b\n  model: m\n", aliases=True)
    assert data == {"base": {"k": [1, 2]}, "suite": {"k": [1, 2], "model": "m"}}


def test_yaml_expansion_is_capped_in_config_files() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]  # 10^6 values
    with pytest.raises(yaml.YAMLError, match=f"more than {MAX_EXPANDED_NODES:,} values"):
        safe_load("\n".join(levels), aliases=True)
    assert safe_load("\n".join(levels[:4]), aliases=True)["a3"][0][0][0] == ["x"] * 10  # 10^4: fine


def test_a_recursive_yaml_alias_is_refused() -> None:
    with pytest.raises(yaml.YAMLError, match="recursive alias") as caught:
        safe_load("ok: 1\nloop: &x [1, *x]\n", aliases=True)
    assert caught.value.problem_mark.line + 1 == 2


@pytest.mark.parametrize("text", ["a: &x 1\nb: 2\n", "a: 1\nb: *x\n", "a: &x [1]\nb: *x\n"])
def test_front_matter_refuses_anchors_and_aliases(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="anchors and aliases"):
        safe_load(text, aliases=False)


def test_yaml_nested_past_the_parser_is_an_error_not_a_crash() -> None:
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        safe_load("[" * 5000 + "]" * 5000, aliases=False)


FRONT_MATTER = [
    "title: Refunds\ndoc_type: policy\n",
    "title: 'Quoted: with colon'\ntags: [a, b]\nsection: 2\n",
    "date: 2024-01-31\nratio: 0.5\nflag: yes\nempty:\nnull_value: ~\n",
    "nested:\n  a: 1\n  b: [x, {c: d}]\n",
    "multi: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "unicode: 'São Paulo — ação'\nkey with spaces: v\n",
    "octal: 0o17\nhex: 0x1F\nsexagesimal: 1:30\ninf: .inf\n",
]


@pytest.mark.parametrize("text", FRONT_MATTER)
def test_front_matter_parsed_by_libyaml_equals_the_python_loader(text: str) -> None:
    python_value = yaml.load(text, Loader=yaml.SafeLoader)  # the reference: PyYAML's pure-Python loader
    assert safe_load(text, aliases=False) == python_value


@pytest.mark.parametrize("text", ["a: [1, 2\n", "a: b: c\n", "key: 'open\n", "- a\nb: c\n", "a:\n\t- tab\n"])
def test_front_matter_errors_are_the_python_loaders_with_the_same_line(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as reference:
        yaml.load(text, Loader=yaml.SafeLoader)
    with pytest.raises(yaml.YAMLError) as ours:
        safe_load(text, aliases=False)
    assert str(ours.value) == str(reference.value)


@pytest.mark.parametrize("depth", [1, 31, 32, 33, 200])
def test_deep_front_matter_takes_the_python_loader_and_parses_the_same(depth: int) -> None:
    text = "a: " + "[" * depth + "x" + "]" * depth + "\n"
    assert safe_load(text, aliases=False) == yaml.load(text, Loader=yaml.SafeLoader)


def _reference_depth_exceeds(text: str, limit: int) -> bool | None:
    """The depth rule read one character at a time: None where a closer has nothing to close
    (the parser's syntax error, where the streaming check may answer either way)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
            if depth < 0:
                return None
    return False


def test_the_streaming_depth_check_agrees_with_a_character_scan_on_random_texts_and_windows() -> None:
    rng = random.Random(46)
    alphabet = ["[", "]", "{", "}", '"', "\\", "a", ",", ":", " ", "é", "\n"]
    compared = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 160)))
        limit = rng.randint(1, 8)
        expected = _reference_depth_exceeds(text, limit)
        if expected is None:
            continue
        for window in (1, 2, 3, 7, 50, boundary.DEPTH_WINDOW_CHARS):
            assert boundary.json_depth_exceeds(text, limit, window=window) is expected, (text, limit, window)
        compared += 1
    assert compared > 600


@pytest.mark.parametrize("window", [1, 5, 64, boundary.DEPTH_WINDOW_CHARS])
def test_the_depth_check_counts_nesting_across_windows_and_skips_strings(window: int) -> None:
    deep = '{"a": "x\\"[", "b": ' + "[" * 64 + '"]]]\\\\"' + "]" * 64 + "}"  # 65 levels, brackets in strings
    assert boundary.json_depth_exceeds(deep, window=window)
    shallow = '{"a": "' + "[" * 500 + '\\"{{{", "b": ' + "[" * 63 + "1" + "]" * 63 + "}"  # 64 levels
    assert not boundary.json_depth_exceeds(shallow, window=window)
    assert boundary.loads(shallow)["a"] == "[" * 500 + '"{{{'


# The check runs in a child capped at 400 MB of address space: a 5 MB string of brackets or
# 5 MB of short strings fits in a few windows; the regex it replaces kept ~115 bytes per
# character of a string (≈ 600 MB here) and the string substitution one object per string.
_CAPPED_CHECK = """
import resource, sys
from retrieval_gate.load import boundary
long_string = '{"query": "' + "word [x] {y} " * 400_000 + '", "gold": [' + "[" * 64 + "]" * 64 + "]}"
short_strings = "[" + '["ab", "c\\\\"d"], ' * 300_000 + "[]]"
resource.setrlimit(resource.RLIMIT_AS, (400 * 1024**2, 400 * 1024**2))
print(boundary.json_depth_exceeds(long_string), boundary.json_depth_exceeds(short_strings),
      boundary.json_depth_exceeds(long_string[:-2] + "[]]}"))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_the_depth_check_of_a_5_mb_text_fits_in_a_small_address_space() -> None:
    done = subprocess.run([sys.executable, "-c", _CAPPED_CHECK], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(boundary.__file__).parents[2])}, check=False)
    assert (done.returncode, done.stdout.split()) == (0, ["True", "False", "True"]), done.stderr[-2000:]
