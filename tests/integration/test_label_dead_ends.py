"""The labelling loop has no dead ends, end to end with the real CLI on
the examples (a Markdown KB, 62 hand-labelled cases) and real BM25 runs:

- a "not relevant" judgement of a card edited since is stale like any other judgement: scoring
  counts the card unjudged, ``label top-up`` offers it again, re-applying the old download sets it
  aside as stale;
- re-judging an orphaned case (``label top-up --orphaned``, then ``label apply``) replaces its gone
  gold id, so recall reads the new gold and ``validate --strict`` passes;
- ``label top-up --out`` onto a draft folder that is there already is refused unless ``--force``.

Expected figures are counted from the files by hand, not by the code under test."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli import COMMAND_MODULES
from tests.helpers import eval_bm25, example_repo, run_cli


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch)


_eval = eval_bm25


def _card_file(repo: Path, card: str) -> Path:
    """The Markdown file whose front matter names ``card``."""
    return next(p for p in (repo / "kb").rglob("*.md") if f"\nid: {card}\n" in "\n" + p.read_text())


def _cases_of(path: Path) -> dict[str, dict]:
    return {json.loads(line)["id"]: json.loads(line) for line in path.read_text().splitlines()}


def _cases(repo: Path) -> dict[str, dict]:
    return _cases_of(repo / "cases.jsonl")


def _write_labels(path: Path, labels: list[dict]) -> None:
    path.write_text("".join(json.dumps(obj) + "\n" for obj in labels))


# --- a stale "not relevant" ---------------------------------------------------------------------

def test_a_not_relevant_judgement_of_a_card_edited_since_is_stale_for_scoring_top_up_and_apply(repo, capsys):
    first = _eval(capsys, "r1.json")
    case = next(c for c in first["cases"] if c["id"] == "en-001")
    card = next(c for c in case["retrieved"][:5] if c not in case["gold"])
    _write_labels(repo / "labels.jsonl", [{"case": "en-001", "card": card, "sha": first["kb_cards"][card]["sha"],
                                           "grade": 0, "at": "2026-01-01T00:00:00Z"}])
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert "1 kept as not relevant" in out

    judged_run = _eval(capsys, "r2.json")
    judged_case = next(c for c in judged_run["cases"] if c["id"] == "en-001")
    assert judged_case["not_relevant"] == [card]  # while the card is as judged, the sidecar judges it

    path = _card_file(repo, card)  # the card is edited: the judgement was of content no longer there
    path.write_text(path.read_text() + "\nThis card now also says how long a card refund takes.\n")
    edited = _eval(capsys, "r3.json")
    assert edited["kb_cards"][card]["sha"] != first["kb_cards"][card]["sha"]
    again = next(c for c in edited["cases"] if c["id"] == "en-001")
    assert again.get("not_relevant", []) == []  # excluded when empty
    top = again["retrieved"]
    for k in (1, 3, 5, 10):  # unjudged@k by hand: the top k's cards outside the gold (the sidecar stale)
        want = sum(c not in again["gold"] for c in top[:k]) / k
        assert again["unjudged"][f"unjudged@{k}"] == pytest.approx(want), k

    code, out, err = run_cli(["label", "top-up", "--results", "r3.json", "--out", "top-up", "--depth", "10",
                              "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    drafted = {json.loads(x)["id"]: json.loads(x) for x in (repo / "top-up" / "draft.jsonl").read_text().splitlines()}
    offered = {c["card"]: c["sha"] for c in drafted["en-001"]["candidates"]}
    assert offered.get(card) == edited["kb_cards"][card]["sha"]  # offered again, at its content now

    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert "already applied: 0" in out and "set aside as stale: 1" in out
    assert f"card {card!r} of en-001 changed since it was judged" in out


def test_score_run_with_the_kb_reads_a_stale_not_relevant_entry_as_unjudged(repo, capsys):
    """``score --run`` with the KB: the stale sidecar entry is no judgement there either."""
    first = _eval(capsys, "r1.json")
    case = next(c for c in first["cases"] if c["id"] == "en-002")
    card = next(c for c in case["retrieved"][:3] if c not in case["gold"])
    (repo / "cases.not-relevant.jsonl").write_text(json.dumps({"case": "en-002", "card": card, "sha": "0" * 16,
                                                               "at": ""}) + "\n")
    (repo / "run.jsonl").write_text("".join(json.dumps({"id": c["id"], "retrieved": c["retrieved"]}) + "\n"
                                            for c in first["cases"]))
    code, _, err = run_cli(["score", "--cases", "cases.jsonl", "--kb", "kb", "--run", "run.jsonl",
                            "--out", "s.json"], capsys)
    assert code == 0, err
    scored = next(c for c in json.loads(Path("s.json").read_text())["cases"] if c["id"] == "en-002")
    assert scored.get("not_relevant", []) == []
    assert scored["unjudged"]["unjudged@3"] == pytest.approx(sum(c not in scored["gold"]
                                                                 for c in scored["retrieved"][:3]) / 3)


# --- an orphaned case re-judged -----------------------------------------------------------------

def test_re_judging_an_orphaned_case_replaces_its_gone_gold_id(repo, capsys):
    before = _cases(repo)
    gone = before["en-001"]["gold"][0]
    assert before["en-001"]["gold"] == [gone]  # one gold card: deleted, the case is orphaned
    _card_file(repo, gone).unlink()
    assert run_cli(["validate", "--kb", "kb", "--cases", "cases.jsonl", "--strict"], capsys)[0] == 2
    orphans = {cid for cid, c in before.items() if gone in (c.get("gold") or [])}

    code, out, err = run_cli(["label", "top-up", "--orphaned", "--out", "top-up", "--kb", "kb",
                              "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    drafted = {json.loads(x)["id"]: json.loads(x) for x in (repo / "top-up" / "draft.jsonl").read_text().splitlines()}
    assert set(drafted) == orphans
    # the labeller: for every orphaned case the first candidate answers, the rest do not
    labels = [{"case": cid, "card": c["card"], "sha": c["sha"], "grade": int(i == 0), "at": "2026-01-01T00:00:00Z"}
              for cid, e in drafted.items() for i, c in enumerate(e["candidates"])]
    _write_labels(repo / "labels.jsonl", labels)
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "kb",
                              "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    after = _cases(repo)
    for cid in orphans:
        new = drafted[cid]["candidates"][0]["card"]
        assert after[cid]["gold"] == [c for c in before[cid]["gold"] if c != gone] + [new]
        assert f"taken out of {cid}'s gold: {gone}" in out
    assert {cid: c for cid, c in after.items() if cid not in orphans} == \
        {cid: c for cid, c in before.items() if cid not in orphans}
    code, out, err = run_cli(["validate", "--kb", "kb", "--cases", "cases.jsonl", "--strict"], capsys)
    assert code == 0, out + err

    scored = _eval(capsys, "r.json")  # recall@10 by hand: the new gold in BM25's top 10
    case = next(c for c in scored["cases"] if c["id"] == "en-001")
    want = sum(g in case["retrieved"][:10] for g in after["en-001"]["gold"]) / len(after["en-001"]["gold"])
    assert want == 1.0 and case["scores"]["recall@10"] == pytest.approx(want)


def test_an_orphaned_case_judged_with_no_card_relevant_keeps_its_gone_id_and_says_so(repo, capsys):
    gone = _cases(repo)["en-001"]["gold"][0]
    _card_file(repo, gone).unlink()
    assert run_cli(["label", "top-up", "--orphaned", "--out", "top-up", "--kb", "kb", "--cases", "cases.jsonl"],
                   capsys)[0] == 0
    entry = next(json.loads(x) for x in (repo / "top-up" / "draft.jsonl").read_text().splitlines()
                 if json.loads(x)["id"] == "en-001")
    _write_labels(repo / "labels.jsonl", [{"case": "en-001", "card": c["card"], "sha": c["sha"], "grade": 0}
                                          for c in entry["candidates"]])
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "top-up/draft.jsonl", "--kb", "kb",
                              "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert _cases(repo)["en-001"]["gold"] == [gone]
    assert f"en-001 still names {gone}, gone from the KB: no card was judged relevant" in out


# --- top-up onto a draft folder -----------------------------------------------------------------

RETRIEVER = ("def search(query, limit):\n"
             "    return ['en-payments-refund-card', 'en-account-two-factor', 'en-invoicing-reminders'][:limit]\n")


def _cases_draft(repo: Path, capsys, out: str = "golden-draft") -> tuple[int, str, str]:
    """``cases draft`` of a three-query log, pooled by BM25 and a Python retriever (no model)."""
    (repo / "queries.txt").write_text("how do I refund a card payment\nreset my password\nturn on reminders\n")
    (repo / "ret.py").write_text(RETRIEVER)
    return run_cli(["cases", "draft", "--queries", "queries.txt", "--kb", "kb", "--out", out,
                    "--pool", "bm25:5,python:ret.py:search", "--size", "3"], capsys)


@pytest.mark.model  # cases draft embeds the queries with the real model
def test_top_up_onto_a_cases_draft_folder_is_refused_unless_force(repo, capsys):
    code, _, err = _cases_draft(repo, capsys)
    assert code == 0, err
    folder = repo / "golden-draft"
    drafted = {name: (folder / name).read_bytes() for name in ("draft.jsonl", "label.html", "draft.md")}
    assert len(drafted["draft.jsonl"].splitlines()) == 3
    _eval(capsys, "r1.json")
    top_up = ["label", "top-up", "--results", "r1.json", "--out", "golden-draft", "--kb", "kb",
              "--cases", "cases.jsonl"]
    code, _, err = run_cli(top_up, capsys)
    assert code == 2
    assert "--out golden-draft: the folder holds a draft already (draft.jsonl, label.html, draft.md)" in err
    assert "another folder" in err and "--force" in err
    assert {name: (folder / name).read_bytes() for name in drafted} == drafted  # nothing written

    code, _, err = run_cli([*top_up, "--force"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in (folder / "draft.jsonl").read_text().splitlines()]
    assert lines and all(e["top_up"] for e in lines)  # replaced, as asked


def test_top_up_into_an_empty_or_new_folder_needs_no_force_and_onto_a_top_up_folder_is_refused(repo, capsys):
    _eval(capsys, "r1.json")
    (repo / "empty").mkdir()
    (repo / "empty" / "notes.txt").write_text("not a draft\n")
    for out in ("empty", "fresh"):
        code, _, err = run_cli(["label", "top-up", "--results", "r1.json", "--out", out, "--kb", "kb",
                                "--cases", "cases.jsonl"], capsys)
        assert code == 0, err
        assert (repo / out / "draft.jsonl").is_file()
    (repo / "fresh" / "label.html").unlink()  # any one of the draft's files is a draft there
    (repo / "fresh" / "draft.jsonl").unlink()
    code, _, err = run_cli(["label", "top-up", "--results", "r1.json", "--out", "fresh", "--kb", "kb",
                            "--cases", "cases.jsonl"], capsys)
    assert code == 2 and "--out fresh: the folder holds a draft already (draft.md)" in err and "--force" in err


# --- every printed "next" command runs as printed -----------------------------------------------

SUBCOMMANDS = sorted(COMMAND_MODULES, key=len, reverse=True)  # every command of the CLI
COMMAND = re.compile(rf"retrieval-gate (?:{'|'.join(map(re.escape, SUBCOMMANDS))})\b[^\n`\"<]*")


def _commands(text: str) -> list[str]:
    """Every ``retrieval-gate SUBCOMMAND …`` a text prints: up to the end of its line, a backtick,
    a quote, or the prose after it (`` (`` or ``, then``); the labelling page's from its data."""
    if "<html" in text[:200].lower():
        return [html.unescape(json.loads(f'"{m}"')) for m in re.findall(r'"apply":\s*"((?:[^"\\]|\\.)*)"', text) if m]
    return [re.split(r" \(|, then", m.group(0))[0].strip() for m in COMMAND.finditer(text)
            if "·" not in m.group(0)]  # compare's title line, "retrieval-gate compare · suite …", is no command


def _labeller(draft: Path, *, said: dict[tuple[str, str], int], only: int | None = None) -> list[dict]:
    """A labeller's download of ``draft``'s page: per query (the first ``only``), its first card
    relevant and the rest not — or what the labeller said of the pair before (``said``, kept)."""
    entries = [json.loads(x) for x in draft.read_text().splitlines()][:only]
    out = []
    for e in entries:
        for i, c in enumerate(e["candidates"]):
            grade = said.setdefault((e["id"], c["card"]), int(i == 0))
            out.append({"case": e["id"], "card": c["card"], "sha": c["sha"], "grade": grade,
                        "at": "2026-01-01T00:00:00Z"})
    return out


class Printed:
    """Runs every command the outputs and the files print, each once, as printed (``shlex``),
    writing the labeller's download first where a command applies a draft's labels."""

    def __init__(self, repo: Path, capsys) -> None:
        self.repo, self.capsys, self.ran, self.seen = repo, capsys, [], set()
        self.said: dict[tuple[str, str], int] = {}  # the labeller's word on each pair so far

    def collect(self, *texts: str) -> list[str]:
        return [c for text in texts for c in _commands(text)]

    def run(self, command: str, *, only: int | None = None) -> str:
        args = shlex.split(command)
        assert args[0] == "retrieval-gate", command
        if args[1:3] == ["label", "apply"] and "--draft" in args:
            _write_labels(self.repo / args[3], _labeller(self.repo / args[args.index("--draft") + 1], said=self.said,
                                                         only=only))
        code, out, err = run_cli(args[1:], self.capsys)
        assert code == 0, f"{command}: exit {code}\n{out}\n{err}"
        self.ran.append(command)
        return out + err

    def follow(self, commands: list[str], *, only: int | None = None) -> list[str]:
        """Run each new command (``only``: the labeller's partial sitting), then those they print."""
        outputs = []
        for command in commands:
            if command in self.seen:
                continue
            self.seen.add(command)
            said = self.run(command, only=only)
            outputs.append(said)
            outputs += self.follow(self.collect(said), only=only)
        return outputs


@pytest.mark.model  # cases draft embeds the queries with the real model
def test_every_next_command_of_the_labelling_loop_runs_as_printed(repo, capsys):
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb\n    cases: golden.jsonl\n"
                                             "    retriever: bm25\n")
    printed = Printed(repo, capsys)
    # a draft: its stdout, draft.md and label.html each name the apply command
    code, out, err = _cases_draft(repo, capsys)
    assert code == 0, err
    folder = repo / "golden-draft"
    first = printed.collect(out, (folder / "draft.md").read_text(), (folder / "label.html").read_text())
    assert len(first) >= 2 and all(" --draft " in c and "--cases golden.jsonl" in c for c in first), first
    # a first sitting labels one query: apply says how many are left and the command to apply the rest
    said = printed.follow(first, only=1)
    assert any("label the 2 queries left" in s for s in said), said
    # the second sitting labels them all: the command it printed, then validate
    printed.seen -= {c for c in printed.seen if " --draft " in c}
    printed.follow(printed.collect(*said))
    assert any(c.startswith("retrieval-gate validate ") for c in printed.ran), printed.ran
    cases = _cases_of(repo / "golden.jsonl")
    assert len(cases) == 3

    # a report's labels file whose "not relevant" judgement is of a card edited since: set aside;
    # the top-up apply names offers it again, and its own page's apply command applies it
    case = next(iter(cases))
    shown = {c["card"] for x in (folder / "draft.jsonl").read_text().splitlines() if json.loads(x)["id"] == case
             for c in json.loads(x)["candidates"]}
    card = next(c for c in ("en-account-delete", "en-payments-payouts", "en-integrations-quickbooks")
                if c not in shown)  # judged for the first time: the labeller has no earlier word on it
    report = repo / "report"
    report.mkdir()
    _write_labels(report / "labels.jsonl", [{"case": case, "card": card, "sha": "0" * 16, "grade": 0, "at": ""}])
    printed.follow(["retrieval-gate label apply report/labels.jsonl --kb kb --cases golden.jsonl"])
    top_up = [c for c in printed.ran if c.startswith("retrieval-gate label top-up ")]
    assert top_up and "--stale report/stale.jsonl --out top-up " in top_up[0], printed.ran
    assert any(" --draft top-up/draft.jsonl" in c for c in printed.ran), printed.ran
    offered = [json.loads(x) for x in (repo / "top-up" / "draft.jsonl").read_text().splitlines()]
    assert [(e["id"], [c["card"] for c in e["candidates"]]) for e in offered] == [(case, [card])]
    assert card in _cases_of(repo / "golden.jsonl")[case]["gold"]  # judged again (relevant) at its content now
    # the folder is taken now: the next apply's top-up names another, which runs as printed too
    again = next(c for c in ("en-account-delete", "en-payments-payouts", "en-integrations-quickbooks")
                 if c not in shown and c != card)
    _write_labels(report / "labels.jsonl", [{"case": case, "card": again, "sha": "1" * 16, "grade": 1, "at": ""}])
    printed.follow(printed.collect(printed.run("retrieval-gate label apply report/labels.jsonl --kb kb "
                                               "--cases golden.jsonl")))
    assert any("--out top-up-2 " in c for c in printed.ran), printed.ran


