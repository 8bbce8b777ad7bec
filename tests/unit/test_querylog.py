"""Cleaning a query log (golden/log_clean.py, golden/log_reader.py): whitespace, lines that are not
queries, personal data masked (Luhn and mod-97 checked by hand), exact duplicates collapsed."""

from __future__ import annotations

import pytest

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.golden.log_clean import RawQuery, clean_log, drop_reason, mask_pii, normalise
from retrieval_gate.golden.log_reader import iter_log
from tests.helpers import write_lines


def test_whitespace_is_normalised_and_what_is_no_query_is_dropped_with_its_reason():
    assert normalise("  how\tdo I\n\u00a0reset  ") == "how do I reset"
    assert drop_reason("") == "empty"
    assert drop_reason("\x00\x01PK") == "not text"
    assert drop_reason("bad byte \ufffd here") == "not text"
    assert drop_reason("?!? ...") == "not text"
    assert drop_reason("x" * 501) == "over 500 characters"
    assert drop_reason("x" * 500) is None


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111111111111111", True),  # the classic Visa test number: 8+2+2+2+2+2+2+2 ... sum 30
        ("4111111111111112", False),
        ("378282246310005", True),  # American Express's test number (15 digits)
        ("378282246310006", False),
    ],
)
def test_a_card_number_is_masked_when_the_luhn_check_passes(number, valid):
    assert (mask_pii(f"card {number} declined")[0] == "card <card> declined") is valid


def test_an_iban_is_masked_when_the_iso_13616_mod_97_check_passes():
    assert mask_pii("iban GB82 WEST 1234 5698 7654 32")[0] == "iban <iban>"  # the ISO standard's example
    assert mask_pii("iban GB82 WEST 1234 5698 7654 33")[0] == "iban GB82 WEST 1234 5698 7654 33"


def test_personal_data_is_masked_and_counted_by_kind():
    text, found = mask_pii(
        "mail jane.doe+x@mail.example.org or call +44 20 7946 0958, card 4111 1111 1111 1111, "
        "iban GB82 WEST 1234 5698 7654 32, also 555-123-4567"
    )
    assert text == "mail <email> or call <phone>, card <card>, iban <iban>, also <phone>"
    assert dict(found) == {"email": 1, "phone": 2, "card": 1, "iban": 1}


def test_numbers_that_are_not_personal_data_are_kept():
    for text in ("error 404 after 2019 2020 upgrade", "card 4111 1111 1111 1112 declined", "order 12345"):
        assert mask_pii(text)[0] == text, text


def test_exact_duplicates_collapse_with_summed_traffic_and_the_most_frequent_wording():
    rows = [
        RawQuery(1, "Reset password", 2, {"intent": "account"}),
        RawQuery(2, "reset   PASSWORD", 5, {"intent": "login"}),
        RawQuery(3, "", 1),
        RawQuery(4, "refund to a@b.co", 1),
        RawQuery(5, "refund to c@d.io", 1),
    ]
    queries, report = clean_log(rows)
    assert [(q.text, q.count, q.lines) for q in queries] == [("reset PASSWORD", 7, 2), ("refund to <email>", 2, 2)]
    assert queries[0].fields == {"intent": "login"} and queries[0].first_line == 1
    assert report.read == 5 and report.duplicates == 2 and dict(report.dropped) == {"empty": 1}
    assert dict(report.masked) == {"email": 2}
    kept, _ = clean_log(rows[3:], keep_pii=True)
    assert [q.text for q in kept] == ["refund to a@b.co", "refund to c@d.io"]
    secret, report = clean_log([RawQuery(1, "a@b.co key AKIAIOSFODNN7EXAMPLE")], keep_pii=True)
    assert secret[0].text == "a@b.co key <secret>" and dict(report.masked) == {"secret": 1}  # never kept


def test_a_log_is_read_as_text_jsonl_or_csv_with_its_columns(tmp_path):
    text = write_lines(tmp_path / "q.txt", "\ufeffone", b"bad \xff byte", "two")
    problems: list[Problem] = []
    assert [(n, t.strip()) for n, t, _, _ in iter_log(text, problems=problems)] == [
        (1, "one"),
        (2, "bad \ufffd byte"),
        (3, "two"),
    ]
    jsonl = write_lines(
        tmp_path / "q.jsonl",
        '{"q": "a", "count": 3, "intent": "x", "session": "s1"}',
        "[1]",
        '{"q": "b", "count": 0}',
        '{"text": "c"}',
    )
    rows = list(iter_log(jsonl, query_column="q", problems=problems))
    assert rows == [(1, "a", 3, {"intent": "x", "session": "s1"})]  # every column read; the allow-list is cleaning's
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [
        (2, "expected a JSON object, got list"),
        (3, "count 0"),
        (4, "no 'q' text (give --query-column)"),
    ]
    csv_log = write_lines(tmp_path / "q.csv", "query,count,locale", '"hello, world",2,en', "bye,,de")
    assert list(iter_log(csv_log, problems=[])) == [
        (2, "hello, world", 2, {"locale": "en"}),
        (3, "bye", 1, {"locale": "de"}),
    ]
    with pytest.raises(InputError, match="no 'query' column"):
        list(iter_log(write_lines(tmp_path / "n.csv", "text", "x"), problems=[]))
