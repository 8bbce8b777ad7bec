"""Fast paths for the two large inputs: a TREC run of 10,000 cases × 100 ids is a
million lines, and reading it line by line in Python was half of ``score``'s time.

Each function here reads a whole, well-formed file with C-level string operations (one decode,
one split) and returns ``None`` at the first doubt — an undecodable byte, a line that is not six
columns, a rank that is not an integer, a score that is not a number or is NaN, blank lines inside
the file. The callers then take the line-by-line path, which names every problem as ``file:line``,
so messages never depend on the fast path; only the well-formed case is faster.

The results are the same as the line-by-line readers' (the tests compare both on the same
files): same lines, same ids, same scores, same order.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Iterator
from itertools import compress, pairwise
from operator import gt, ne

from retrieval_gate.load.boundary import MAX_ID_CHARS, MAX_RECORDS
from retrieval_gate.models import RankedList

# Replaces each newline in the TREC fast path: not whitespace, so ``str.split`` keeps it as a token
# of its own between lines. A file that contains it anywhere takes the line-by-line path.
_MARK = "\x00"


def decoded_text(data: bytes) -> str | None:
    """The whole file as text (BOM dropped), or None if any byte is not UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` of each non-blank line of a decoded file — exactly what
    ``textfile.iter_lines`` yields line by line, without decoding each line alone. Lazy: asking
    for the first line (the run's format) does not split a million-line file."""
    start, number, size = 0, 0, len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        number += 1
        line = text[start:end]
        start = end + 1
        if line.endswith("\r"):
            line = line.rstrip("\r")
        # ``iter_lines`` skips a line whose bytes are all ASCII whitespace (``bytes.strip``).
        if line.strip(" \t\n\r\x0b\x0c"):
            yield number, line


def fast_trec(data: bytes) -> dict[str, RankedList] | None:
    """A TREC run (``qid Q0 docid rank score tag``) read in one pass, or None when the file is not
    plainly well-formed (see the module's docstring). Rankings are ordered as trec_eval orders
    them: score descending, ties by docid descending."""
    enabled = gc.isenabled()
    gc.disable()  # millions of strings and small tuples, no cycles: the collector would only rescan them
    try:
        return _read_trec(data)
    finally:
        if enabled:
            gc.enable()


def _read_trec(data: bytes) -> dict[str, RankedList] | None:
    text = decoded_text(data)
    if text is None or _MARK in text:
        return None
    # Each line becomes its six columns followed by a mark token: columns land at fixed strides.
    marks = text.count("\n")
    tokens = text.replace("\n", f" {_MARK} ").split()
    del text
    if tokens and tokens[-1] != _MARK:
        tokens.append(_MARK)  # the last line had no newline
        marks += 1
    n = len(tokens) // 7
    if not n or len(tokens) != 7 * n or marks != n or tokens[6::7].count(_MARK) != n:
        return None  # a line with other than 6 columns, or blank lines: the slow path tells which
    qids, docs = tokens[0::7], tokens[2::7]
    try:
        ranks = tokens[3::7]
        if not all(map(str.isdecimal, ranks)):  # plain digits are integers; else int() decides
            deque(map(int, ranks), maxlen=0)
        scores = list(map(float, tokens[4::7]))
    except ValueError:
        return None
    total = sum(scores)
    if not math.isfinite(total) and not all(map(math.isfinite, scores)):  # NaN, inf: the slow path refuses them
        return None
    if n > MAX_RECORDS or max(map(len, docs)) > MAX_ID_CHARS:
        return None  # over a limit: the slow path names the line
    del tokens
    return _rankings(qids, docs, scores)


def _rankings(qids: list[str], docs: list[str], scores: list[float]) -> dict[str, RankedList] | None:
    n = len(qids)
    starts = [0, *compress(range(1, n), map(ne, qids[1:], qids[:-1])), n]
    blocks: dict[str, list[tuple[int, int]]] = {}
    for a, b in pairwise(starts):
        blocks.setdefault(qids[a], []).append((a, b))
    if max(map(len, blocks)) > MAX_ID_CHARS:  # every qid is a key of blocks: checked once each
        return None
    out: dict[str, RankedList] = {}
    for qid, spans in blocks.items():
        if len(spans) == 1:
            a, b = spans[0]
            s, d = scores[a:b], docs[a:b]
        else:  # the qid's rows are not contiguous: gather them in file order
            s = [v for a, b in spans for v in scores[a:b]]
            d = [v for a, b in spans for v in docs[a:b]]
        if not all(map(gt, s, s[1:])):  # not strictly descending: sort as trec_eval does
            ordered = sorted(zip(s, d, strict=True), reverse=True)
            s = [p[0] for p in ordered]
            d = [p[1] for p in ordered]
        out[qid] = RankedList(ids=tuple(d), scores=tuple(s))
    return out
