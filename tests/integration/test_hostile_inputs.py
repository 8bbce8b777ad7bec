"""Hostile and careless inputs, command by command: each one exits 2 with one
``error: file[:line]: …`` line per problem naming the file, never a traceback, and leaves every
file that was there before byte-identical (nothing overwritten, no output written)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval_gate.cli import main

DEEP = "[" * 5000 + "]" * 5000
HUGE_INT = "7" * 5000
BILLION_LAUGHS = "\n".join(
    ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
       f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]" for i in range(8)]
    + ["---", "# Card", "text"])
RECURSIVE_ALIAS = "---\nloop: &x [*x]\n---\n# Card\ntext\n"


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def checksums(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class World:
    root: Path

    def path(self, name: str) -> str:
        return str(self.root / name)

    def write(self, name: str, text: str | bytes) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return str(path)

    def line(self, name: str, line: str, *, at: int = 2) -> str:
        """The file ``name`` with ``line`` inserted as line ``at``."""
        lines = (self.root / name).read_text(encoding="utf-8").splitlines()
        lines.insert(at - 1, line)
        return self.write(name, "\n".join(lines) + "\n")


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.chdir(tmp_path)  # no ./retrieval-gate.yml of the repository
    w = World(tmp_path)
    w.write("kb.jsonl", "".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in ("A", "B", "C")))
    w.write("cases.jsonl", json.dumps({"id": "c1", "query": "alpha", "gold": ["A"]}) + "\n"
            + json.dumps({"id": "c2", "query": "beta", "gold": ["B"]}) + "\n")
    w.write("run.jsonl", json.dumps({"id": "c1", "retrieved": ["A", "B"]}) + "\n"
            + json.dumps({"id": "c2", "retrieved": ["C", "B"]}) + "\n")
    w.write("run.trec", "c1 Q0 A 1 2.0 t\nc1 Q0 B 2 1.0 t\nc2 Q0 B 1 2.0 t\n")
    w.write("beir/queries.jsonl", json.dumps({"_id": "c1", "text": "alpha"}) + "\n")
    w.write("beir/qrels.tsv", "query-id\tcorpus-id\tscore\nc1\tA\t1\n")
    w.write("md/a.md", "---\nid: A\n---\n# A\ntext\n")
    assert run_cli(["score", "--run", w.path("run.jsonl"), "--cases", w.path("cases.jsonl"), "--kb",
                    w.path("kb.jsonl"), "--out", w.path("results.json")], capsys)[0] == 0
    assert run_cli(["baseline", "update", "--results", w.path("results.json"), "--baseline",
                    w.path("baseline.json"), "--sha", "s0"], capsys)[0] == 0
    return w


@dataclass(frozen=True)
class Hostile:
    """One hostile input: ``edit`` turns a file of the world into it; ``argv`` names files by
    ``{name}`` (relative to the world); the error must name ``named`` (at ``line``) and say ``text``."""

    argv: str
    named: str
    line: int | None
    text: str
    edit: tuple[str, str, str] | None = None  # (file, "insert2" | "insert3" | "write" | regex, new text)

    def apply(self, w: World) -> list[str]:
        if self.edit is not None:
            name, how, value = self.edit
            path = w.root / name
            if how == "write":
                w.write(name, value)
            elif how.startswith("insert"):
                w.line(name, value, at=int(how[-1]))
            else:
                new, count = re.subn(how, lambda _: value, path.read_text(encoding="utf-8"), count=1)
                assert count == 1, how
                w.write(name, new)
        return [w.path(part[1:-1]) if part.startswith("{") else part for part in self.argv.split()]


SCORE = "score --run {run.jsonl} --cases {cases.jsonl} --out {new.json}"
SCORE_TREC = "score --run {run.trec} --cases {cases.jsonl} --out {new.json}"
SCORE_BEIR = "score --run {run.jsonl} --cases {beir} --out {new.json}"
VALIDATE_MD = "validate --kb {md} --cases {cases.jsonl}"
UPDATE = "baseline update --results {results.json} --baseline {baseline.json}"
COMPARE = "compare --results {results.json} --baseline {baseline.json}"
REPORT = "report --results {results.json} --template {t.md.j2}"
EVAL = "eval --config {rg.yml} --kb {kb.jsonl} --cases {cases.jsonl} --retriever bm25 --out {e.json}"
EVAL_FLAGS = "eval --kb {kb.jsonl} --cases {cases.jsonl} --retriever bm25 --out {e.json}"

ROWS: dict[str, Hostile] = {
    # JSON the standard parser cannot take
    "cases line nested 5000 deep": Hostile(SCORE, "cases.jsonl", 2, "nested deeper", (
        "cases.jsonl", "insert2", '{"id": "d", "query": "q", "gold": ' + DEEP + "}")),
    "cases id of 5000 digits": Hostile(SCORE, "cases.jsonl", 2, "5,000 digits", (
        "cases.jsonl", "insert2", '{"id": ' + HUGE_INT + ', "query": "q"}')),
    "cases duplicate key gold": Hostile(SCORE, "cases.jsonl", 2, "duplicate key 'gold'", (
        "cases.jsonl", "insert2", '{"id": "d", "query": "q", "gold": ["A"], "gold": []}')),
    "cases NaN in a filter": Hostile(SCORE, "cases.jsonl", 2, "NaN is not allowed", (
        "cases.jsonl", "insert2", '{"id": "d", "query": "q", "filter": {"x": NaN}}')),
    "cases lone surrogate id": Hostile(SCORE, "cases.jsonl", 2, "lone surrogate", (
        "cases.jsonl", "insert2", '{"id": "\\ud800", "query": "q"}')),
    "run line nested 5000 deep": Hostile(SCORE, "run.jsonl", 2, "nested deeper", (
        "run.jsonl", "insert2", '{"id": "c9", "retrieved": ' + DEEP + "}")),
    "run id of 5000 digits": Hostile(SCORE, "run.jsonl", 2, "5,000 digits", (
        "run.jsonl", "insert2", '{"id": ' + HUGE_INT + ', "retrieved": []}')),
    "run latency NaN": Hostile(SCORE, "run.jsonl", 2, "NaN", (
        "run.jsonl", "insert2", '{"id": "c9", "retrieved": [], "latency_ms": NaN}')),
    "run latency 1e400": Hostile(SCORE, "run.jsonl", 2, "must be finite", (
        "run.jsonl", "insert2", '{"id": "c9", "retrieved": [], "latency_ms": 1e400}')),
    "run retrieved booleans": Hostile(SCORE, "run.jsonl", 2, "strings or integers", (
        "run.jsonl", "insert2", '{"id": "c9", "retrieved": [true, false]}')),
    "run id lone surrogate": Hostile(SCORE, "run.jsonl", 2, "lone surrogate", (
        "run.jsonl", "insert2", '{"id": "x\\udfff", "retrieved": []}')),
    "run duplicate key": Hostile(SCORE, "run.jsonl", 2, "duplicate key", (
        "run.jsonl", "insert2", '{"id": "c9", "retrieved": ["A"], "retrieved": []}')),
    "trec score inf": Hostile(SCORE_TREC, "run.trec", 2, "not a finite number", (
        "run.trec", "insert2", "c2 Q0 C 2 inf t")),
    "trec score 1e400": Hostile(SCORE_TREC, "run.trec", 2, "not a finite number", (
        "run.trec", "insert2", "c2 Q0 C 2 1e400 t")),
    "trec 10 MB token": Hostile(SCORE_TREC, "run.trec", 2, "(10,000,000 characters)", (
        "run.trec", "insert2", "c2 Q0 C 2 " + "9x" * 5_000_000 + " t")),
    "qrels score inf": Hostile(SCORE_BEIR, "qrels.tsv", 3, "not a finite number", (
        "beir/qrels.tsv", "insert3", "c1\tB\tinf")),
    "qrels score 1e400": Hostile(SCORE_BEIR, "qrels.tsv", 3, "not a finite number", (
        "beir/qrels.tsv", "insert3", "c1\tB\t1e400")),
    "kb line nested 5000 deep": Hostile("validate --kb {kb.jsonl} --cases {cases.jsonl}",
        "kb.jsonl", 2, "nested deeper", (
        "kb.jsonl", "insert2", '{"id": "D", "text": "t", "metadata": {"x": ' + DEEP + "}}")),
    # YAML that expands
    "front matter billion laughs": Hostile(VALIDATE_MD, "b.md", 2, "anchors and aliases", (
        "md/b.md", "write", BILLION_LAUGHS)),
    "front matter recursive alias": Hostile(VALIDATE_MD, "b.md", 2, "anchors and aliases", (
        "md/b.md", "write", RECURSIVE_ALIAS)),
    "front matter lone surrogate": Hostile(VALIDATE_MD, "b.md", 1, "lone surrogate", (
        "md/b.md", "write", '---\ntitle: "\\ud800"\n---\n# B\ntext\n')),
    # flags and outputs
    "score abstain threshold nan": Hostile(SCORE + " --abstain-threshold nan", "<flags>", None, "abstain_threshold"),
    "score --out onto --cases": Hostile("score --run {run.jsonl} --cases {cases.jsonl} --out {cases.jsonl}",
                                        "cases.jsonl", None, "refusing to overwrite"),
    "score --out onto --run": Hostile("score --run {run.jsonl} --cases {cases.jsonl} --out {run.jsonl}",
                                      "run.jsonl", None, "refusing to overwrite"),
    "score run matching no case": Hostile(SCORE, "run.jsonl", None, "none of the 2 cases", (
        "run.jsonl", "write", '{"id": "other", "retrieved": ["A"]}\n')),
    # results and baselines
    "baseline update results NaN": Hostile(UPDATE, "results.json", None, "NaN", (
        "results.json", r'"value": [0-9.]+', '"value": NaN')),
    "baseline update results nested 5000 deep": Hostile(UPDATE, "results.json", None, "nested deeper", (
        "results.json", r'"extras": \{\}', '"extras": {"x": ' + DEEP + "}")),
    "baseline update results duplicate key": Hostile(UPDATE, "results.json", None, "duplicate key 'suite'", (
        "results.json", r'"suite": "default"', '"suite": "default", "suite": "x"')),
    "baseline update baseline NaN": Hostile(UPDATE, "baseline.json", None, "NaN", (
        "baseline.json", r'"n": ?[0-9]+', '"n": NaN')),
    "baseline update timestamp not ISO": Hostile(UPDATE + " --timestamp yesterday';DROP", "--timestamp", None,
                                                 "ISO 8601"),
    "baseline update --baseline onto --results": Hostile("baseline update --results {results.json} "
                                                         "--baseline {results.json}", "results.json", None,
                                                         "refusing to overwrite"),
    "compare max drop inf": Hostile(COMPARE + " --max-drop hit@5=inf --out {c.json}", "--max-drop", None, "finite"),
    "compare results 1e400": Hostile(COMPARE, "results.json", None, "must be finite", (
        "results.json", r'"value": [0-9.]+', '"value": 1e400')),
    "compare --out onto --baseline": Hostile(COMPARE + " --out {baseline.json}", "baseline.json", None,
                                             "refusing to overwrite"),
    # custom templates
    "report template past the range cap": Hostile(REPORT, "t.md.j2", 3, "OverflowError", (
        "t.md.j2", "write", "{{ marker }}\nline 2\n{% for i in range(10**9) %}{% endfor %}\n")),
    "report template dividing by zero": Hostile(REPORT, "t.md.j2", 2, "ZeroDivisionError", (
        "t.md.j2", "write", "{{ marker }}\n{{ 1 // 0 }}\n")),
    # config files (eval reads them before any work)
    "config metrics scalar": Hostile(EVAL, "rg.yml", None, "suites.default.metrics", (
        "rg.yml", "write", "suites:\n  default:\n    metrics: 5\n")),
    "config k of booleans": Hostile(EVAL, "rg.yml", None, "suites.default.k", (
        "rg.yml", "write", "suites:\n  default:\n    k: [true]\n")),
    "config bad retriever option": Hostile(EVAL, "rg.yml", None, "options.rrf_k", (
        "rg.yml", "write", "suites:\n  default:\n    options: {rrf_k: many}\n")),
    "config billion laughs": Hostile(EVAL, "rg.yml", None, "expands to more than", (
        "rg.yml", "write", BILLION_LAUGHS.split("---")[1] + "suites: {}\n")),
    "config recursive alias": Hostile(EVAL, "rg.yml", 1, "recursive alias", (
        "rg.yml", "write", "x: &x [*x]\nsuites: {}\n")),
    "config lone surrogate": Hostile(EVAL, "rg.yml", None, "lone surrogate", (
        "rg.yml", "write", 'suites:\n  "\\udc80": {}\n')),
    "eval abstain threshold nan": Hostile(EVAL_FLAGS + " --abstain-threshold nan",
        "<flags>", None, "abstain_threshold"),
    "eval run file matching no case": Hostile(
        "eval --kb {kb.jsonl} --cases {cases.jsonl} --retriever run:other.jsonl --ephemeral --out {e.json}",
        "other.jsonl", None, "none of the 2 cases", ("other.jsonl", "write", '{"id": "zz", "retrieved": ["A"]}\n')),
    "eval --out onto --kb": Hostile("eval --kb {kb.jsonl} --cases {cases.jsonl} --retriever bm25 --out {kb.jsonl}",
                                    "kb.jsonl", None, "refusing to overwrite"),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_hostile_input_exits_2_naming_the_file_and_changes_nothing(name: str, world: World, capsys) -> None:
    row = ROWS[name]
    argv, named, line, text = row.apply(world), row.named, row.line, row.text
    before = checksums(world.root)
    code, _, err = run_cli(argv, capsys)
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    first = next(ln for ln in err.splitlines() if ln.startswith("error:"))
    assert named in first
    if line is not None:
        assert f"{named}:{line}:" in first, first
    assert text in err, err
    assert len(err) < 2000  # a 10 MB token is never echoed back whole
    assert checksums(world.root) == before


@pytest.mark.parametrize(
    ("argv_tail", "flag"),
    [
        (["baseline", "update", "--history-limit", "0"], "--history-limit"),
        (["compare", "--seed", "-1"], "--seed"),
        (["eval", "--chunk-size", "0"], "--chunk-size"),
        (["eval", "--batch-size", "-5"], "--batch-size"),
        (["eval", "--chroma-port", "70000"], "--chroma-port"),
        (["eval", "--overfetch", "0"], "--overfetch"),
    ],
)
def test_numeric_knobs_out_of_range_are_usage_errors(argv_tail: list[str], flag: str, world: World, capsys) -> None:
    command = argv_tail[:2] if argv_tail[0] == "baseline" else argv_tail[:1]
    rest = argv_tail[len(command):]
    pair = ["--results", world.path("results.json"), "--baseline", world.path("baseline.json")]
    needed = {"baseline": pair, "compare": pair,
              "eval": ["--kb", world.path("kb.jsonl"), "--cases", world.path("cases.jsonl"),
                       "--out", world.path("e.json")]}
    before = checksums(world.root)
    code, _, err = run_cli([*command, *needed[command[0]], *rest], capsys)
    assert code == 2 and flag in err and "Traceback" not in err
    assert checksums(world.root) == before


def test_a_scalar_k_in_the_config_is_the_one_element_list(world: World, capsys) -> None:
    world.write("rg.yml", "suites:\n  default:\n    k: 3\n")
    code, _, err = run_cli(["eval", "--config", world.path("rg.yml"), "--kb", world.path("kb.jsonl"), "--cases",
                            world.path("cases.jsonl"), "--retriever", f"run:{world.path('run.jsonl')}", "--ephemeral",
                            "--out", world.path("e.json")], capsys)
    assert code == 0, err
    assert json.loads((world.root / "e.json").read_text())["k"] == [3]


def test_config_anchors_and_merge_keys_still_work(world: World, capsys) -> None:
    world.write("rg.yml", "suites:\n  base: &common {k: [1, 2]}\n  default:\n    <<: *common\n")
    code, _, err = run_cli(["eval", "--config", world.path("rg.yml"), "--kb", world.path("kb.jsonl"), "--cases",
                            world.path("cases.jsonl"), "--retriever", f"run:{world.path('run.jsonl')}", "--ephemeral",
                            "--out", world.path("e.json")], capsys)
    assert code == 0, err
    assert json.loads((world.root / "e.json").read_text())["k"] == [1, 2]
