"""``files.dumps_json`` writes with orjson and must give the bytes the standard library gives
(``json.dumps(sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)``): the reference
here is the standard library itself, on random and on awkward data."""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import retrieval_gate
from retrieval_gate.files import dumps_json

SRC = Path(retrieval_gate.__file__).resolve().parents[1]


def reference(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def random_float(rng: random.Random) -> float:
    while True:
        if rng.random() < 0.5:
            value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        else:
            value = rng.uniform(-1, 1) * 10 ** rng.uniform(-12, 20)
        if math.isfinite(value):
            return value


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 5 else 6)
    if kind == 0:
        return random_float(rng)
    if kind == 1:
        return rng.choice([0.0, -0.0, 1e-4, 9.999e-05, 1e-05, 1e16, 1e-7, 0.1, 2.2e-16, 1.0])
    if kind == 2:
        return rng.randint(-(2**63), 2**63)
    if kind == 3:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 32), rng.randrange(0x80, 0x3000)]))
                       for _ in range(rng.randrange(6)))
    if kind == 4:
        return rng.choice([True, False, None])
    if kind == 5:
        return rng.choice(["", "é", "\u2028", "<b>", 'a"b\\c', "\x7f"])
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {f"k{rng.randrange(50)}{chr(rng.randrange(0x20, 0x500))}":
            random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.parametrize("seed", range(8))
def test_random_data_gives_the_standard_library_bytes(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        data = random_value(rng)
        assert dumps_json(data) == reference(data)


@pytest.mark.parametrize(
    "data",
    [
        {"scores": {"ndcg@10": 1e-05, "p": 2.5e-07, "delta": -3.1e-05, "big": 1.5e16, "ok": 0.0001}},
        {"nested": [[[{"x": [1e-05]}]]], "same": [0.5, 0.5]},
        {1: "int key", 2: "b"},  # json.dumps turns int keys into strings; orjson would refuse
        {"huge": 2**70, "neg": -(2**64)},  # beyond orjson's 64-bit integers
        {"a": [[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]},
        [],
        {},
        "plain",
    ],
    ids=["small-floats", "nested-small-float", "int-keys", "huge-ints", "deep", "empty-list", "empty-dict", "string"],
)
def test_awkward_data_gives_the_standard_library_bytes(data: Any) -> None:
    assert dumps_json(data) == reference(data)


def test_nesting_beyond_orjson_depth_falls_back_to_the_standard_library() -> None:
    data: Any = 0.5
    for _ in range(300):
        data = [data]
    assert dumps_json(data) == reference(data)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_a_non_finite_number_raises_as_the_standard_library_does(value: float) -> None:
    with pytest.raises(ValueError) as ours:
        dumps_json({"a": [1.0, {"b": value}]})
    with pytest.raises(ValueError) as theirs:
        reference({"a": [1.0, {"b": value}]})
    assert str(ours.value) == str(theirs.value)


def test_an_unsupported_type_raises_type_error_as_before() -> None:
    with pytest.raises(TypeError):
        dumps_json({"when": object()})


def test_without_orjson_the_standard_library_writes_the_same_bytes_and_the_folder_check_imports() -> None:
    """``python -S`` has no site-packages (no orjson, no pydantic): the store folder's check must
    still import (it runs under a bare system Python for a user who may not read the venv:
    tests/faults/test_foreign_store.py), and ``dumps_json`` must write what it writes with orjson."""
    rng = random.Random(7)
    data = [random_value(rng) for _ in range(200)]
    code = ("import json, sys\nimport retrieval_gate.store.folder\nfrom retrieval_gate import files\n"
            "assert files.orjson is None and 'pydantic' not in sys.modules\n"
            "sys.stdout.write(files.dumps_json(json.loads(sys.stdin.read())))")
    payload = json.dumps(data)
    done = subprocess.run([sys.executable, "-S", "-c", code], input=payload, capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC)}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == dumps_json(json.loads(payload)) == reference(json.loads(payload))
