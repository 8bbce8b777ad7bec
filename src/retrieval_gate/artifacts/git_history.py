"""Every committed version of a baseline file, read from git (adapter): the repository is the
versioned store. ``git log --follow --raw`` lists the commits that wrote the file (renames
followed) with the blob of each version; one ``git cat-file --batch`` streams the blobs, oldest
first, with the KB manifest beside each; each version goes through the baseline's input limits,
codec and migrations (``artifacts.baseline.baseline_from_text``; each distinct case line once:
``artifacts.baseline_lines``). A version that does not parse
(a hand edit, a conflict marker) is handed on with its problem, not raised.

git runs as a subprocess under one total deadline (``deadline_s``): past it, the process is
killed and ``HistoryError`` says so. A shallow clone is refused (it holds only the last commits:
the history would be silently short) with the fix."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.artifacts.baseline_lines import VersionReader
from retrieval_gate.errors import BaselineError, HistoryError
from retrieval_gate.history.model import Version
from retrieval_gate.score.kb_manifest import manifest_path

DEADLINE_S = 300.0  # every git call of one `history` run together
SHALLOW_FIX = ("a shallow clone holds only the last commits, so the baseline's history would be cut short; "
               "fetch the whole history: `fetch-depth: 0` (actions/checkout), `GIT_DEPTH: 0` (GitLab CI) "
               "or `git fetch --unshallow`")
_RECORD, _FIELD = "\x1e", "\x1f"


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    message: str
    path: str  # the baseline's path at this commit (from the repository's root)
    blob: str


class Deadline:
    """The time left of one total budget."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise HistoryError(f"git did not answer within {self.seconds:g} s")
        return left


def _git(repo: Path, *args: str, deadline: Deadline) -> str:
    try:
        done = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=repo, capture_output=True,
                              timeout=deadline.left(), check=False)
    except FileNotFoundError:
        raise HistoryError("git not found: `history` reads the baseline's versions from git") from None
    except subprocess.TimeoutExpired:
        raise HistoryError(f"git {args[0]} did not finish within {deadline.seconds:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise HistoryError(f"{repo}: git {args[0]}: {message[0] if message else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")


def check_repository(repo: Path, *, deadline: Deadline) -> None:
    """A repository with its whole history, or ``HistoryError`` (not one; a shallow clone)."""
    if _git(repo, "rev-parse", "--is-shallow-repository", deadline=deadline).strip() == "true":
        raise HistoryError(f"{repo}: {SHALLOW_FIX}")


def tracked_baselines(repo: Path, *, folder: str, deadline: Deadline) -> list[str]:
    """The baseline files at HEAD under ``folder`` (``<suite>.json``, not the KB manifests or audits)."""
    listed = _git(repo, "ls-tree", "--name-only", "HEAD", "--", f"{folder.rstrip('/')}/", deadline=deadline)
    return sorted(name for name in listed.splitlines()
                  if name.endswith(".json") and not name.endswith((".kb.json", ".audit.json")))


def commits_of(repo: Path, path: str, *, since: str | None, limit: int | None, deadline: Deadline) -> list[Commit]:
    """The commits that wrote ``path`` (renames followed), oldest first: the last ``limit``, from
    ``since`` on. A commit that leaves the content as it was (a rename, a mode change) is no new version."""
    args = ["log", "--follow", "--raw", "--no-abbrev",
            f"--format={_RECORD}%H{_FIELD}%cI{_FIELD}%B{_FIELD}"]
    if since:
        args.append(f"--since={since}")
    out = []
    for record in _git(repo, *args, "--", path, deadline=deadline).split(_RECORD)[1:]:
        sha, date, message, raw = record.split(_FIELD, 3)
        change = next((line for line in raw.splitlines() if line.startswith(":")), None)
        if change is None:
            continue
        meta, *paths = change.split("\t")
        fields = meta.split()
        if fields[-1].startswith("D"):
            continue
        out.append(Commit(sha=sha, date=date, message=message.strip(), path=paths[-1], blob=fields[3]))
    oldest_first = [c for i, c in enumerate(out[::-1]) if i == 0 or c.blob != out[len(out) - i].blob]
    return oldest_first[-limit:] if limit is not None else oldest_first


def read_versions(repo: Path, commits: list[Commit], *, deadline: Deadline) -> Iterator[Version]:
    """Each commit's version of the baseline and the KB manifest beside it, streamed through one
    ``git cat-file --batch`` (module docstring)."""
    if not commits:
        return
    requests = "".join(f"{c.blob}\n{c.sha}:{manifest_path(c.path)}\n" for c in commits).encode()
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    timer = threading.Timer(deadline.left(), proc.kill)
    timer.start()
    writer = threading.Thread(target=_feed, args=(proc, requests), daemon=True)
    writer.start()
    reader = VersionReader()
    try:
        for commit in commits:
            text = _object(proc)
            manifest = _object(proc)
            yield _version(commit, text=text, manifest=manifest, reader=reader)
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
        writer.join()
    deadline.left()


def _feed(proc: subprocess.Popen[bytes], requests: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(requests)
        proc.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


def _object(proc: subprocess.Popen[bytes]) -> bytes | None:
    assert proc.stdout is not None
    header = proc.stdout.readline()
    if not header:
        raise HistoryError("git cat-file stopped before every version was read (past the deadline?)")
    parts = header.split()
    if len(parts) != 3 or parts[1] != b"blob":
        return None  # missing (no KB manifest at that commit) or not a file
    size = int(parts[2])
    data = proc.stdout.read(size + 1)
    if len(data) != size + 1:
        raise HistoryError("git cat-file stopped in the middle of a version (past the deadline?)")
    return data[:size]


def _version(commit: Commit, *, text: bytes | None, manifest: bytes | None, reader: VersionReader) -> Version:
    source = f"{commit.sha[:12]}:{commit.path}"
    common = {"sha": commit.sha, "date": commit.date, "message": commit.message, "path": commit.path}
    if text is None:
        return Version(**common, baseline=None, problem=f"{source}: not a file")
    try:
        baseline = reader.baseline(text.decode("utf-8-sig"), source=source)
    except UnicodeDecodeError as exc:
        return Version(**common, baseline=None,
                       problem=f"{source}: not a baseline: invalid UTF-8 at byte {exc.start + 1}")
    except BaselineError as exc:
        return Version(**common, baseline=None, problem=str(exc))
    kb = None
    if manifest is not None:
        try:
            kb = reader.manifest(manifest.decode("utf-8-sig"),
                                    source=f"{commit.sha[:12]}:{manifest_path(commit.path)}")
        except (UnicodeDecodeError, BaselineError):
            kb = None  # an unreadable manifest: the KB's change is then unseen, never guessed
    return Version(**common, baseline=baseline, kb=kb)


def baseline_history(repo: Path, path: str, *, since: str | None, limit: int | None,
                     deadline: Deadline) -> tuple[list[Commit], Iterator[Version]]:
    """The commits of ``path`` and the stream of their versions; a ``path`` git never held is
    ``HistoryError``."""
    commits = commits_of(repo, path, since=since, limit=limit, deadline=deadline)
    if not commits and since is None:
        raise HistoryError(f"{path}: no committed version in {repo} (is the baseline committed?)")
    return commits, read_versions(repo, commits, deadline=deadline)
