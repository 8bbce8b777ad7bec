"""``label apply`` in sittings, through the CLI on a hand-made draft (no model needed): a second
download of the page holds every judgement of the first, a KB edit between sittings sets aside
the judgements of that one card (``stale.jsonl``) and applies the rest, a conflicting grade is
refused naming its line unless ``--prefer new|old``; and ``label apply`` / ``label agree`` are
strict about what a labels file may say (docs/golden-set.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.load.cases import load_cases
from tests.helpers import run_cli, write_lines

CARDS = ("tar", "df", "ls", "grep")


def _kb(root: Path, *, edited: str | None = None) -> Path:
    return write_lines(root / "kb.jsonl", *(json.dumps({"id": c, "title": f"T {c}", "text": f"how {c} works"
                                                        + (" (edited)" if c == edited else "")}) for c in CARDS))


def _sha(kb: Path) -> dict[str, str]:
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.score.kb_manifest import kb_manifest

    return {c: m.sha for c, m in kb_manifest(load_kb(kb).cards).items()}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, str]]:
    """A repository (the working folder, no config yet) with a KB of four cards and a draft of
    three queries pooling all four."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    kb = _kb(tmp_path)
    sha = _sha(kb)
    write_lines(tmp_path / "draft" / "draft.jsonl", *(json.dumps(
        {"id": f"log-{i}", "query": f"query {i}", "intent": "files" if i < 2 else "search", "count": 2,
         "log": "log.txt", "detect": 0.05, "pool": {"depth": 10, "systems": ["bm25", "dense"], "found": {}},
         "candidates": [{"card": c, "sha": sha[c]} for c in CARDS]}) for i in range(3)))
    return tmp_path, kb, sha


def _j(case: str, card: str, grade: object, sha: str, **more: object) -> dict:
    return {"case": case, "card": card, "grade": grade, "sha": sha, "at": "2026-01-01T00:00:00Z", **more}


