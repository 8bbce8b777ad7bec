"""From a query log to a golden set with the real model and a real Chroma store: ``init`` in a
repository with a KB and a log but no golden set drafts one, a simulated labeller judges the pooled
candidates by the examples' own gold, ``label apply --draft`` writes the cases, ``validate`` and
``eval`` take them. The expected figures come from examples/cases.jsonl, not from the code."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from retrieval_gate.load.cases import load_cases
from tests.helpers import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def simulated_labels(draft: Path, *, gold_of: dict[str, set[str]]) -> list[dict]:
    """Judge each candidate by the examples' gold; "no answer" where the gold is empty."""
    out = []
    for line in draft.read_text().splitlines():
        entry = json.loads(line)
        gold = gold_of.get(entry["query"].casefold())
        if gold is None:
            continue
        if not gold:
            out.append({"case": entry["id"], "no_answer": True, "labeller": "sim"})
            continue
        out += [{"case": entry["id"], "card": c["card"], "grade": int(c["card"] in gold), "sha": c["sha"],
                 "at": "2026-01-01T00:00:00Z", "labeller": "sim"} for c in entry["candidates"]]
    return out


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    shutil.copytree(EXAMPLES / "kb", tmp_path / "kb")
    cases = [json.loads(line) for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    lines = []
    for i, case in enumerate(cases):
        lines += [case["query"]] * (1 + i % 4)  # traffic
        lines.append("  " + case["query"].upper() + " ")  # an exact duplicate, ignoring case and whitespace
    lines += ["my email is jane.roe@example.com, refund please", "call +44 20 7946 0958 about my payout", "\x00\x01"]
    (tmp_path / "search_queries.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_drafts_from_the_log_and_the_labels_become_a_golden_set_eval_takes(repo, capsys):
    code, out, err = run_cli(["init", "--no-baseline"], capsys)
    assert code == 0, err
    assert "retrieval-gate label apply labels.jsonl --draft" in out
    assert (repo / ".retrieval-gate").is_dir()  # the draft's embedding cache: ignored before it was made
    assert ".retrieval-gate/" in (repo / ".gitignore").read_text().splitlines()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout
    assert ".retrieval-gate" not in status and "golden-draft/draft.jsonl" in status
    folder = repo / "golden-draft"
    written = {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}
    assert set(written) == {"draft.jsonl", "label.html", "draft.md"}
    assert not any("jane.roe@example.com" in t or "7946 0958" in t for t in written.values())  # masked everywhere
    assert "<email>" in written["draft.jsonl"] and "<phone>" in written["draft.jsonl"]
    drafted = [json.loads(line) for line in written["draft.jsonl"].splitlines()]
    examples = [json.loads(line) for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    gold_of = {c["query"].casefold(): set(c["gold"]) for c in examples}
    assert len(drafted) == len(gold_of) + 2  # every distinct query of the log is drawn (it has fewer than needed)
    assert all({"dense", "bm25"} == set(e["pool"]["systems"]) and len(e["candidates"]) >= 10 for e in drafted)
    pooled = [bool(gold_of[e["query"].casefold()] & {c["card"] for c in e["candidates"]})
              for e in drafted if gold_of.get(e["query"].casefold())]
    assert sum(pooled) / len(pooled) >= 0.9  # the pool holds the gold of nearly every answerable query

    labels = repo / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in simulated_labels(folder / "draft.jsonl", gold_of=gold_of)))
    code, out, err = run_cli(["label", "apply", str(labels), "--draft", str(folder / "draft.jsonl"),
                              "--cases", "cases.jsonl", "--kb", "kb"], capsys)
    assert code == 0, err
    assert "what the golden set can detect, per intent:" in out
    assert "relevant cards per pool system (relative to the pool — dense (top 10), bm25 (top 10)" in out
    assert "already applied: 0" in out and out.splitlines()[-1].startswith("next: open ")  # 2 queries unlabelled
    code, out, err = run_cli(["label", "apply", str(labels), "--draft", str(folder / "draft.jsonl"),
                              "--cases", "cases.jsonl", "--kb", "kb"], capsys)  # a second sitting resends it all
    assert code == 0 and f"already applied: {len(simulated_labels(folder / 'draft.jsonl', gold_of=gold_of))}" in out
    made = {c.query.casefold(): c for c in load_cases(repo / "cases.jsonl").cases}
    for query, gold in gold_of.items():
        pooled_gold = gold & {c["card"] for e in drafted if e["query"].casefold() == query for c in e["candidates"]}
        if not gold:
            assert made[query].gold == ()
        elif pooled_gold:
            assert set(made[query].gold) == pooled_gold
    assert run_cli(["validate", "--cases", "cases.jsonl", "--kb", "kb"], capsys)[0] == 0
    code, out, err = run_cli(["eval", "--cases", "cases.jsonl", "--kb", "kb", "--out", "results.json"], capsys)
    assert code == 0, err
    results = json.loads((repo / "results.json").read_text())
    assert results["completeness"]["expected"] == len(made)
    assert results["completeness"]["no_gold"] == sum(1 for c in made.values() if not c.gold)
    assert results["aggregates"]["overall"]["hit@10"]["value"] > 0.8  # the pool's gold: the dense side finds it
    code, out, err = run_cli(["init", "--no-baseline"], capsys)  # init takes the golden set now
    assert code == 0, err
    assert "cases.jsonl (JSONL cases" in out and "retrieval-gate.yml" in out
    add = next(line.strip() for line in out.splitlines() if line.strip().startswith("git add "))
    assert {"cases.jsonl", "cases.not-relevant.jsonl", "kb", "retrieval-gate.yml", ".gitignore",
            "golden-draft"} <= set(add.split()[2:])  # the first init's .gitignore and draft folder too


def test_per_intent_sizes_every_intent_alike_whatever_its_traffic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys):
    """``--per-intent``: each intent of the log's column gets the cases that detect ``--detect`` on its
    own (the power formula: 19 cases for a drop of 0.4), not a traffic share — a quiet intent as
    many as a busy one; by traffic, the busy one takes nearly all."""
    monkeypatch.chdir(tmp_path)
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    rows = [("billing" if i % 2 else "account", q, 20 if i % 2 else 1) for i, q in enumerate(queries[:60])]
    with (tmp_path / "log.csv").open("w", encoding="utf-8", newline="") as out:
        out.write("intent,query,count\n")
        out.writelines(f'{intent},"{q}",{n}\n' for intent, q, n in rows)
    base = ["cases", "draft", "--queries", "log.csv", "--kb", str(EXAMPLES / "kb"), "--detect", "0.4"]
    code, _, err = run_cli([*base, "--out", "each", "--per-intent"], capsys)
    assert code == 0, err
    drawn = [json.loads(line)["intent"] for line in (tmp_path / "each" / "draft.jsonl").read_text().splitlines()]
    assert sorted(Counter(drawn).items()) == [("account", 19), ("billing", 19)]
    code, _, err = run_cli([*base, "--out", "shared"], capsys)
    assert code == 0, err
    drawn = [json.loads(line)["intent"] for line in (tmp_path / "shared" / "draft.jsonl").read_text().splitlines()]
    # 19 by traffic: 600 : 30 → 18.1 and 0.9 → 18 and 1, then the minimum of 6 lifts account
    assert sorted(Counter(drawn).items()) == [("account", 6), ("billing", 18)]


