"""Each settings rule is the model's, so a config file fails where a flag would: exit 2 naming the
file and the key's line (a config file) or the flag, before anything is read, embedded or written.
The commands run through the CLI on the bundled example KB; every case fails before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
KB, CASES = ROOT / "examples" / "kb", ROOT / "examples" / "cases.jsonl"

# (the suite's lines in the config file, the line of the bad key, what the error says,
#  the flags that break the same rule)
RULES = [
    (["chunking:", "  size: 300", "  overlap: 300"], 4,
     "chunking: chunk overlap (300) must be smaller than chunk size (300)",
     ["--chunk-size", "300", "--chunk-overlap", "300"]),
    (["k: [1, 3]", "headline_k: 5"], 5, "headline_k 5 is not one of the cutoffs k [1, 3]",
     ["--k", "1,3", "--headline-k", "5"]),
    (["batch_size: 0"], 4, "batch_size: Input should be greater than or equal to 1", ["--batch-size", "0"]),
    (["overfetch: 1001"], 4, "overfetch: Input should be less than or equal to 1000", ["--overfetch", "1001"]),
    (["chunking:", "  size: 49"], 5, "chunking.size: Input should be greater than or equal to 50",
     ["--chunk-size", "49"]),
]


def _config(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "retrieval-gate.yml"
    path.write_text("suites:\n  default:\n    kb: kb\n" + "".join(f"    {line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(("lines", "line", "message", "flags"), RULES, ids=["overlap", "headline_k", "batch_size",
                                                                            "overfetch", "chunk_size"])
def test_a_config_file_breaking_a_rule_fails_as_the_flag_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              lines: list[str], line: int, message: str,
                                                              flags: list[str]) -> None:
    config = _config(tmp_path, lines)
    out = tmp_path / "r.json"
    code, _, err = run_cli(["eval", "--config", str(config), "--cases", str(CASES), "--out", str(out)], capsys)
    assert code == 2, err
    assert err.startswith(f"error: {config}:{line}: "), err
    assert message in err and "Traceback" not in err
    code, _, err = run_cli(["eval", "--kb", str(KB), "--cases", str(CASES), *flags, "--out", str(out)], capsys)
    assert code == 2 and "Traceback" not in err
    assert flags[0] in err or "<flags>" in err, err  # blamed on the flags, not on a file
    assert not out.exists()


def test_every_command_reading_the_suite_refuses_the_broken_config(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``validate`` (which embeds nothing) and ``embed`` read the same suite: the rule is checked
    when the file is read, not while chunking."""
    config = _config(tmp_path, ["chunking:", "  size: 300", "  overlap: 400"])
    for argv in (["validate", "--config", str(config), "--kb", str(KB), "--cases", str(CASES)],
                 ["embed", "--config", str(config), "--shard", "1/2", "--out", str(tmp_path / "shard")]):
        code, _, err = run_cli(argv, capsys)
        assert code == 2, (argv, err)
        assert f"{config}:4: suites.default.chunking: chunk overlap (400) must be smaller than chunk size (300)" \
            in err, err
    assert not (tmp_path / "shard").exists()


def test_embed_checks_the_batch_size_as_eval_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["embed", "--kb", str(KB), "--shard", "1/1", "--batch-size", "0",
                            "--out", str(tmp_path / "shard")], capsys)
    assert code == 2 and "--batch-size" in err
    assert not (tmp_path / "shard").exists()


def test_a_flag_over_the_file_s_value_is_blamed_on_the_flag(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The file's overlap is fine for its size; a smaller ``--chunk-size`` breaks the rule: both named."""
    config = _config(tmp_path, ["chunking:", "  size: 300", "  overlap: 100"])
    code, _, err = run_cli(["eval", "--config", str(config), "--cases", str(CASES), "--chunk-size", "100",
                            "--out", str(tmp_path / "r.json")], capsys)
    assert code == 2
    assert f"{config} and <flags>: chunking: chunk overlap (100) must be smaller than chunk size (100)" in err, err
