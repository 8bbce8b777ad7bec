"""The labelling page of a draft (``DIR/label.html``, docs/golden-set.md): self-contained, in the
HTML report's style, keyboard first and usable by tap; its "Download labels" file is what ``label
apply --draft`` reads. Rendered from the package's template in the sandboxed environment.

The page's data: each pooled card once (id, title, its Markdown as plain text), and the queries —
interleaved across intents by traffic (``page_order``) — each with its marked terms and its
candidates as (card, sha). The work is kept in the browser per labeller, by (case, card, sha), so
a redraft shows what was judged of the pairs it still holds."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence

from markupsafe import Markup

from retrieval_gate.golden.draft_entry import DraftEntry
from retrieval_gate.golden.draw import terms
from retrieval_gate.render.escape import no_bidi
from retrieval_gate.render.html import html_environment
from retrieval_gate.render.plaintext import markdown_text

LABEL_TEMPLATE = "label.html.j2"
MAX_TEXT_CHARS = 20_000
MAX_GRADE = 3
# In a <script type="application/json">: no "</script>" or "<!--" can end or bend it.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def page_order(entries: Sequence[DraftEntry], *, traffic: Mapping[str, int] | None = None) -> list[DraftEntry]:
    """The queries interleaved across intents by traffic, so that the first n labelled are a
    sample of the log's intents in proportion to their traffic: position by position, the intent
    whose queries so far are fewest for its traffic goes next (the Sainte-Laguë divisor rule, the
    smallest (taken + ½) / traffic; ties: more traffic, then the intent seen first); an intent
    whose queries are all placed drops out. Within an intent, the draft's order. ``traffic``: each
    intent's traffic in the log; by default the summed counts of its drafted queries."""
    groups: dict[str, list[DraftEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.intent, []).append(entry)
    weight = {name: max(1, (traffic or {}).get(name) or sum(e.count for e in group))
              for name, group in groups.items()}
    first = {name: i for i, name in enumerate(groups)}
    taken = dict.fromkeys(groups, 0)
    out: list[DraftEntry] = []
    while len(out) < len(entries):
        name = min((n for n in groups if taken[n] < len(groups[n])),
                   key=lambda n: ((taken[n] + 0.5) / weight[n], -weight[n], first[n]))
        out.append(groups[name][taken[name]])
        taken[name] += 1
    return out


def apply_command(*, draft: str, cases: str, kb: str) -> str:
    """The ``label apply`` command the page's "saved" hint prints, each path shell-quoted."""
    return (f"retrieval-gate label apply labels.jsonl --draft {shlex.quote(draft)} --cases {shlex.quote(cases)}"
            f" --kb {shlex.quote(kb)}")


def _card_text(title: str, markdown: str) -> str:
    """The card's text as plain text, without a first line that only repeats its title."""
    text = markdown_text(markdown)
    head, _, rest = text.partition("\n")
    return rest.lstrip("\n") if title and head.strip().casefold() == title.strip().casefold() else text


def _query_terms(query: str) -> list[str]:
    return list(dict.fromkeys(terms(query)))


def render_label_page(entries: Sequence[DraftEntry], *, titles: Mapping[str, str], texts: Mapping[str, str],
                      graded: bool, labeller: str = "", key_text: str = "", apply: str = "",
                      traffic: Mapping[str, int] | None = None) -> str:
    """The page: one query at a time with its candidates. ``texts``: each card's Markdown (shown as
    plain text, stored once in the page); ``key_text``: the draft's text, whose hash keys where
    this draft's page was left; ``apply``: the ``label apply`` command the "saved" hint prints
    (``apply_command``); ``traffic``: each intent's traffic, for ``page_order``."""
    ordered = page_order(entries, traffic=traffic)
    pooled = sorted({c.card for e in ordered for c in e.candidates})
    index = {card: i for i, card in enumerate(pooled)}
    data = {
        "draft": hashlib.sha256(key_text.encode()).hexdigest()[:16],
        "graded": graded, "max_grade": MAX_GRADE, "labeller": labeller, "apply": apply,
        "cards": [[card, no_bidi(titles.get(card, "")),
                   no_bidi(_card_text(titles.get(card, ""), texts.get(card, ""))[:MAX_TEXT_CHARS])] for card in pooled],
        "queries": [{"id": e.id, "query": no_bidi(e.query), "intent": no_bidi(e.intent), "count": e.count,
                     "terms": _query_terms(e.query), "c": [[index[c.card], c.sha] for c in e.candidates]}
                    for e in ordered],
    }
    # bidi controls written visibly in each string before it is encoded: JSON.parse would read an
    # escape the page's own pass wrote inside the JSON back into the control itself
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).translate(_SCRIPT_SAFE)
    page = html_environment().get_template(LABEL_TEMPLATE).render(data_json=Markup(payload), total=len(entries),
                                                                    graded=graded, max_grade=MAX_GRADE)
    return no_bidi(page)
