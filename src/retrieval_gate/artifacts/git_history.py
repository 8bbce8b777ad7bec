"""Every committed version of a baseline file, read from git (adapter): the repository is the
versioned store. Nothing a commit message says can change what is read:

- ``git log -z --raw --no-renames`` lists the commits that wrote the file, NUL-separated, with
  only fixed-format fields (sha, committer date, the raw change line and the path); the message
  is not in that output. Where the file was **added**, ``git diff-tree -z -M`` (renames, never
  copies) says whether that commit renamed it from another path; if so the walk goes on with the
  old path from the commit before. A copy starts a file's history afresh (``git log --follow``
  would follow copies too, merging files into one suite).
- ``git cat-file --batch-check`` sizes every object first (the version, the KB manifest beside it,
  the commit for its message); a version larger than ``MAX_VERSION_BYTES`` is a gap with its
  size, never read. One ``git cat-file --batch`` then streams the rest, oldest first, each object
  asked for by its id alone.
- Each version goes through the baseline's input limits, codec and migrations
  (``artifacts.baseline.baseline_from_text``; each distinct case line once:
  ``artifacts.baseline_lines``). A version that does not parse (a hand edit, a conflict marker)
  is handed on with its problem, not raised; output git should not give is ``HistoryError``.

git runs as a subprocess under one total deadline (``deadline_s``): past it, the process is
killed and ``HistoryError`` says so. A shallow clone is refused (it holds only the last commits:
the history would be silently short) with the fix."""

from __future__ import annotations

import queue
import re
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
PREFETCH = 2  # versions read ahead of the walk
MAX_VERSION_BYTES = 16 * 1024**2  # a larger version of a baseline (or its manifest, or commit) is not read
MAX_MESSAGE_BYTES = 1024**2  # a measured commit larger than this: its message is not read
SHALLOW_FIX = ("a shallow clone holds only the last commits, so the baseline's history would be cut short; "
               "fetch the whole history: `fetch-depth: 0` (actions/checkout), `GIT_DEPTH: 0` (GitLab CI) "
               "or `git fetch --unshallow`")
