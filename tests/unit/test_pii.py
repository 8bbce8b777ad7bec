"""The masker of a query log (golden/masking.py): each kind by its detector, on hand-written variants;
normal queries left alone; the region national phone numbers are read in; the optional name
detector handed in; column values masked and columns kept by allow-list (golden/log_clean.py);
draft.md's masking lines escaped (golden/cases_draft.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from retrieval_gate.errors import UsageError
from retrieval_gate.golden.cases_draft import DraftResult, summary_lines
from retrieval_gate.golden.draw import Intent
from retrieval_gate.golden.log_clean import CleanReport, RawQuery, clean_log
from retrieval_gate.golden.masking import Masker, coverage_note
from retrieval_gate.golden.masking_names import draft_masker
from tests.hostile_text import CONTROLS

MASKER = Masker()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my key AKIAIOSFODNN7EXAMPLE stopped", "my key <secret> stopped"),  # detect-secrets' AWS plugin
        ("token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 bad", "token <secret> bad"),  # its GitHub plugin, widened
        ("key sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF1234567890abcd", "key <secret>"),  # a prefix it does not know
        ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P fails",
         "jwt <secret> fails"),  # the whole token, signature included
        ("Authorization: Bearer abc123def456ghi789jkl", "Authorization: Bearer <secret>"),
        ("login password=Hunter2Secret! fails", "login password=<secret> fails"),
        ("https://api.example.com/v1?token=abcd1234efgh5678 gives 401",
         "https://api.example.com/v1?token=<secret> gives 401"),
        ("clone https://bob:s3cr3tpass@git.example.com/r.git", "clone https://<secret>@git.example.com/r.git"),
    ],
)
def test_secrets_are_masked_as_secret(text, expected):
    masked, found = MASKER.mask(text)
    assert masked == expected
    assert dict(found) == {"secret": 1}


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ("contact josé.silva@exemplo.com.br today", "contact <email> today", "email"),  # a Unicode local part
        ("user@exämple.de cannot log in", "<email> cannot log in", "email"),  # an IDN domain
        ("write to john dot doe at gmail dot com", "write to <email>", "email"),  # spelled out
        ("iban gb82west12345698765432 rejected", "iban <iban> rejected", "iban"),  # lower case, mod-97 valid
        ("card 4111.1111.1111.1111 charged", "card <card> charged", "card"),  # dots, Luhn valid
        ("ssn 123456789 wrong", "ssn <ssn> wrong", "ssn"),  # plain nine digits after "ssn"
        ("cpf 529.982.247-25", "cpf <cpf>", "cpf"),  # check digits 2 and 5 (hand-worked mod 11)
        ("cnpj 11.222.333/0001-81", "cnpj <cnpj>", "cnpj"),
        ("blocked from 10.0.0.1", "blocked from <ip>", "ip"),
        ("ipv6 2001:db8::1 unreachable", "ipv6 <ip> unreachable", "ip"),
        ("born 14/03/1985", "born <date>", "date"),
        ("call +44 20 7946 0958 about my payout", "call <phone> about my payout", "phone"),  # international
        ("call 5551234567 tomorrow", "call <phone> tomorrow", "phone"),  # a possible US number in one run
    ],
)
def test_structured_identifiers_are_masked_by_kind(text, expected, kind):
    masked, found = MASKER.mask(text)
    assert masked == expected
    assert dict(found) == {kind: 1}


def test_checks_keep_what_only_looks_like_an_identifier():
    for text in ("card 4111 1111 1111 1112 declined",  # Luhn fails
                 "iban GB82 WEST 1234 5698 7654 33",  # mod-97 fails
                 "cpf 529.982.247-26",  # check digit wrong
                 "ip 999.1.1.1 typo",  # no IPv4 address
                 "on 31/02/1985",  # no such day
                 "reset my password", "password: forgot it", "how to rotate an api key", "bearer token format"):
        assert MASKER.mask(text)[0] == text, text


@pytest.mark.parametrize("text", ["error 404 on login", "upgrade to version 3.11", "top 10 plans for 2024",
                                  "python 3.11.4 support", "order 12345 not shipped", "1.5 million users in 2019 2020",
                                  "meeting at 10:30 on monday", "price went from 9.99 to 12.49", "ISO 27001"])
def test_normal_queries_with_numbers_are_not_masked(text):
    assert MASKER.mask(text) == (text, Counter())


def test_national_numbers_are_read_in_the_region_given():
    assert MASKER.mask("appeler 142685300")[0] == "appeler 142685300"  # not a US number
    assert Masker(region="fr").mask("appeler 142685300")[0] == "appeler <phone>"
    assert Masker(region="br").mask("ligar 11 91234-5678")[0] == "ligar <phone>"
    # a Brazilian number without +55 (an area code and a valid mobile or landline) under any region
    assert MASKER.mask("ligar 11 91234-5678")[0] == "ligar <phone>"
    # a national format with a trunk 0 or parentheses is taken whatever the region
    assert MASKER.mask("ligar (11) 91234-5678")[0] == "ligar <phone>"
    assert MASKER.mask("call me on 07700 900123")[0] == "call me on <phone>"
    with pytest.raises(ValueError, match="unknown region 'XX'"):
        Masker(region="XX")
    with pytest.raises(UsageError, match="--region 'XX'"):
        draft_masker("XX", find_names=False)


def test_a_name_detector_handed_in_masks_names_and_its_absence_is_said():
    def capitalised_pairs(text):  # a stand-in for Presidio: two capitalised words in a row
        import re

        return [(m.start(), m.end(), "name") for m in re.finditer(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", text)]

    with_names = Masker(names=capitalised_pairs)
    assert with_names.mask("refund for Maria Silva please")[0] == "refund for <name> please"
    assert "not covered" in coverage_note(MASKER) and "presidio-analyzer" in coverage_note(MASKER)
    assert "not covered" not in coverage_note(with_names)


def test_only_allow_listed_columns_travel_and_their_values_are_masked():
    rows = [RawQuery(1, "refund status", 1, {"intent": "billing", "locale": "en", "user_id": "u-1",
                                              "referrer": "https://x.example/?token=abcd1234efgh&email=a@b.co",
                                              "plan": "pro for jane@example.com"}),
            RawQuery(2, "refund status", 2, {"user_agent": "Mozilla/5.0", "session": "s1", "plan": "pro"})]
    queries, report = clean_log(rows, slice_columns=("plan",))
    assert queries[0].fields == {"intent": "billing", "locale": "en", "plan": "pro"}
    assert dict(report.dropped_columns) == {"user_id": 1, "referrer": 1, "user_agent": 1, "session": 1}
    alone, _ = clean_log(rows[:1], slice_columns=("plan",))
    assert alone[0].fields["plan"] == "pro for <email>"  # a kept column's value is masked too
    assert "plan" not in clean_log(rows)[0][0].fields  # not named: dropped


def test_draft_md_escapes_log_text_and_counts_masks_and_dropped_columns():
    hostile = "![x](http://evil.example/a.png) \x1b[2J \u202eevil a\\|b"
    clean = CleanReport(read=3, masked=Counter({"email": 2, "secret": 1}),
                        dropped_columns=Counter({"user_id": 3, "# x": 1}))
    result = DraftResult(entries=[], clean=clean, distinct=1, presampled=1, near=0, typos=0, excluded=0,
                         intents=[Intent(name="# heading", representative=hostile, traffic=3, queries=1)],
                         drawn=Counter(), existing=Counter(), needed=10, minimum=6, systems=["dense", "bm25"],
                         coverage=coverage_note(MASKER))
    text = "\n".join(summary_lines(result, detect=0.05))
    assert "- secrets and personal data masked: 2 `<email>`, 1 `<secret>`" in text
    assert "user_id (3 rows)" in text and "&#35; x (1 rows)" in text
    assert "names and street addresses: not covered" in text
    assert "![x](" not in text and "](http" not in text and not CONTROLS.search(text)
    row = next(line for line in text.splitlines() if "heading" in line)
    assert row.count("|") == 8  # seven cells: the \| inside the text split none
    assert not any(line.startswith("#") for line in text.splitlines()[1:])
