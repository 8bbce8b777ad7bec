"""The labelling page of a draft (``DIR/label.html``, docs/golden-set.md): self-contained, in the
HTML report's style, keyboard first; its "Download labels" file is what ``label apply --draft``
reads. Rendered from the package's template in the sandboxed environment."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from retrieval_gate.audit.draft_cases import DraftEntry
from retrieval_gate.render.escape import no_bidi
from retrieval_gate.render.html import html_environment

LABEL_TEMPLATE = "label.html.j2"
MAX_TEXT_CHARS = 20_000
MAX_GRADE = 3


def render_label_page(entries: Sequence[DraftEntry], *, titles: Mapping[str, str], texts: Mapping[str, str],
                      graded: bool, labeller: str = "", key_text: str = "") -> str:
    """The page: one query at a time with its candidates (id, title, text; the snippet and the
    marks of the query's terms are drawn in the page). ``key_text``: the draft's text, whose hash
    keys the work kept in the browser."""
    data = {
        "key": hashlib.sha256(key_text.encode()).hexdigest()[:16],
        "graded": graded, "max_grade": MAX_GRADE, "labeller": labeller,
        "queries": [{"id": e.id, "query": e.query, "intent": e.intent, "count": e.count,
                     "candidates": [{"card": c.card, "sha": c.sha, "title": titles.get(c.card, ""),
                                     "text": texts.get(c.card, "")[:MAX_TEXT_CHARS]} for c in e.candidates]}
                    for e in entries],
    }
    page = html_environment().get_template(LABEL_TEMPLATE).render(data=data, total=len(entries), graded=graded,
                                                                    max_grade=MAX_GRADE)
    return no_bidi(page)