# settings of the user's that would change what git prints: off for every call
_GIT = ("git", "-c", "core.quotePath=false", "-c", "log.follow=false", "-c", "log.showSignature=false",
        "-c", "diff.renames=false", "-c", "color.ui=never")
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HEADER = re.compile(r"\n?commit ([0-9a-f]{40}|[0-9a-f]{64}) (\S+)\Z")
_OBJECT = re.compile(rb"([0-9a-f]{40}|[0-9a-f]{64}) ([a-z]+) (\d+)\n\Z")


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
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
        done = subprocess.run([*_GIT, *args], cwd=repo, capture_output=True, timeout=deadline.left(), check=False)
    except FileNotFoundError:
        raise HistoryError("git not found: `history` reads the baseline's versions from git") from None
    except subprocess.TimeoutExpired:
        raise HistoryError(f"git {args[0]} did not finish within {deadline.seconds:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise HistoryError(f"{repo}: git {args[0]}: {message[0] if message else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "surrogateescape")


def check_repository(repo: Path, *, deadline: Deadline) -> None:
    """A repository with its whole history, or ``HistoryError`` (not one; a shallow clone)."""
    if _git(repo, "rev-parse", "--is-shallow-repository", deadline=deadline).strip() == "true":
        raise HistoryError(f"{repo}: {SHALLOW_FIX}")


def tracked_baselines(repo: Path, *, folder: str, deadline: Deadline) -> list[str]:
    """The baseline files at HEAD under ``folder`` (``<suite>.json``, not the KB manifests or audits)."""
    listed = _git(repo, "ls-tree", "-z", "--name-only", "HEAD", "--", f"{folder.rstrip('/')}/", deadline=deadline)
    return sorted(name for name in listed.split("\0")
                  if name.endswith(".json") and not name.endswith((".kb.json", ".audit.json")))


def remote_url(repo: Path, *, deadline: Deadline) -> str | None:
    """The fetch URL of ``origin`` (None: no such remote), as git holds it — credentials
    included, so it goes only to ``history.forge_link.web_base``, which keeps the host and path."""
    try:
        return _git(repo, "remote", "get-url", "origin", deadline=deadline).strip() or None
    except HistoryError:
        return None


def _unexpected(what: str, token: str) -> HistoryError:
    return HistoryError(f"git {what} printed what `history` does not read: {token[:80]!r}")


@dataclass(frozen=True)
class _Change:
    status: str  # A, M, T, D, R<score>
    blob: str
    paths: tuple[str, ...]


def _raw_changes(tokens: list[str], start: int, *, what: str) -> tuple[list[_Change], int]:
    """The raw change entries (``:<modes> <blobs> <status>`` NUL path [NUL path]) from ``start``."""
    out, i = [], start
    while i < len(tokens) and tokens[i].lstrip("\n").startswith(":"):
        fields = tokens[i].lstrip("\n")[1:].split(" ")
        if len(fields) != 5 or not fields[4]:
            raise _unexpected(what, tokens[i])
        count = 2 if fields[4][0] in "RC" else 1
        paths = tuple(tokens[i + 1:i + 1 + count])
        if len(paths) != count:
            raise _unexpected(what, tokens[i])
        out.append(_Change(status=fields[4], blob=fields[3], paths=paths))
        i += 1 + count
    return out, i


def _log(repo: Path, path: str, *, start: str | None, since: str | None,
         deadline: Deadline) -> list[tuple[str, str, _Change]]:
    """``[(sha, committer date, the change to path)]`` newest first: the commits that changed
    ``path`` itself (no rename detection), reachable from ``start`` (HEAD)."""
    args = ["log", "-z", "--raw", "--no-abbrev", "--no-renames", "--no-color", "--format=commit %H %cI"]
    if since:
        args.append(f"--since={since}")
    tokens = _git(repo, *args, *([start] if start else []), "--", path, deadline=deadline).split("\0")
    out, i = [], 0
    while i < len(tokens):
        if not tokens[i].strip("\n"):
            i += 1
            continue
        header = _HEADER.match(tokens[i])
        if header is None:
            raise _unexpected("log", tokens[i])
        changes, i = _raw_changes(tokens, i + 1, what="log")
        out.extend((header.group(1), header.group(2), c) for c in changes if c.paths[-1] == path)
    return out


def _renamed_from(repo: Path, sha: str, path: str, *, deadline: Deadline) -> str | None:
    """The path commit ``sha`` renamed to ``path`` (rename detection, never copies), or None."""
    tokens = _git(repo, "diff-tree", "-z", "-r", "-M", "--no-abbrev", "--no-commit-id", "--root", "--no-color",
                  "--no-ext-diff", sha, deadline=deadline).split("\0")
    changes, end = _raw_changes(tokens, 0, what="diff-tree")
    if any(t for t in tokens[end:]):
        raise _unexpected("diff-tree", tokens[end])
    return next((c.paths[0] for c in changes if c.status.startswith("R") and c.paths[1] == path), None)


def commits_of(repo: Path, path: str, *, since: str | None, limit: int | None, deadline: Deadline) -> list[Commit]:
    """The commits that wrote ``path`` (renames followed, copies not), oldest first: the last
    ``limit``, from ``since`` on. A commit that leaves the content as it was (a rename, a mode
    change) is no new version."""
    out: list[Commit] = []  # newest first
    current, start = path, None
    while True:
        older = None
        for sha, date, change in _log(repo, current, start=start, since=since, deadline=deadline):
            if change.status.startswith("D"):
                continue
            out.append(Commit(sha=sha, date=date, path=current, blob=change.blob))
            if change.status.startswith("A") and (source := _renamed_from(repo, sha, current,
                                                                          deadline=deadline)) is not None:
                older = (source, f"{sha}^")
                break
        if older is None:
            break
        current, start = older
    oldest_first = [c for i, c in enumerate(out[::-1]) if i == 0 or c.blob != out[len(out) - i].blob]
    return oldest_first[-limit:] if limit is not None else oldest_first


def _sizes(repo: Path, names: list[str], *, deadline: Deadline) -> list[tuple[str, str, int] | None]:
    """``(object id, type, size)`` of each name (``<id>`` or ``<commit>:<path>``), None when git
    has none: one ``git cat-file --batch-check``."""
    try:
        done = subprocess.run([*_GIT, "cat-file", "--batch-check"], cwd=repo, input="".join(
            f"{n}\n" for n in names).encode("utf-8", "surrogateescape"), capture_output=True,
                              timeout=deadline.left(), check=False)
    except subprocess.TimeoutExpired:
        raise HistoryError(f"git cat-file did not finish within {deadline.seconds:g} s") from None
    lines = done.stdout.splitlines(keepends=True)
    if done.returncode != 0 or len(lines) != len(names):
        raise HistoryError(f"{repo}: git cat-file --batch-check: {len(lines)} answers to {len(names)} questions")
    out: list[tuple[str, str, int] | None] = []
    for line in lines:
        found = _OBJECT.fullmatch(line)
        out.append((found.group(1).decode(), found.group(2).decode(), int(found.group(3))) if found else None)
    return out


@dataclass(frozen=True)
class _Ask:
    """What to read of one object: its id, or why it is not read (None: git has no such file)."""

    oid: str | None = None
    size: int = 0
    skipped: str | None = None


def _asks(repo: Path, commits: list[Commit], *, deadline: Deadline,
          max_bytes: int) -> list[tuple[_Ask, _Ask, _Ask]]:
    """Per commit: (the version, its KB manifest, the commit object)."""
    names = []
    for c in commits:
        manifest = manifest_path(c.path)
        names += [c.blob, f"{c.sha}:{manifest}" if "\n" not in manifest and "\r" not in manifest else "",
                  c.sha]
    sized = _sizes(repo, names, deadline=deadline)
    out = []
    for i in range(0, len(sized), 3):
        asks = []
        for found, kind in zip(sized[i:i + 3], ("blob", "blob", "commit"), strict=True):
            if found is None or found[1] != kind:
                asks.append(_Ask(skipped="not a file" if found is not None else None))
            elif found[2] > max_bytes:
                asks.append(_Ask(size=found[2], skipped=f"{found[2]:,} bytes, larger than `history` reads "
                                                        f"({max_bytes:,} bytes): not read"))
            else:
                asks.append(_Ask(oid=found[0], size=found[2]))
        out.append((asks[0], asks[1], asks[2]))
    return out


def read_versions(repo: Path, commits: list[Commit], *, deadline: Deadline,
                  max_bytes: int = MAX_VERSION_BYTES) -> Iterator[Version]:
    """Each commit's version of the baseline and the KB manifest beside it, streamed through one
    ``git cat-file --batch`` (module docstring)."""
    if not commits:
        return
    asks = _asks(repo, commits, deadline=deadline, max_bytes=max_bytes)
    requests = "".join(f"{a.oid}\n" for triple in asks for a in triple if a.oid is not None).encode()
    proc = subprocess.Popen([*_GIT, "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    timer = threading.Timer(deadline.left(), proc.kill)
    timer.start()
    writer = threading.Thread(target=_feed, args=(proc, requests), daemon=True)
    writer.start()
    reader = VersionReader()
    measured = _Messages(repo, deadline=deadline)
    objects: queue.Queue[list[bytes | None] | Exception] = queue.Queue(maxsize=PREFETCH)
    stop = threading.Event()
    fetcher = threading.Thread(target=_prefetch, args=(proc, asks, objects, stop), daemon=True)
    fetcher.start()
    try:
        for commit, (blob, _manifest, _message) in zip(commits, asks, strict=True):
            texts = objects.get()
            if isinstance(texts, HistoryError):
                raise texts
            if isinstance(texts, Exception):
                raise HistoryError(f"git cat-file: {texts}")
            yield _version(commit, text=texts[0], skipped=blob.skipped, manifest=texts[1],
                           message=_message_of(texts[2]), reader=reader, measured=measured)
    finally:
        measured.close()
        stop.set()
        timer.cancel()
        proc.kill()
        proc.wait()
        writer.join()
        fetcher.join()
        proc.stdout.close()
    deadline.left()


def _prefetch(proc: subprocess.Popen[bytes], asks: list[tuple[_Ask, _Ask, _Ask]],
              out: queue.Queue[list[bytes | None] | Exception], stop: threading.Event) -> None:
    """Read the objects ahead of the walk (git decompresses on one core while the walk parses
    on the other; the pipe alone would hold git back at 64 KB), at most ``PREFETCH`` versions ahead."""
    try:
        for triple in asks:
            item: list[bytes | None] | Exception = [_object(proc, a) if a.oid is not None else None for a in triple]
            if not _put(out, item, stop):
                return
    except Exception as exc:  # handed to the walk, which raises it as HistoryError
        _put(out, exc, stop)


def _put(out: queue.Queue[list[bytes | None] | Exception], item: list[bytes | None] | Exception,
         stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            out.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


class _Messages:
    """The message of a commit named by a version (the commit it was measured on), one object read
    each through one interactive ``git cat-file --batch`` (it answers each line at once); an id
    that is not hex, not in the repository or not a commit is ""."""

    def __init__(self, repo: Path, *, deadline: Deadline) -> None:
        self.repo, self.deadline = repo, deadline
        self.proc: subprocess.Popen[bytes] | None = None
        self.timer: threading.Timer | None = None
        self.known: dict[str, str] = {}

    def of(self, sha: str | None) -> str:
        if sha is None or not _HEX.fullmatch(sha):
            return ""
        if sha not in self.known:
            self.known[sha] = self._read(sha)
        return self.known[sha]

    def _read(self, sha: str) -> str:
        if self.proc is None:
            self.proc = subprocess.Popen([*_GIT, "cat-file", "--batch"], cwd=self.repo, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.timer = threading.Timer(self.deadline.left(), self.proc.kill)
            self.timer.start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(f"{sha}\n".encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise HistoryError("git cat-file stopped (past the deadline?)") from None
        header = self.proc.stdout.readline()
        if not header:
            raise HistoryError("git cat-file stopped (past the deadline?)")
        found = _OBJECT.fullmatch(header)
        if found is None:
            return ""  # "<sha> missing"
        size, left = int(found.group(3)), int(found.group(3)) + 1
        kept = bytearray()
        while left:  # an object too large for a message is passed over, never held
            chunk = self.proc.stdout.read(min(left, 1 << 20))
            if not chunk:
                raise HistoryError("git cat-file stopped in the middle of a commit (past the deadline?)")
            left -= len(chunk)
            if size <= MAX_MESSAGE_BYTES:
                kept += chunk
        return _message_of(bytes(kept[:size])) if found.group(2) == b"commit" and size <= MAX_MESSAGE_BYTES else ""

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.proc is not None:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()


def _feed(proc: subprocess.Popen[bytes], requests: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(requests)
        proc.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


def _object(proc: subprocess.Popen[bytes], ask: _Ask) -> bytes:
    """The next object of the stream: the one ``ask`` sized."""
    assert proc.stdout is not None
    header = proc.stdout.readline()
    if not header:
        raise HistoryError("git cat-file stopped before every version was read (past the deadline?)")
    found = _OBJECT.fullmatch(header)
    if found is None or found.group(1).decode() != ask.oid or int(found.group(3)) != ask.size:
        raise HistoryError(f"git cat-file answered {header[:100]!r} for {ask.oid}")
    data = proc.stdout.read(ask.size + 1)
    if len(data) != ask.size + 1:
        raise HistoryError("git cat-file stopped in the middle of a version (past the deadline?)")
    return data[:ask.size]


def _message_of(commit: bytes | None) -> str:
    """A commit object's message: what follows its headers' first empty line."""
    if commit is None:
        return ""
    _headers, _sep, message = commit.partition(b"\n\n")
    return message.decode("utf-8", "replace").strip()


def _version(commit: Commit, *, text: bytes | None, skipped: str | None, manifest: bytes | None,
             message: str, reader: VersionReader, measured: _Messages) -> Version:
    source = f"{commit.sha[:12]}:{commit.path}"
    common = {"sha": commit.sha, "date": commit.date, "message": message, "path": commit.path}
    if text is None:
        return Version(**common, baseline=None, problem=f"{source}: {skipped or 'not a file'}")
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
    measured_message = measured.of(baseline.sha) if baseline.sha and baseline.sha != commit.sha else ""
    return Version(**common, baseline=baseline, kb=kb, measured_message=measured_message)


def baseline_history(repo: Path, path: str, *, since: str | None, limit: int | None,
                     deadline: Deadline) -> tuple[list[Commit], Iterator[Version]]:
    """The commits of ``path`` and the stream of their versions; a ``path`` git never held is
    ``HistoryError``."""
    commits = commits_of(repo, path, since=since, limit=limit, deadline=deadline)
    if not commits and since is None:
        raise HistoryError(f"{path}: no committed version in {repo} (is the baseline committed?)")
    return commits, read_versions(repo, commits, deadline=deadline)