def _apply(root: Path, capsys, *labels: Path, extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    return run_cli(["label", "apply", *map(str, labels), "--draft", str(root / "draft" / "draft.jsonl"),
                    "--cases", str(root / "cases.jsonl"), "--kb", str(root / "kb.jsonl"), *extra], capsys)


def _write(path: Path, *records: dict) -> Path:
    return write_lines(path, *(json.dumps(r) for r in records))


def _gold(root: Path) -> dict[str, tuple[str, ...]]:
    return {c.id: c.gold for c in load_cases(root / "cases.jsonl").cases}


def _sidecar(root: Path) -> set[tuple[str, str]]:
    path = root / "cases.not-relevant.jsonl"
    return {(o["case"], o["card"]) for o in map(json.loads, path.read_text().splitlines())} if path.exists() else set()


def _first_sitting(root: Path, sha: dict[str, str]) -> list[dict]:
    return [_j("log-0", "tar", 1, sha["tar"]), _j("log-0", "df", 0, sha["df"]),
            {"case": "log-1", "no_answer": True, "at": "2026-01-01T00:00:00Z"}]


def test_a_second_sitting_resends_the_first_and_only_the_new_judgements_are_applied(repo, capsys):
    root, _, sha = repo
    first = _first_sitting(root, sha)
    code, out, err = _apply(root, capsys, _write(root / "one.jsonl", *first))
    assert code == 0, err
    assert "already applied: 0" in out and "1 drafted queries not labelled yet" in out
    assert "next: open" in out.splitlines()[-1] and "label apply" in out.splitlines()[-1]
    second = [*first, _j("log-0", "ls", 1, sha["ls"]), _j("log-0", "grep", 0, sha["grep"]),
              _j("log-2", "tar", 1, sha["tar"])]
    code, out, err = _apply(root, capsys, _write(root / "two.jsonl", *second))
    assert code == 0, err
    assert "already applied: 3" in out and "set aside as stale: 0" in out
    assert "1 cases added, 1 cards added to cases that exist, 1 kept as not relevant" in out
    assert _gold(root) == {"log-0": ("tar", "ls"), "log-1": (), "log-2": ("tar",)}
    assert _sidecar(root) == {("log-0", "df"), ("log-0", "grep")}
    assert "0 drafted queries not labelled yet" in out and out.splitlines()[-1].startswith("next: retrieval-gate init")
    before = {p: p.read_bytes() for p in (root / "cases.jsonl", root / "cases.not-relevant.jsonl")}
    code, out, _ = _apply(root, capsys, root / "two.jsonl")  # a third time: nothing new
    assert code == 0 and "already applied: 6" in out and "wrote" not in out
    assert {p: p.read_bytes() for p in before} == before


def test_a_conflicting_grade_is_refused_naming_its_line_until_prefer_new_or_old_settles_it(repo, capsys):
    root, _, sha = repo
    assert _apply(root, capsys, _write(root / "one.jsonl", *_first_sitting(root, sha)))[0] == 0
    before = (root / "cases.jsonl").read_bytes(), (root / "cases.not-relevant.jsonl").read_bytes()
    changed = _write(root / "two.jsonl", _j("log-0", "ls", 1, sha["ls"]), _j("log-0", "tar", 0, sha["tar"]),
                     _j("log-0", "df", 1, sha["df"]), _j("log-1", "grep", 1, sha["grep"]))
    code, _, err = _apply(root, capsys, changed)
    assert code == 2
    assert "two.jsonl:2: log-0 tar: grade 0 here, the golden set holds grade 1" in err
    assert "two.jsonl:3: log-0 df: grade 1 here, the golden set holds grade 0" in err
    assert "two.jsonl:4: log-1 grep: relevant here, the golden set holds log-1 as a no-answer case" in err
    assert "two.jsonl:1" not in err and "--prefer new" in err
    assert ((root / "cases.jsonl").read_bytes(), (root / "cases.not-relevant.jsonl").read_bytes()) == before
    code, out, err = _apply(root, capsys, changed, extra=("--prefer", "old"))
    assert code == 0, err
    assert "kept by --prefer old: 3" in out and _gold(root)["log-0"] == ("tar", "ls") and _gold(root)["log-1"] == ()
    code, out, err = _apply(root, capsys, changed, extra=("--prefer", "new"))
    assert code == 0, err
    assert "replaced by --prefer new: 3" in out and "already applied: 1" in out
    assert _gold(root) == {"log-0": ("ls", "df"), "log-1": ("grep",)}
    assert _sidecar(root) == {("log-0", "tar")}


def test_one_edited_card_sets_aside_only_its_judgements_and_the_rest_is_applied(repo, capsys):
    root, _, sha = repo
    labels = _write(root / "labels.jsonl", *(_j(f"log-{i}", c, int(c == "tar" or (i == 2 and c == "ls")), sha[c])
                                            for i in range(3) for c in CARDS))
    _kb(root, edited="tar")  # merged between the sittings: the judged hash is the pool's, the KB's is new
    new_sha = _sha(root / "kb.jsonl")["tar"]
    code, out, err = _apply(root, capsys, labels)
    assert code == 0, err
    assert "set aside as stale: 3" in out and f"{root / 'draft' / 'stale.jsonl'}" in out
    assert f"labels.jsonl:1: set aside: card 'tar' of log-0 changed since it was judged (hash {sha['tar']} then, " \
           f"{new_sha} now)" in out
    stale = [json.loads(line) for line in (root / "draft" / "stale.jsonl").read_text().splitlines()]
    assert [(s["case_id"], s["card_id"], s["judged_sha"], s["kb_sha"], s["pool_sha"]) for s in stale] == [
        (f"log-{i}", "tar", sha["tar"], new_sha, sha["tar"]) for i in range(3)]
    assert stale[0]["judgement"] == _j("log-0", "tar", 1, sha["tar"], labeller="")
    assert _gold(root) == {"log-2": ("ls",)}  # log-0, log-1: every other card not relevant → left out
    assert _sidecar(root) == {(f"log-{i}", c) for i in range(3) for c in ("df", "ls", "grep")} - {("log-2", "ls")}
    again = _write(root / "again.jsonl", _j("log-0", "tar", 1, new_sha))  # the top-up's page: judged anew
    code, out, err = _apply(root, capsys, again)
    assert code == 0, err
    assert _gold(root)["log-0"] == ("tar",)
    left = [json.loads(line)["case_id"] for line in (root / "draft" / "stale.jsonl").read_text().splitlines()]
    assert left == ["log-1", "log-2"]  # the pair judged again is no longer offered


def test_a_query_whose_judgement_waits_in_stale_jsonl_is_still_said_to_wait_when_a_later_file_lacks_it(repo, capsys):
    """A redraft's page asks again for the edited card, so its download lacks the judgement set
    aside in an earlier sitting: that query waits on it still (not "judged with no card relevant"),
    and with nothing else left to label the next command is the top-up."""
    root, _, sha = repo
    rest = [_j("log-0", c, 0, sha[c]) for c in ("df", "ls", "grep")]
    others = [{"case": "log-1", "no_answer": True, "at": "2026-01-01T00:00:00Z"}, _j("log-2", "ls", 1, sha["ls"])]
    first = _write(root / "one.jsonl", _j("log-0", "tar", 1, sha["tar"]), *rest, *others)
    _kb(root, edited="tar")  # merged before the first file is applied: its tar judgement is stale
    code, out, err = _apply(root, capsys, first)
    assert code == 0, err
    assert "set aside as stale: 1" in out and "1 drafted queries not labelled yet (1 of them wait" in out
    code, out, err = _apply(root, capsys, _write(root / "two.jsonl", *rest, *others))  # tar not in it
    assert code == 0, err
    assert "already applied: 5, set aside as stale: 0" in out
    assert "1 drafted queries not labelled yet (1 of them wait on a card set aside as stale)" in out
    assert "judged with no card relevant" not in out
    last = out.splitlines()[-1]  # the top-up with every flag it needs (it runs as printed)
    assert last.startswith("next: retrieval-gate label top-up --stale ") and " --out top-up " in last
    assert "(it offers the 1 set-aside" in last


def test_without_a_draft_a_stale_judgement_goes_beside_the_labels_and_a_resent_one_counts_as_applied(repo, capsys):
    root, kb, sha = repo
    cases = write_lines(root / "cases.jsonl", '{"id": "q1", "query": "how?", "gold": ["tar"]}')
    labels = _write(root / "report" / "labels.jsonl", _j("q1", "ls", 1, sha["ls"]), _j("q1", "df", 0, "0ld"),
                    _j("q1", "gone", 1, "abc"))  # a card deleted since: stale too, never a whole-file refusal
    args = ["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert "1 added to the golden set" in out and "set aside as stale: 2" in out
    assert "labels.jsonl:3: set aside: card 'gone' of q1 changed since it was judged (hash abc then, gone from the KB" \
           in out
    stale = [json.loads(line) for line in (root / "report" / "stale.jsonl").read_text().splitlines()]
    assert [(s["card_id"], s["kb_sha"], s["pool_sha"]) for s in stale] == [("df", sha["df"], None),
                                                                           ("gone", None, None)]
    assert out.splitlines()[-1].startswith("next: retrieval-gate label top-up")
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and "already applied: 1" in out and "set aside as stale: 2" in out
    assert "wrote" not in out  # stale.jsonl holds them already


@pytest.mark.parametrize(("grade", "why"), [
    (True, "field 'grade': expected an integer grade (0 not relevant, 1 or more relevant), not true"),
    (1.5, "not 1.5"), ("1", "not \"1\""),
    (99, "grade 99 is off the scale: expected 0 (not relevant) or 1 (relevant)"),
    (2, "grade 2 is off the scale")])
def test_a_grade_that_is_no_integer_on_the_drafts_scale_is_exit_2_naming_its_line(repo, capsys, grade, why):
    root, _, sha = repo
    labels = _write(root / "labels.jsonl", _j("log-0", "df", 0, sha["df"]), _j("log-0", "tar", grade, sha["tar"]))
    code, _, err = _apply(root, capsys, labels)
    assert code == 2 and "labels.jsonl:2:" in err and why in err and "Traceback" not in err
    assert not (root / "cases.jsonl").exists() and not (root / "cases.not-relevant.jsonl").exists()


def test_a_graded_golden_set_takes_grades_up_to_the_pages_top(repo, capsys):
    root, _, sha = repo
    write_lines(root / "cases.jsonl", '{"id": "old", "query": "q", "gold": {"df": 2}}')
    code, _, err = _apply(root, capsys, _write(root / "l.jsonl", _j("log-0", "tar", 3, sha["tar"])))
    assert code == 0, err
    assert load_cases(root / "cases.jsonl").cases[1].grades == {"tar": 3}
    code, _, err = _apply(root, capsys, _write(root / "l.jsonl", _j("log-1", "tar", 4, sha["tar"])))
    assert code == 2 and "grade 4 is off the scale: expected 0 (not relevant) to 3" in err


def test_two_grades_for_one_pair_or_no_answer_beside_a_relevant_card_is_exit_2_naming_the_lines(repo, capsys):
    root, _, sha = repo
    labels = _write(root / "labels.jsonl", _j("log-0", "tar", 1, sha["tar"]), _j("log-0", "df", 0, sha["df"]),
                    _j("log-0", "tar", 0, sha["tar"]), _j("log-1", "ls", 1, sha["ls"]),
                    {"case": "log-1", "no_answer": True})
    code, _, err = _apply(root, capsys, labels)
    assert code == 2
    assert "labels.jsonl:1: log-0 tar: two grades for one card of one query (1 at line 1, 0 at line 3)" in err
    assert "labels.jsonl:3: log-0 tar: two grades" in err
    assert "labels.jsonl:5: log-1: 'no answer' (line 5) beside a card judged relevant (line 4)" in err
    assert "labels.jsonl:2" not in err and not (root / "cases.jsonl").exists()
    same = _write(root / "same.jsonl", _j("log-0", "tar", 1, sha["tar"]), _j("log-0", "tar", 1, sha["tar"]))
    code, out, err = _apply(root, capsys, same)  # the same judgement twice is one judgement
    assert code == 0 and "1 cases added" in out, err


def test_ids_the_draft_does_not_hold_are_exit_2_for_apply_and_for_agree(repo, capsys):
    root, _, sha = repo
    a = _write(root / "a.jsonl", _j("log-0", "tar", 1, sha["tar"]), _j("nope", "tar", 1, sha["tar"]),
               _j("log-1", "zz", 1, "x"))
    b = _write(root / "b.jsonl", _j("log-0", "tar", 1, sha["tar"]))
    code, _, err = _apply(root, capsys, a)
    assert code == 2 and "a.jsonl:2: case 'nope' is not in the draft" in err
    assert "a.jsonl:3: card 'zz' is not in the pool of 'log-1'" in err
    draft = str(root / "draft" / "draft.jsonl")
    code, out, err = run_cli(["label", "agree", str(a), str(b), "--draft", draft], capsys)
    assert code == 2 and "a.jsonl:2: case 'nope' is not in the draft" in err and "pairs judged" not in out
    bad = _write(root / "c.jsonl", _j("log-0", "tar", True, sha["tar"]))
    code, _, err = run_cli(["label", "agree", str(bad), str(b)], capsys)
    assert code == 2 and "c.jsonl:1:" in err and "expected an integer grade" in err
    code, out, _ = run_cli(["label", "agree", str(b), str(b), "--draft", draft], capsys)
    assert code == 0 and "1 pairs judged by both" in out


def test_prefer_takes_new_or_old_and_a_or_b_once_each(repo, capsys):
    root, _, sha = repo
    labels = _write(root / "l.jsonl", _j("log-0", "tar", 1, sha["tar"]))
    code, _, err = _apply(root, capsys, labels, extra=("--prefer", "newest"))
    assert code == 2 and "--prefer 'newest': expected new or old" in err
    code, _, err = _apply(root, capsys, labels, extra=("--prefer", "new", "--prefer", "old"))
    assert code == 2 and "at most one of new|old" in err


def test_a_beir_golden_set_in_two_sittings_gets_qrels_lines_regraded_and_dropped_in_place(repo, capsys):
    root, kb, sha = repo
    beir = root / "beir"
    write_lines(beir / "queries.jsonl", '{"_id": "q0", "text": "old"}')
    write_lines(beir / "qrels.tsv", "query-id\tcorpus-id\tscore", "q0\tdf\t2")  # graded
    args = ["--draft", str(root / "draft" / "draft.jsonl"), "--cases", str(beir), "--kb", str(kb)]
    one = _write(root / "one.jsonl", _j("log-0", "tar", 1, sha["tar"]), _j("log-0", "ls", 2, sha["ls"]))
    assert run_cli(["label", "apply", str(one), *args], capsys)[0] == 0
    two = _write(root / "two.jsonl", _j("log-0", "tar", 1, sha["tar"]), _j("log-0", "ls", 0, sha["ls"]),
                 _j("log-0", "grep", 3, sha["grep"]))
    code, _, err = run_cli(["label", "apply", str(two), *args], capsys)
    assert code == 2 and "two.jsonl:2: log-0 ls: grade 0 here, the golden set holds grade 2" in err
    code, out, err = run_cli(["label", "apply", str(two), *args, "--prefer", "new"], capsys)
    assert code == 0, err
    assert "already applied: 1" in out and "replaced by --prefer new: 1" in out
    assert (beir / "qrels.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore", "q0\tdf\t2", "log-0\ttar\t1", "log-0\tgrep\t3"]
    assert {c.id: c.grades for c in load_cases(beir).cases}["log-0"] == {"tar": 1, "grep": 3}
    assert json.loads((beir / "not-relevant.jsonl").read_text())["card"] == "ls"
