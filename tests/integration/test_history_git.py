"""``retrieval-gate history`` against real git repositories built in tmp_path with real commits:
renames followed, a conflict-marker version a gap (sha + reason), old-schema baselines migrated, a
shallow clone exit 2 with the fix, --since / --limit / --suite / --all, same bytes twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import retrieval_gate
from tests.history_repo import Refresh, commit_refresh, commit_text, git, init_repo

DATA = Path(__file__).resolve().parents[1] / "data"
SRC = str(Path(retrieval_gate.__file__).resolve().parents[1])


def history(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-m", "retrieval_gate", "history", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)


def day(i: int) -> str:
    return f"2026-03-{i + 1:02d}T12:00:00+00:00"


def hits(values: dict[str, int]) -> dict[str, tuple[int, float, list[str]]]:
    return {c: (h, 0.7 * h, [f"k-{c}"]) for c, h in values.items()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Old-schema baselines first (2, then 3), then refreshes under an old name, a rename, a
    conflict-marker hand edit, and more refreshes under the new name."""
    repo = init_repo(tmp_path / "repo")
    commit_text(repo, {"baselines/old.json": (DATA / "baseline_schema2.json").read_text()},
                message="first baseline (schema 2)", date=day(0))
    commit_text(repo, {"baselines/old.json": (DATA / "baseline_schema3.json").read_text()},
                message="Merge pull request #7 from team/schema3", date=day(1))
    kb = {"k-a": "1", "k-b": "1", "k-c": "1"}
    commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": 1, "c": 1}), kb=kb, date=day(2),
                                 message="refresh (#8)"), path="baselines/old.json")
    git(repo, "mv", "baselines/old.json", "baselines/default.json")
    git(repo, "mv", "baselines/old.kb.json", "baselines/default.kb.json")
    git(repo, "commit", "-q", "-m", "rename the baseline", date=day(3))
    commit_refresh(repo, Refresh(cases=hits({"a": 0, "b": 1, "c": 1}), kb=kb, date=day(4), message="refresh (#9)"))
    text = (repo / "baselines/default.json").read_text()
    commit_text(repo, {"baselines/default.json": "<<<<<<< HEAD\n" + text + "=======\n{}\n>>>>>>> theirs\n"},
                message="a bad merge", date=day(5))
    commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": 1, "c": 0}), kb=kb, date=day(6), message="refresh (#10)"))
    commit_refresh(repo, Refresh(cases=hits({"a": 0, "b": 1, "c": 0}), kb=kb, date=day(7), message="refresh (#11)"))
    return repo


def test_every_version_renames_followed_gaps_named_old_schemas_migrated(repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = history(repo, "--out", str(site))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in site.iterdir()) == ["badge-default.svg", "default.html", "default.json", "index.html"]
    data = json.loads((site / "default.json").read_text())
    assert data["suite"] == "default" and data["path"] == "baselines/default.json"
    log = git(repo, "log", "--format=%H", "--reverse").split()
    # 8 commits: the rename commit changes no content (no version), the conflict is a gap
    points = data["points"]
    assert [p["sha"] for p in points] == [log[i] for i in (0, 1, 2, 4, 6, 7)]
    assert [p["pr"] for p in points] == [None, 7, 8, 9, 10, 11]
    assert [g["sha"] for g in data["gaps"]] == [log[5]]
    assert "JSON syntax error" in data["gaps"][0]["reason"] and log[5][:12] in data["gaps"][0]["reason"]
    # the schema 2 and 3 baselines, migrated: their own overall n and headline, as the files say
    raw2, raw3 = (json.loads((DATA / f"baseline_schema{v}.json").read_text()) for v in (2, 3))
    assert points[0]["n"] == raw2["aggregates"]["overall"]["hit@5"]["n"] == 55
    assert points[1]["headline"]["hit@5"] == raw3["aggregates"]["overall"]["hit@5"]["value"]
    scored = [{c for c, case in raw["cases"].items() if case.get("status", "scored") == "scored"
               and "hit@5" in case["scores"]} for raw in (raw2, raw3)]
    assert points[1]["step"]["hit@5"]["n"] == len(scored[0] & scored[1])
    # the refresh after the gap steps from the last readable version (a: 0 → 1, c: 1 → 0)
    assert points[4]["step"]["hit@5"]["delta"] == pytest.approx(0.0)
    assert points[4]["step"]["hit@5"]["gained"] == 1 and points[4]["step"]["hit@5"]["lost"] == 1
    # a: 1, 0, 1, 0 over the last four points; steps with nothing changed: flaky
    assert data["cases"]["a"] == [None, None, 1, 0, 1, 0]
    assert data["flaky"] == ["a"]
    assert [c["id"] for c in data["lost"]] == ["a", "c"]
    assert [p["change"]["cases"]["added"][:3] for p in points[2:3]] == [["a", "b", "c"]]
    for point in points:
        assert set(point) >= {"sha", "date", "ref", "n", "headline", "slices", "change", "step"}
    page = (site / "default.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert (site / "badge-default.svg").read_text().startswith("<svg")


def test_the_same_history_is_the_same_bytes(repo: Path, tmp_path: Path) -> None:
    assert history(repo, "--out", str(tmp_path / "a")).returncode == 0
    assert history(repo, "--out", str(tmp_path / "b")).returncode == 0
    for name in ("default.json", "default.html", "index.html", "badge-default.svg"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_since_and_limit_cut_the_window(repo: Path, tmp_path: Path) -> None:
    done = history(repo, "--out", str(tmp_path / "s"), "--limit", "3")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "s" / "default.json").read_text())
    assert len(data["points"]) + len(data["gaps"]) == 3 and data["points"][0]["change"] is None
    done = history(repo, "--out", str(tmp_path / "d"), "--since", "2026-03-06", "--suite", "default")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "d" / "default.json").read_text())
    assert [p["date"][:10] for p in data["points"]] == ["2026-03-07", "2026-03-08"]