HOSTILE_ITEMS = {  # kind → what a support log holds (each shape a real log carries); none of it may be written
    "secret": ["AKIAIOSFODNN7EXAMPLE", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
               "sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF1234567890abcd",
               "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
               "abc123def456ghi789jkl", "Hunter2Secret!", "abcd1234efgh5678", "s3cr3tpass"],
    "email": ["josé.silva@exemplo.com.br", "user@exämple.de", "john dot doe at gmail dot com"],
    "iban": ["gb82west12345698765432"], "card": ["4111.1111.1111.1111"], "phone": ["07700 900123", "+44 20 7946 0958"],
    "ssn": ["123456789"], "cpf": ["529.982.247-25"], "cnpj": ["11.222.333/0001-81"],
    "ip": ["203.0.113.7", "2001:db8::1"], "date": ["14/03/1985"],
}
HOSTILE_QUERIES = [
    "my key AKIAIOSFODNN7EXAMPLE stopped working", "token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 invalid",
    "sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF1234567890abcd", "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P fails", "Authorization: Bearer abc123def456ghi789jkl",
    "login password=Hunter2Secret! fails", "https://api.example.com/v1?token=abcd1234efgh5678 gives 401",
    "clone https://bob:s3cr3tpass@git.example.com/r.git", "contact josé.silva@exemplo.com.br about the invoice",
    "user@exämple.de cannot log in", "write to john dot doe at gmail dot com", "iban gb82west12345698765432 rejected",
    "card 4111.1111.1111.1111 charged twice", "call me on 07700 900123", "call +44 20 7946 0958 about my payout",
    "ssn 123456789 wrong", "meu cpf 529.982.247-25", "cnpj 11.222.333/0001-81 nota", "ip 203.0.113.7 blocked",
    "ipv6 2001:db8::1 unreachable", "born 14/03/1985 update",
    "![x](http://evil.example/a.png) refund", "\u202egnp.exe refund", "export a \\| b table",
]
DROPPED = {"user_id": "u-829301", "user_agent": "Mozilla/5.0 (X11; Linux x86_64) HostileAgent/1.0",
           "referrer": "https://shop.example/?token=ref9876zyx&email=ref.leak@example.net", "session": "sess-77aa"}