@pytest.mark.model
def test_init_from_a_query_log_prints_commands_that_run_as_printed(repo, capsys):
    """``init`` with a query log and no golden set: it drafts one and prints the apply and init
    commands; both run as printed (the labeller labels the page between), and the compare command
    init prints at the end runs too (the real model drafts and scores)."""
    (repo / "cases.jsonl").unlink()
    (repo / "queries.txt").write_text("how do I refund a card payment\nreset my password\nturn on reminders\n")
    printed = Printed(repo, capsys)
    code, out, err = run_cli(["init", "--queries", "queries.txt", "--kb", "kb"], capsys)
    assert code == 0, err
    commands = printed.collect(out)
    assert [c.split()[1] for c in commands] == ["label", "init"], commands
    printed.follow(commands)
    assert any(c.startswith("retrieval-gate compare ") for c in printed.ran), printed.ran


def test_a_drafted_query_waiting_on_a_stale_judgement_is_offered_by_the_printed_top_up(tmp_path, monkeypatch,
                                                                                          capsys):
    """A hand-made draft (no model): the one card judged relevant for a drafted query is edited
    before the labels are applied, so the query waits on a stale judgement and is no case yet. The
    top-up ``label apply`` then prints offers that query again (as a drafted query, at the card's
    content now), and applying its page's labels makes it a case."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    cards = {"tar": "how tar works", "df": "how df works", "ls": "how ls works"}

    def kb(edited: str = "") -> dict[str, str]:
        (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c, "text": t + (" (edited)" if c ==
                                                                                                  edited else "")})
                                                   + "\n" for c, t in cards.items()))
        return _card_hashes(tmp_path / "kb.jsonl")

    sha = kb()
    (tmp_path / "draft").mkdir()
    (tmp_path / "draft" / "draft.jsonl").write_text("".join(json.dumps(
        {"id": f"log-{i}", "query": f"query {i}", "intent": "files", "count": 1, "log": "log.txt",
         "pool": {"depth": 10, "systems": ["bm25", "dense"], "found": {}},
         "candidates": [{"card": c, "sha": sha[c]} for c in cards]}) + "\n" for i in range(2)))
    labels = [{"case": "log-0", "card": c, "sha": sha[c], "grade": int(c == "tar"), "at": ""} for c in cards]
    labels += [{"case": "log-1", "card": c, "sha": sha[c], "grade": int(c == "ls"), "at": ""} for c in cards]
    _write_labels(tmp_path / "labels.jsonl", labels)
    now = kb(edited="tar")  # merged before the labels are applied: log-0's only relevant judgement is stale
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "draft/draft.jsonl", "--cases",
                              "cases.jsonl", "--kb", "kb.jsonl"], capsys)
    assert code == 0, err
    assert "set aside as stale: 2" in out and set(_cases_of(tmp_path / "cases.jsonl")) == {"log-1"}  # tar twice
    (command,) = [c for c in _commands(out) if c.startswith("retrieval-gate label top-up ")]
    code, out, err = run_cli(shlex.split(command)[1:], capsys)
    assert code == 0, err
    offered = {e["id"]: e for e in map(json.loads, (tmp_path / "top-up" / "draft.jsonl").read_text().splitlines())}
    assert {cid: [(c["card"], c["sha"]) for c in e["candidates"]] for cid, e in offered.items()} == {
        "log-0": [("tar", now["tar"])], "log-1": [("tar", now["tar"])]}
    assert offered["log-0"]["query"] == "query 0" and "top_up" not in offered["log-0"]  # a drafted query again
    assert offered["log-1"]["top_up"] is True  # a case's top-up line
    (apply,) = _commands(out)
    _write_labels(tmp_path / "labels.jsonl", [{"case": "log-0", "card": "tar", "sha": now["tar"], "grade": 1,
                                               "at": ""}, {"case": "log-1", "card": "tar", "sha": now["tar"],
                                                           "grade": 0, "at": ""}])
    code, out, err = run_cli(shlex.split(apply)[1:], capsys)
    assert code == 0, err
    assert _cases_of(tmp_path / "cases.jsonl")["log-0"]["gold"] == ["tar"]
    # the draft's stale.jsonl still lists the pairs, but the golden set judges them now: a later
    # sitting of the draft is not sent to the top-up again
    _write_labels(tmp_path / "labels.jsonl", [{"case": "log-1", "card": "ls", "sha": sha["ls"], "grade": 1,
                                               "at": ""}])
    code, out, err = run_cli(["label", "apply", "labels.jsonl", "--draft", "draft/draft.jsonl", "--cases",
                              "cases.jsonl", "--kb", "kb.jsonl"], capsys)
    assert code == 0, err
    assert "already applied: 1" in out and out.splitlines()[-1].startswith("next: retrieval-gate init ")


def _card_hashes(kb: Path) -> dict[str, str]:
    """Card id → its content hash (the labelling page's ``sha``), as the KB manifest computes it."""
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.score.kb_manifest import kb_manifest

    return {c: m.sha for c, m in kb_manifest(load_kb(kb).cards).items()}
