"""The documents a newcomer reads stay usable: the README is short, every performance figure says
how to reproduce it, every relative link lands, and nothing points to a document the repository
does not hold (the decisions live in docs/decisions.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

THIS = Path(__file__).resolve()
DOCS = sorted((REPO / "docs").glob("*.md"))
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = [
    (re.compile(r"\bADR\b|\bADR-?\d"), "an ADR"),
    (re.compile(r"reference article", re.I), "the reference article"),
    (re.compile(r"\bissues? #?\d+\b", re.I), "an issue number"),
    (re.compile(r"\bseeds'|\b(seed|tutorial) 00\d\b", re.I), "a seed document"),
]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, markup and punctuation dropped, lower case,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            out.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return out


def test_the_slug_rule_matches_githubs_on_known_headings():
    assert slug("Using a commit (`<owner>` and `<sha>`)") == "using-a-commit-owner-and-sha"
    assert slug("Golden-set hygiene: audit and subset") == "golden-set-hygiene-audit-and-subset"
    assert slug("Measured here (SciFact, `benchmarks/bench_retrievers.py`)") == \
        "measured-here-scifact-benchmarksbench_retrieverspy"
    assert slug("The image: versions, size and start-up") == "the-image-versions-size-and-start-up"


def test_the_readme_stays_at_most_300_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move detail into docs/*.md"


@pytest.mark.parametrize("doc", [REPO / "README.md", REPO / "CHANGELOG.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_lands(doc):
    broken = []
    for number, line in prose_lines(doc.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            path = (doc.parent / path_part).resolve() if path_part else doc
            if not path.exists():
                broken.append(f"{doc.name}:{number}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{doc.name}:{number}: {target} (no such heading in {path.name})")
    assert not broken, "\n".join(broken)


def performance_sections() -> list[tuple[str, list[str]]]:
    """(heading, lines) of each section of docs/performance.md, fences kept."""
    sections: list[tuple[str, list[str]]] = [("(top)", [])]
    fenced = False
    for line in (REPO / "docs" / "performance.md").read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and re.match(r"^#{2,6} ", line):
            sections.append((line, []))
        else:
            sections[-1][1].append(line)
    return sections


def commands_in(lines: list[str]) -> list[str]:
    """Benchmark scripts named in ```bash blocks or on a `Reproduce:` line."""
    text = "\n".join(lines)
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
    blocks += re.findall(r"^Reproduce: (.*)$", text, re.M)
    return re.findall(r"benchmarks/(bench_\w+\.py)", "\n".join(blocks))


def test_every_figure_table_in_performance_follows_its_reproducing_command():
    missing = []
    tables = 0
    for heading, lines in performance_sections():
        for i, line in enumerate(lines):
            if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
                tables += 1
                scripts = commands_in(lines[:i])
                if not scripts:
                    missing.append(f"{heading}: the table {line[:60]!r} has no ```bash command before it")
                for script in scripts:
                    if not (REPO / "benchmarks" / script).is_file():
                        missing.append(f"{heading}: benchmarks/{script} does not exist")
    assert tables >= 10, "docs/performance.md lost its figures"
    assert not missing, "\n".join(missing)


def test_every_performance_section_with_figures_names_its_command():
    for heading, lines in performance_sections()[1:]:
        if any(re.search(r"\d", line) for line in lines):
            assert commands_in(lines), f"{heading} gives figures without the command that reproduces them"


def tracked_files() -> list[Path]:
    roots = ["src", "docs", "tests", "README.md"]
    try:
        listed = subprocess.run(["git", "ls-files", "-z", *roots], cwd=REPO, capture_output=True,
                                check=True, timeout=60).stdout.decode("utf-8").split("\0")
        files = [REPO / name for name in listed if name]
    except (OSError, subprocess.SubprocessError):  # not a git checkout: every file under the roots
        files = [p for root in roots for p in ([REPO / root] if (REPO / root).is_file()
                                               else (REPO / root).rglob("*")) if p.is_file()]
    return [p for p in files if p.resolve() != THIS and p.is_file() and "__pycache__" not in p.parts]


def test_nothing_refers_to_a_document_outside_the_repository():
    found = []
    for path in tracked_files():
        text = path.read_bytes().decode("utf-8", errors="ignore")
        for number, line in enumerate(text.splitlines(), start=1):
            for pattern, what in OUTSIDE:
                if pattern.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: names {what}: {line.strip()[:100]}")
    assert not found, ("state the decision in docs/decisions.md and point there, or give the reason in "
                       "place:\n" + "\n".join(found))


def test_the_outside_reference_patterns_catch_what_they_should_and_nothing_else():
    def hits(line: str) -> bool:
        return any(pattern.search(line) for pattern, _ in OUTSIDE)
    for bad in ["see ADR-0023 (B)", "ADR-072 §2", "(the reference article, Part 9)", "Reference article",
                "issue 13, part 4", "fixed in issues 13", "before issue #21", "the seeds' format", "seed 004"]:
        assert hits(bad), bad
    for fine in ["ADRIAN", "the issue tracker", "POST /repos/o/r/issues/1/comments", "hadr", "--seed 13",
                 "the seed is what fixes the draws", "decisions.md#card-identity"]:
        assert not hits(fine), fine