def test_a_hostile_log_writes_no_secret_identifier_or_dropped_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys):
    """Through ``cases draft`` with ``--region GB --slice-column plan``, draft.jsonl,
    label.html and draft.md hold none of the log's secrets and identifiers and none of its other
    columns (counted in draft.md); draft.md's Markdown from the log is inert."""
    monkeypatch.chdir(tmp_path)
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()][:20]
    with (tmp_path / "log.jsonl").open("w", encoding="utf-8") as out:
        for i, q in enumerate(queries + HOSTILE_QUERIES):
            intent = "# x\x1b[2J" if i % 3 == 0 else "billing"
            row = {"query": q, "count": 1 + i % 3, "intent": intent, "locale": "en", "plan": "pro jane@example.com",
                   **DROPPED}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    code, out, err = run_cli(["cases", "draft", "--queries", "log.jsonl", "--kb", str(EXAMPLES / "kb"), "--out", "d",
                            "--size", "200", "--region", "GB", "--slice-column", "plan"], capsys)
    assert code == 0, err
    assert "secrets and personal data masked: " in out and "log columns dropped" in out
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "d").iterdir()}
    written["stdout"], written["stderr"] = out, err
    assert set(written) == {"draft.jsonl", "label.html", "draft.md", "stdout", "stderr"}
    forms = lambda s: {s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], html.escape(s)}  # noqa: E731
    for name, text in written.items():
        for kind, items in HOSTILE_ITEMS.items():
            for item in items:
                assert not any(f in text for f in forms(item)), (name, kind, item)
        for value in (*DROPPED.values(), "ref.leak", "jane@example.com"):
            assert not any(f in text for f in forms(value)), (name, value)
    for column in DROPPED:
        assert column not in written["draft.jsonl"] and f'"{column}"' not in written["label.html"]
    drafted = [json.loads(line) for line in written["draft.jsonl"].splitlines()]
    assert len(drafted) == len(queries) + len(HOSTILE_QUERIES)
    assert {frozenset(e["fields"]) for e in drafted} == {frozenset({"locale", "plan"})}
    assert {e["fields"]["plan"] for e in drafted} == {"pro <email>"}
    masked = "".join(e["query"] for e in drafted)
    assert all(f"<{kind}>" in masked for kind in HOSTILE_ITEMS)
    md = written["draft.md"]
    rows = len(queries) + len(HOSTILE_QUERIES)
    assert all(f"{name} ({rows:,} rows)" in md for name in ("user_agent", "referrer", "session"))
    assert "user_id (" in md and "names and street addresses: not covered" in md
    assert "`<secret>`" in md and "`<phone>`" in md
    assert "![x](" not in md and "\x1b" not in md and "\u202e" not in md
    assert not any(line.startswith("#") for line in md.splitlines()[1:])
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table and all(line.count("|") == 8 for line in table)


