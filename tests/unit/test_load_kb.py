"""Knowledge bases: JSONL cards, BEIR corpus.jsonl, Markdown/text folders with front matter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.load.kb import load_kb, read_kb, split_front_matter
from tests import helpers
from tests.helpers import write_lines


def problems_of(path: Path) -> list[tuple[str, int | None, str]]:
    return [(Path(p.path).name, p.line, p.message) for p in helpers.problems_of(load_kb, path)]


def test_jsonl_cards_and_chunks(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "kb.jsonl",
        json.dumps({"id": "A", "text": "alpha", "title": "Alpha", "metadata": {"lang": "en"}}),
        json.dumps({"id": "B#1", "text": "beta one", "parent_id": "B"}),
        json.dumps({"id": "B#2", "text": "beta two", "parent_id": "B"}),
        json.dumps({"id": 3, "text": "number id", "title": None}),
    )
    kb = load_kb(path)
    assert kb.format == "jsonl" and kb.lines == {"A": 1, "B#1": 2, "B#2": 3, "3": 4}
    assert kb.card_ids == {"A", "B", "3"}
    assert kb.chunk_to_card == {"A": "A", "B#1": "B", "B#2": "B", "3": "3"}
    assert kb.cards[0].title == "Alpha" and kb.cards[3].title == ""


def test_beir_corpus_folder(tmp_path: Path) -> None:
    write_lines(tmp_path / "beir" / "corpus.jsonl",
                json.dumps({"_id": "4983", "title": "T", "text": "body", "metadata": {}}),
                json.dumps({"_id": "5", "title": "", "text": "b"}))
    kb = load_kb(tmp_path / "beir")
    assert kb.format == "beir" and kb.card_ids == {"4983", "5"} and kb.path == str(tmp_path / "beir")


def test_every_bad_jsonl_line_is_reported(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "kb.jsonl",
        '{"id": "A", "text": "ok"}',                # 1
        '{"id": "A", "text": "again"}',             # 2 duplicate
        '{"id": "C", "text": "x", "colour": "r"}',  # 3 unknown field
        '{"id": "D", "text": 5}',                   # 4 wrong type
        b'{"id": "E", "text": "\xff"}',             # 5 invalid UTF-8
        '{"id": "F",,}',                            # 6 JSON syntax
        '{"text": "no id"}',                        # 7 missing id
        '{"id": "G", "text": "t", "metadata": 1}',  # 8 metadata not a mapping
        '{"id": "", "text": "t"}',                  # 9 empty id
    )
    problems = problems_of(path)
    assert [line for _, line, _ in problems] == list(range(2, 10))
    messages = {line: msg for _, line, msg in problems}
    assert "duplicate card id 'A' (first at line 1)" in messages[2]
    assert "unknown field 'colour'" in messages[3]
    assert "'text'" in messages[4]
    assert "invalid UTF-8" in messages[5]
    assert "JSON syntax error" in messages[6]
    assert "missing required field 'id'" in messages[7]
    assert "'metadata'" in messages[8]
    assert "'id'" in messages[9]


def test_read_kb_keeps_the_good_cards(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "kb.jsonl", '{"id": "A", "text": "ok"}', "nope")
    kb, problems = read_kb(path)
    assert kb is not None and kb.card_ids == {"A"} and [p.line for p in problems] == [2]


@pytest.mark.parametrize(("content", "message"), [(b"", "knowledge base is empty"), (b"\n", "knowledge base is empty")])
def test_empty_kb(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "kb.jsonl"
    path.write_bytes(content)
    assert message in problems_of(path)[0][2]


def test_missing_kb(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope") == [("nope", None, "knowledge base not found")]


# --- Markdown / text folders ----------------------------------------------------------------------

def test_markdown_folder_with_front_matter(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    write_lines(folder / "billing" / "refunds.md", "---", "id: refund-policy", "title: Refunds",
                "locale: pt-BR", "updated: 2024-05-01", "metadata:", "  team: billing", "---",
                "# Ignored heading", "Refunds take 5 days.")
    write_lines(folder / "faq.md", "# Frequently asked", "", "Body text.")
    write_lines(folder / "chunk.md", "---", "id: faq#2", "parent_id: faq", "---", "More of the FAQ.")
    write_lines(folder / "notes.txt", "plain text card")
    write_lines(folder / ".hidden" / "x.md", "ignored")
    write_lines(folder / "image.png", "ignored")
    kb = load_kb(folder)
    cards = {c.id: c for c in kb.cards}
    assert kb.format == "markdown"
    assert set(cards) == {"refund-policy", "faq", "faq#2", "notes"}
    refunds = cards["refund-policy"]
    assert refunds.title == "Refunds"
    assert refunds.metadata == {"locale": "pt-BR", "updated": "2024-05-01", "team": "billing"}
    assert refunds.text.strip() == "# Ignored heading\nRefunds take 5 days."
    assert cards["faq"].title == "Frequently asked"  # from the first heading
    assert cards["faq#2"].parent_id == "faq" and kb.chunk_to_card["faq#2"] == "faq"
    assert kb.card_ids == {"refund-policy", "faq", "notes"}


def test_markdown_default_id_is_the_relative_path_without_suffix(tmp_path: Path) -> None:
    write_lines(tmp_path / "kb" / "a" / "b.markdown", "text")
    assert load_kb(tmp_path / "kb").card_ids == {"a/b"}


def test_markdown_problems_name_the_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    write_lines(folder / "a_good.md", "---", "id: same", "---", "text")
    write_lines(folder / "b_dup.md", "---", "id: same", "---", "text")
    write_lines(folder / "unclosed.md", "---", "id: x", "text")
    write_lines(folder / "yaml.md", "---", "id: y", "title: [unclosed", "---", "text")
    write_lines(folder / "list.md", "---", "- a", "---", "text")
    write_lines(folder / "empty.md", "---", "id: e", "---", "   ")
    write_lines(folder / "latin1.md", b"ok line", b"caf\xe9")
    write_lines(folder / "meta.md", "---", "metadata: 3", "---", "text")
    found = {name: (line, msg) for name, line, msg in problems_of(folder)}
    assert found["b_dup.md"] == (1, f"duplicate card id 'same' (also {folder / 'a_good.md'})")
    assert "never closed" in found["unclosed.md"][1]
    assert found["yaml.md"][0] in (3, 4) and "front matter" in found["yaml.md"][1]
    assert "mapping" in found["list.md"][1]
    assert "no text" in found["empty.md"][1]
    assert found["latin1.md"] == (2, "invalid UTF-8")
    assert "'metadata' must be a mapping" in found["meta.md"][1]
    assert "a_good.md" not in found and len(found) == 7


def test_empty_markdown_folder(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    assert "no .md, .markdown or .txt cards" in problems_of(tmp_path / "kb")[0][2]


@pytest.mark.parametrize(
    ("text", "meta", "body"),
    [
        ("no front matter", None, "no front matter"),
        ("---\nid: a\n---\nbody\n", {"id": "a"}, "body\n"),
        ("---\n---\nbody", {}, "body"),
        ("---\ntitle: x\n...\nbody\n---\nmore", {"title": "x"}, "body\n---\nmore"),
        ("---\nid: a\n----\nbody", None, None),  # '----' is not a closing line: never closed
    ],
)
def test_split_front_matter(text: str, meta: dict | None, body: str | None) -> None:
    if body is None:
        with pytest.raises(ValueError, match="never closed"):
            split_front_matter(text)
        return
    got_meta, got_body, _ = split_front_matter(text)
    assert (got_meta, got_body) == (meta, body)
