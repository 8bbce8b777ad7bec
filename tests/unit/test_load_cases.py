"""Golden-set loading: JSONL (with the aliases and the common golden_set.jsonl layout) and BEIR folders; every bad
line reported with file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.load.cases import load_cases, read_cases
from tests import helpers
from tests.helpers import write_lines


def problems_of(path: Path) -> list[tuple[int | None, str]]:
    return [(p.line, p.message) for p in helpers.problems_of(load_cases, path)]


@pytest.mark.parametrize("field", ["gold", "must_cite_one_of", "relevant_doc_ids", "expected_document_ids"])
def test_gold_aliases(tmp_path: Path, field: str) -> None:
    path = write_lines(tmp_path / "c.jsonl", json.dumps({"id": "c1", "query": "q", field: ["a", "b", "a"]}))
    (case,) = load_cases(path).cases
    assert case.gold == ("a", "b")  # de-duplicated, order kept


def test_seed_golden_set_format_loads(tmp_path: Path) -> None:
    """A golden_set.jsonl in the common layout: type/difficulty become tags, the answer gist is kept."""
    path = write_lines(
        tmp_path / "golden_set.jsonl",
        json.dumps({"id": "q_001", "query": "Como resetar minha senha?", "type": "how-to",
                    "relevant_doc_ids": ["doc_42", "doc_118"], "ground_truth_answer": "Na tela de login…",
                    "difficulty": "easy", "should_refuse": False}, ensure_ascii=False),
        json.dumps({"id": "q_027", "query": "Qual a receita da empresa em 2025?", "type": "out-of-scope",
                    "relevant_doc_ids": [], "ground_truth_answer": "Não tenho essa informação na base.",
                    "difficulty": "medium", "should_refuse": True}, ensure_ascii=False),
    )
    first, second = load_cases(path).cases
    assert first.gold == ("doc_42", "doc_118") and first.answer == "Na tela de login…"
    assert first.tags == {"type": "how-to", "difficulty": "easy"}
    assert first.slice_values() == {"kind": "golden", "tag.type": "how-to", "tag.difficulty": "easy"}
    assert second.gold == () and second.should_refuse is True


def test_all_optional_fields_and_number_ids(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", json.dumps({
        "id": 7, "query": "q", "gold": [42, "b"], "kind": "adversarial", "locale": "pt-BR", "form": "GAP",
        "hard_class": "near-duplicate", "tags": {"team": "search"}, "should_refuse": True, "answer": "a",
        "filter": {"lang": "pt"},
    }))
    case_set = load_cases(path)
    (case,) = case_set.cases
    assert (case.id, case.gold) == ("7", ("42", "b"))
    assert case.slice_values() == {"kind": "adversarial", "locale": "pt-BR", "form": "GAP",
                                   "hard_class": "near-duplicate", "tag.team": "search"}
    assert case_set.format == "jsonl" and case_set.lines == {"7": 1} and len(case_set.sha256) == 64


def test_bom_crlf_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "query": "q"}\r\n\r\n{"id": "b", "query": "q"}\r\n')
    case_set = load_cases(path)
    assert case_set.ids == ["a", "b"] and case_set.lines == {"a": 1, "b": 3}


def test_every_bad_line_is_reported_with_its_line(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "c.jsonl",
        '{"id": "ok", "query": "fine", "gold": ["a"]}',                  # 1
        '{"id": "ok", "query": "again"}',                                # 2 duplicate id
        '{"id": "e", "query": "   "}',                                   # 3 empty query
        '{"id": "u", "query": "q", "colour": "red"}',                    # 4 unknown field
        '{"id": "t", "query": "q", "gold": "a"}',                        # 5 gold not a list
        '{"id": "t2", "query": 5}',                                      # 6 wrong type
        b'{"id": "x", "query": "caf\xe9"}',                              # 7 invalid UTF-8 (latin-1 é)
        '{"id": "j", "query": }',                                        # 8 JSON syntax error
        '["not", "an", "object"]',                                       # 9 not an object
        '{"query": "no id"}',                                            # 10 missing id
        '{"id": "k", "query": "q", "kind": "weird"}',                    # 11 bad enum
        '{"id": "g", "query": "q", "gold": ["a"], "must_cite_one_of": ["b"]}',  # 12 two gold fields
        '{"id": "tg", "query": "q", "tags": {"a=b": "c"}}',              # 13 bad tag key
        '{"id": "eg", "query": "q", "gold": ["a", " "]}',                # 14 blank gold id
    )
    problems = problems_of(path)
    lines = [line for line, _ in problems]
    assert lines == list(range(2, 15))
    text = dict(problems)
    assert "duplicate case id 'ok' (first at line 1)" in text[2]
    assert "query is empty" in text[3]
    assert "unknown field 'colour'" in text[4]
    assert "must be a list of card ids" in text[5]
    assert "'query'" in text[6]
    assert "invalid UTF-8" in text[7]
    assert "JSON syntax error" in text[8]
    assert "expected a JSON object" in text[9]
    assert "missing required field 'id'" in text[10]
    assert "'kind'" in text[11]
    assert "'gold' and 'must_cite_one_of'" in text[12]
    assert "tag key" in text[13]
    assert "empty card id" in text[14]


def test_read_cases_returns_the_good_cases_with_the_problems(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", '{"id": "a", "query": "q"}', "{oops")
    case_set, problems = read_cases(path)
    assert case_set is not None and case_set.ids == ["a"]
    assert [(p.line, p.path) for p in problems] == [(2, str(path))]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "no cases"), (b"\n\n", "no cases")],
)
def test_empty_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    assert message in problems_of(path)[0][1]


def test_missing_path(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope.jsonl") == [(None, "cases not found")]


# --- BEIR folders ---------------------------------------------------------------------------------

def beir(tmp_path: Path, queries: list[str], qrels: list[str], qrels_name: str = "qrels.tsv") -> Path:
    folder = tmp_path / "beir"
    (folder / Path(qrels_name).parent).mkdir(parents=True, exist_ok=True)
    write_lines(folder / "queries.jsonl", *queries)
    write_lines(folder / qrels_name, *qrels)
    return folder


@pytest.mark.parametrize("qrels_name", ["qrels.tsv", "qrels/test.tsv"])
def test_beir_folder(tmp_path: Path, qrels_name: str) -> None:
    folder = beir(
        tmp_path,
        ['{"_id": "1", "text": "first", "metadata": {}}', '{"_id": 2, "text": "second"}',
         '{"_id": "3", "text": "third"}'],
        ["query-id\tcorpus-id\tscore", "1\td1\t1", "1\td2\t2", "1\td3\t0", "2\td9\t1"],
        qrels_name,
    )
    case_set = load_cases(folder)
    assert case_set.format == "beir" and case_set.ids == ["1", "2", "3"]
    gold = {c.id: c.gold for c in case_set.cases}
    assert gold == {"1": ("d1", "d2"), "2": ("d9",), "3": ()}  # score 0 is not relevant; no qrels → no gold
    assert case_set.cases[0].query == "first"


def test_beir_trec_style_qrels(tmp_path: Path) -> None:
    folder = beir(tmp_path, ['{"_id": "1", "text": "q"}'], ["1 0 d1 1", "1 0 d2 0"])
    assert load_cases(folder).cases[0].gold == ("d1",)


def test_beir_problems(tmp_path: Path) -> None:
    folder = beir(
        tmp_path,
        ['{"_id": "1", "text": "q"}', '{"text": "no id"}', '{"_id": "1", "text": "dup"}', '{"_id": "4", "text": ""}'],
        ["query-id\tcorpus-id\tscore", "1\td1\t1", "9\td1\t1", "1\td2", "1\td3\thigh"],
    )
    with pytest.raises(InputError) as info:
        load_cases(folder)
    found = {(Path(p.path).name, p.line): p.message for p in info.value.problems}
    assert "missing required field '_id'" in found[("queries.jsonl", 2)]
    assert "duplicate query id '1'" in found[("queries.jsonl", 3)]
    assert "query is empty" in found[("queries.jsonl", 4)]
    assert "query id '9' is not in queries.jsonl" in found[("qrels.tsv", 3)]
    assert "expected 3 columns" in found[("qrels.tsv", 4)]
    assert "not a number" in found[("qrels.tsv", 5)]
    assert len(found) == 6


def test_beir_folder_without_queries_or_qrels(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "queries.jsonl is missing" in problems_of(tmp_path / "empty")[0][1]
    write_lines(tmp_path / "empty" / "queries.jsonl", '{"_id": "1", "text": "q"}')
    assert "no qrels.tsv" in problems_of(tmp_path / "empty")[0][1]