def test_the_battery_through_cases_draft_leaves_no_item_in_any_file_or_output(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch, capsys):
    """Every variant of benchmarks/data/pii_battery.tsv (keys hidden by percent-escapes,
    base64, invisible or full-width characters; one-line PEM keys; CPF/CNPJ groupings; dates of
    birth in words; Brazilian numbers without +55 …) as a CSV log whose header holds a key and
    whose kept column holds a key across the 500-character cut: draft.jsonl, label.html, draft.md,
    stdout and stderr hold none of the items, in any of the forms they could be written in."""
    import csv
    import re
    import unicodedata

    monkeypatch.chdir(tmp_path)
    rows = []
    for line in (EXAMPLES.parent / "benchmarks" / "data" / "pii_battery.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#") and not line.startswith("none"):
            marked = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), line.split("\t")[2])
            rows.append((re.sub("[⟦⟧]", "", marked), re.search("⟦(.*?)⟧", marked).group(1)))
    header_key, cut_key = "ghp_HeaderKey0123456789abcdefghijKLMNOPQR", "AKIAZZCUTACROSS7EXAM"
    plan = "p" * 480 + " " + cut_key + " tail"  # the key straddles character 500
    with (tmp_path / "log.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["query", "plan", f"note {header_key}"])
        writer.writerows([text, plan, "x"] for text, _ in rows)
    code, out, err = run_cli(["cases", "draft", "--queries", "log.csv", "--kb", str(EXAMPLES / "kb"), "--out", "d",
                              "--size", "400", "--slice-column", "plan"], capsys)
    assert code == 0, err
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "d").iterdir()}
    written["stdout"], written["stderr"] = out, err
    drafted = [json.loads(line) for line in written["draft.jsonl"].splitlines()]
    assert len(drafted) >= len(rows) // 2  # most variants are drawn: the files hold their masked text

    def forms(item: str) -> set[str]:
        base = {item, unicodedata.normalize("NFKC", item)}
        base |= {"".join(ch for ch in f if unicodedata.category(ch) != "Cf") for f in base}
        return {g for f in base for g in (f, json.dumps(f)[1:-1], json.dumps(f, ensure_ascii=False)[1:-1],
                                          html.escape(f))}

    leaks = [(name, item) for name, text in written.items() for _, item in rows
             for f in forms(item) if f in text]
    assert leaks == []
    for name, text in written.items():
        assert header_key not in text and "HeaderKey" not in text, name
        assert "AKIAZZ" not in text and "CUTACROSS" not in text, name
    assert "note &lt;secret&gt; (" in written["draft.md"]  # the dropped column, under its masked name
    assert {e["fields"]["plan"] for e in drafted} == {"p" * 480 + " <secret> tail"}  # masked, then short enough


def test_an_unknown_region_is_exit_2_before_anything_is_read_or_written(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "log.txt").write_text("call 07700 900123\n", encoding="utf-8")
    code, _, err = run_cli(["cases", "draft", "--queries", "log.txt", "--kb", str(EXAMPLES / "kb"), "--out", "d",
                            "--region", "XX"], capsys)
    assert code == 2 and "--region 'XX'" in err and "unknown region" in err
    assert not (tmp_path / "d").exists()


def test_pool_takes_a_run_file_and_a_depth_per_system_and_the_long_query_cut_leads_the_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    """``--pool bm25:3,run:FILE:2``: a run made for the drafted ids (``log-`` + the query's hash)
    pools at its own depth; ``--max-chars 60`` drops the long questions, said in the first line of
    stdout and of draft.md, with a hint (more than 5 % of the distinct queries)."""
    from retrieval_gate.golden.draw import case_id

    monkeypatch.chdir(tmp_path)
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()][:12]
    long_ones = [q + " " + "and some more words to make it long" * 2 for q in queries[:3]]
    (tmp_path / "log.txt").write_text("\n".join(queries + long_ones) + "\n", encoding="utf-8")
    run = "".join(f"{case_id(q)} Q0 {card} {rank} {10 - rank} sys\n" for q in queries
                  for rank, card in enumerate(["en-shortcuts-keyboard", "en-payments-payouts", "en-account-2fa"], 1))
    (tmp_path / "run.tsv").write_text(run, encoding="utf-8")
    code, out, err = run_cli(["cases", "draft", "--queries", "log.txt", "--kb", str(EXAMPLES / "kb"), "--out", "d",
                              "--pool", "bm25:3,run:run.tsv:2", "--max-chars", "60", "--size", "50"], capsys)
    assert code == 0, err
    short = [q for q in queries if len(q) <= 60]
    assert out.splitlines()[0] == (f"long queries dropped (--max-chars 60): {15 - len(short)} distinct "
                                   f"({15 - len(short)} lines), {(15 - len(short)) / 15:.1%} of the distinct queries")
    assert out.splitlines()[1].startswith("hint: more than 5% of the distinct queries were cut as too long")
    md = (tmp_path / "d" / "draft.md").read_text().splitlines()
    assert md[2] == "- " + out.splitlines()[0]
    assert any("pool: bm25 (top 3), run:run.tsv (top 2) — every coverage figure is relative to this pool" in line
               for line in md)
    drafted = [json.loads(line) for line in (tmp_path / "d" / "draft.jsonl").read_text().splitlines()]
    assert drafted and all(e["pool"]["depths"] == {"bm25": 3, "run:run.tsv": 2} for e in drafted)
    for e in drafted:
        from_run = {c for c, systems in e["pool"]["found"].items() if "run:run.tsv" in systems}
        assert from_run == {"en-shortcuts-keyboard", "en-payments-payouts"}  # its top 2, not 3
        assert len([c for c, s in e["pool"]["found"].items() if "bm25" in s]) == 3
