"""``label top-up`` end to end with the real CLI: two real BM25 runs of the examples (different
depth), the top-up draft folder, a simulated labeller, the real ``label apply --draft``, and a
second top-up that finds nothing left. Expected figures are counted from the files, not the code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import eval_bm25, example_repo, run_cli


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch)


_eval = eval_bm25


def _unjudged_by_hand(results: list[dict], *, depth: int, judged: dict[str, set[str]]) -> dict[str, set[str]]:
    """Every answerable case's cards in each run's top ``depth`` not judged (a no-answer case, empty
    gold, judged every card not relevant)."""
    out: dict[str, set[str]] = {}
    for r in results:
        for case in r["cases"]:
            if not case["gold"]:
                continue
            for card in case["retrieved"][:depth]:
                if card not in judged.get(case["id"], set()):
                    out.setdefault(case["id"], set()).add(card)
    return out


def _judged(repo: Path) -> dict[str, set[str]]:
    judged: dict[str, set[str]] = {}
    for line in (repo / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        judged[case["id"]] = set(case.get("gold") or [])
    sidecar = repo / "cases.not-relevant.jsonl"
    if sidecar.exists():
        for line in sidecar.read_text().splitlines():
            obj = json.loads(line)
            judged.setdefault(obj["case"], set()).add(obj["card"])
    return judged


def test_top_up_drafts_every_unjudged_card_and_label_apply_adds_them_to_the_cases(repo, capsys):
    first = _eval(capsys, "r1.json")
    second = _eval(capsys, "r2.json", "--k", "1,3,5")  # another run: keeps only its top 5
    # a "not relevant" judgement already in the sidecar is judged
    case0 = first["cases"][0]
    unjudged_card = next(c for c in case0["retrieved"] if c not in case0["gold"])
    manifest = first["kb_cards"]
    (repo / "cases.not-relevant.jsonl").write_text(json.dumps(
        {"case": case0["id"], "card": unjudged_card, "sha": manifest[unjudged_card]["sha"], "at": ""}) + "\n")
    want = _unjudged_by_hand([first, second], depth=4, judged=_judged(repo))
    assert unjudged_card not in want[case0["id"]]

    code, out, err = run_cli(["label", "top-up", "--results", "r1.json", "--results", "r2.json", "--out", "top-up",
                              "--depth", "4", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    lines = [json.loads(line) for line in (repo / "top-up" / "draft.jsonl").read_text().splitlines()]
    got = {e["id"]: {c["card"] for c in e["candidates"]} for e in lines}
    assert got == want
    total = sum(len(v) for v in want.values())
    assert f"cards to label: {total:,} in {len(want)} of 62 cases" in out
    assert all(e["top_up"] is True and e["pool"]["depth"] == 4 for e in lines)
    assert {f.name for f in (repo / "top-up").iterdir()} == {"draft.jsonl", "label.html", "draft.md"}
    assert "relative to these systems" in (repo / "top-up" / "draft.md").read_text()

    # a labeller: the first card of each case relevant, the others not
    labels = [{"case": e["id"], "card": c["card"], "sha": c["sha"], "grade": int(i == 0), "at": "2026-01-01T00:00:00Z"}
              for e in lines for i, c in enumerate(e["candidates"])]
    (repo / "labels.jsonl").write_text("".join(json.dumps(obj) + "\n" for obj in labels))
    before = {json.loads(line)["id"]: json.loads(line) for line in (repo / "cases.jsonl").read_text().splitlines()}
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "kb",
                              "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert f"0 cases added, {len(lines)} cards added to cases that exist" in out
    assert "relative to the pool" in out
    after = {json.loads(line)["id"]: json.loads(line) for line in (repo / "cases.jsonl").read_text().splitlines()}
    assert after.keys() == before.keys()  # no case added, none lost
    for e in lines:
        assert after[e["id"]]["gold"] == [*before[e["id"]]["gold"], e["candidates"][0]["card"]]

    code, out, err = run_cli(["label", "top-up", "--results", "r1.json", "--results", "r2.json", "--out", "again",
                              "--depth", "4", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert "cards to label: 0 in 0 of 62 cases" in out and "nothing to label" in out

    # applied again: the cases are there, the cards judged: nothing is added twice
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "kb",
                              "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    again = {json.loads(line)["id"]: json.loads(line) for line in (repo / "cases.jsonl").read_text().splitlines()}
    assert again == after


def test_a_top_up_draft_names_only_cases_the_golden_set_holds(repo, capsys):
    _eval(capsys, "r1.json")
    code, _, err = run_cli(["label", "top-up", "--results", "r1.json", "--out", "top-up", "--kb", "kb",
                            "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    entry = json.loads((repo / "top-up" / "draft.jsonl").read_text().splitlines()[0])
    card = entry["candidates"][0]
    (repo / "labels.jsonl").write_text(json.dumps({"case": entry["id"], "card": card["card"], "sha": card["sha"],
                                                   "grade": 1}) + "\n")
    kept = [line for line in (repo / "cases.jsonl").read_text().splitlines() if json.loads(line)["id"] != entry["id"]]
    (repo / "cases.jsonl").write_text("\n".join(kept) + "\n")
    code, _, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "kb",
                            "--cases", "cases.jsonl"], capsys)
    assert code == 2
    assert f"labels.jsonl:1: case {entry['id']!r} is not in the golden set" in err


def test_orphaned_and_stale_cases_are_drafted_again(repo, capsys):
    lines = (repo / "cases.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    gone = first["gold"][0]
    cards = {p.stem: p for p in (repo / "kb").rglob("*.md")}
    path = next(p for p in (repo / "kb").rglob("*.md") if gone in p.read_text() or p.stem == gone)
    path.unlink()
    assert cards  # the KB is a Markdown folder
    second = json.loads(lines[1])
    (repo / "stale.jsonl").write_text(json.dumps({"case_id": second["id"], "card_id": second["gold"][0],
                                                  "reason": "edited"}) + "\n")
    code, out, err = run_cli(["label", "top-up", "--orphaned", "--stale", "stale.jsonl", "--out", "top-up",
                              "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    drafted = {json.loads(x)["id"]: json.loads(x) for x in (repo / "top-up" / "draft.jsonl").read_text().splitlines()}
    assert first["id"] in drafted and gone not in {c["card"] for c in drafted[first["id"]]["candidates"]}
    assert [c["card"] for c in drafted[second["id"]]["candidates"]] == [second["gold"][0]]
    assert "orphaned cases" in out and "stale judgements offered again: 1" in out


def test_top_up_without_runs_or_with_a_bad_stale_line_is_refused(repo, capsys):
    code, _, err = run_cli(["label", "top-up", "--out", "top-up", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 2 and "--results" in err
    (repo / "stale.jsonl").write_text('{"case_id": 3}\n')
    code, _, err = run_cli(["label", "top-up", "--stale", "stale.jsonl", "--out", "top-up", "--kb", "kb",
                            "--cases", "cases.jsonl"], capsys)
    assert code == 2 and "stale.jsonl:1:" in err


def test_a_top_up_of_a_beir_golden_set_adds_qrels_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    """A BEIR folder (corpus, queries, qrels): the top-up's relevant cards become qrels lines of
    the cases already there; no query is added."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    beir = tmp_path / "beir"
    beir.mkdir()
    docs = {"d1": "refund to a credit card takes ten days", "d2": "card refunds show on the statement",
            "d3": "reset your password from the login page", "d4": "password links expire after one hour"}
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for d, t in docs.items()))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "card refund statement"}) + "\n"
                                        + json.dumps({"_id": "q2", "text": "password reset link"}) + "\n")
    (beir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    code, _, err = run_cli(["eval", "--kb", "beir", "--cases", "beir", "--retriever", "bm25", "--k", "1,2",
                            "--out", "r.json"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["label", "top-up", "--results", "r.json", "--out", "top-up", "--depth", "2",
                            "--kb", "beir", "--cases", "beir"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "top-up" / "draft.jsonl").read_text().splitlines()]
    asked = {e["id"]: sorted(c["card"] for c in e["candidates"]) for e in lines}
    assert asked == {"q1": ["d2"], "q2": ["d4"]}  # bm25's top 2 of each: the gold and its unjudged neighbour
    labels = [{"case": e["id"], "card": c["card"], "sha": c["sha"], "grade": 1} for e in lines for c in e["candidates"]]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    code, _, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "beir",
                            "--cases", "beir"], capsys)
    assert code == 0, err
    added = "q1\td2\t1\nq2\td4\t1\n"
    assert (beir / "qrels.tsv").read_text() == "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n" + added
    assert len((beir / "queries.jsonl").read_text().splitlines()) == 2