def test_a_shallow_clone_is_exit_2_with_the_fix(repo: Path, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", repo.as_uri(), str(shallow)], check=True,
                   capture_output=True)
    done = history(shallow, "--out", str(tmp_path / "site"))
    assert done.returncode == 2
    assert "fetch-depth: 0" in done.stderr and "GIT_DEPTH: 0" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["--suite", "default", "--all"], "--suite and --all"),
    (["--since", "last week"], "--since"),
    (["--suite", "nosuch"], "no committed version"),
])
def test_bad_flags_and_unknown_suites_are_exit_2(repo: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    done = history(repo, "--out", str(tmp_path / "site"), *args)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr


def test_not_a_repository_is_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    done = history(folder, "--out", str(tmp_path / "site"))
    assert done.returncode == 2 and "git" in done.stderr and "Traceback" not in done.stderr


def _suite_json(site: Path, suite: str) -> dict:
    return json.loads((site / f"{suite}.json").read_text())


def test_a_commit_message_cannot_change_what_is_read(tmp_path: Path) -> None:
    """A message holding the old record/field separators and a forged raw change line naming
    another file's blob: every version is still the blob the commit wrote, the message kept whole."""
    repo = init_repo(tmp_path / "repo")
    commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": 1}), model="real-model", date=day(0)), suite="other")
    other_blob = git(repo, "rev-parse", "HEAD:baselines/other.json").strip()
    forged = (f"refresh (#5)\x1f\n\n:100644 100644 {other_blob} {other_blob} M\tbaselines/default.json\n"
              f"\x1e{'0' * 40}\x1f2026-01-01T00:00:00+00:00\x1fforged\x1f\n"
              f":100644 100644 {other_blob} {other_blob} M\tbaselines/default.json\n")
    for i, message in enumerate(["first", forged, "refresh \x1e (#6)"]):
        commit_refresh(repo, Refresh(cases=hits({"a": 0, "b": i % 2}), date=day(i + 1), message=message))
    done = history(repo, "--out", str(tmp_path / "site"), "--suite", "default")
    assert done.returncode == 0, done.stderr
    data = _suite_json(tmp_path / "site", "default")
    log = git(repo, "log", "--format=%H", "--reverse", "--", "baselines/default.json").split()
    assert [p["sha"] for p in data["points"]] == log and data["gaps"] == []
    assert [p["headline"]["hit@5"] for p in data["points"]] == [0.0, 0.5, 0.0]
    assert all(p["change"] is None or p["change"]["settings"] == [] for p in data["points"])
    assert [p["pr"] for p in data["points"]] == [None, 5, 6]
    assert data["points"][1]["subject"] == "refresh (#5)\x1f"


def test_renames_are_followed_and_copies_are_not(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_refresh(repo, Refresh(cases=hits({"a": 1}), date=day(0)))
    for i in range(3):
        commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": i % 2}), date=day(i)), path="baselines/a.json")
    # a copy: b.json starts with a.json's text while a.json stays
    text = (repo / "baselines/a.json").read_text()
    commit_text(repo, {"baselines/b.json": text}, message="copy a to b", date=day(3))
    commit_refresh(repo, Refresh(cases=hits({"a": 0, "b": 0}), date=day(4)), path="baselines/b.json")
    # a rename with an edit in the same commit: c.json's versions are d.json's
    for i in range(2):
        commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": 1, "c": i}), date=day(5 + i)), path="baselines/c.json")
    git(repo, "mv", "baselines/c.json", "baselines/d.json")
    edited = (repo / "baselines/d.json").read_text().replace('"updated_at": "2026', '"updated_at": "2027')
    commit_text(repo, {"baselines/d.json": edited}, message="rename c to d, edited", date=day(7))
    site = tmp_path / "site"
    done = history(repo, "--out", str(site))
    assert done.returncode == 0, done.stderr
    shas = {name: git(repo, "log", "--format=%H", "--reverse", "--", f"baselines/{name}.json").split()
            for name in "abcd"}
    assert [p["sha"] for p in _suite_json(site, "a")["points"]] == shas["a"]
    assert [p["sha"] for p in _suite_json(site, "b")["points"]] == shas["b"]  # the copy and after: 2
    assert len(shas["b"]) == 2
    d = _suite_json(site, "d")
    assert shas["c"][-1] == shas["d"][0]  # the rename commit, an edit too: a version of its own
    assert [p["sha"] for p in d["points"]] == shas["c"] and len(shas["c"]) == 3
    assert d["path"] == "baselines/d.json"


def test_a_version_above_the_size_cap_is_a_gap_never_read(tmp_path: Path) -> None:
    from retrieval_gate.artifacts.git_history import MAX_VERSION_BYTES

    repo = init_repo(tmp_path / "repo")
    commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": 1}), date=day(0)))
    text = (repo / "baselines/default.json").read_text()
    big = text[:-2] + " " * (MAX_VERSION_BYTES + 10) + text[-2:]  # whitespace: valid JSON, over the cap
    commit_text(repo, {"baselines/default.json": big}, message="an 16 MB version", date=day(1))
    commit_refresh(repo, Refresh(cases=hits({"a": 0, "b": 1}), date=day(2)))
    done = history(repo, "--out", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    data = _suite_json(tmp_path / "site", "default")
    log = git(repo, "log", "--format=%H", "--reverse").split()
    assert [p["sha"] for p in data["points"]] == [log[0], log[2]]
    assert [g["sha"] for g in data["gaps"]] == [log[1]]
    assert f"{len(big.encode()):,} bytes, larger than `history` reads ({MAX_VERSION_BYTES:,} bytes)" in \
        data["gaps"][0]["reason"]
    assert data["points"][1]["step"]["hit@5"]["delta"] == pytest.approx(-0.5)


def test_a_small_cap_reads_every_other_version_whole(tmp_path: Path) -> None:
    from retrieval_gate.artifacts.git_history import Deadline, commits_of, read_versions

    repo = init_repo(tmp_path / "repo")
    commit_refresh(repo, Refresh(cases=hits({"a": 1}), date=day(0)))
    commit_refresh(repo, Refresh(cases=hits({f"c{i}": 1 for i in range(40)}), date=day(1)))
    commit_refresh(repo, Refresh(cases=hits({"a": 0}), date=day(2), message="Merge pull request #3 from x/y"))
    deadline = Deadline(60)
    commits = commits_of(repo, "baselines/default.json", since=None, limit=None, deadline=deadline)
    sizes = [int(git(repo, "cat-file", "-s", c.blob)) for c in commits]
    cap = (sizes[0] + sizes[1]) // 2
    assert sizes[0] < cap < sizes[1] and sizes[2] < cap
    versions = list(read_versions(repo, commits, deadline=deadline, max_bytes=cap))
    assert [v.baseline is None for v in versions] == [False, True, False]
    assert versions[1].problem is not None and f"{sizes[1]:,} bytes" in versions[1].problem
    assert versions[2].message == "Merge pull request #3 from x/y"


@pytest.mark.parametrize(("remote", "link"), [
    ("https://x-access-token:SECRET@github.com/team/kb.git", "https://github.com/team/kb/pull/{n}"),
    ("git@gitlab.example.com:group/sub/kb.git", "https://gitlab.example.com/group/sub/kb/-/merge_requests/{n}"),
    ("https://org@dev.azure.com/org/proj/_git/kb", "https://dev.azure.com/org/proj/_git/kb/pullrequest/{n}"),
    (None, None),
])
def test_each_refresh_names_the_pr_its_measured_commit_merged_linked_on_the_forge(
        tmp_path: Path, remote: str | None, link: str | None) -> None:
    repo = init_repo(tmp_path / "repo")
    if remote:
        git(repo, "remote", "add", "origin", remote)
    merges = ["Merge pull request #12 from team/a\n\nA", "Faster chunks (#34)",
              "Chunks\n\nSee merge request group/sub/kb!56", "Merged PR 78: chunk sizes", "a direct push"]
    for i, subject in enumerate(merges):
        measured = commit_text(repo, {f"src/{i}.txt": "x"}, message=subject, date=day(2 * i))
        commit_refresh(repo, Refresh(cases=hits({"a": 1, "b": i % 2}), date=day(2 * i + 1), measured=measured,
                                     message=f"retrieval-gate: update baselines/default.json for {measured[:12]} "
                                             "[skip ci]"))
    done = history(repo, "--out", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    points = _suite_json(tmp_path / "site", "default")["points"]
    assert [p["pr"] for p in points] == [12, 34, 56, 78, None]
    assert [p["pr_url"] for p in points] == [link.format(n=n) if link else None for n in (12, 34, 56, 78)] + [None]
    page = (tmp_path / "site" / "default.html").read_text()
    assert "SECRET" not in page and "x-access-token" not in page
    if link:
        assert f'<a href="{link.format(n=12)}">#12</a>' in page
    else:
        assert "<a href=\"https://" not in page and ">#12<" in page
