"""Masking by normal form first (golden/masking.py): NFKC and invisible characters
removed before detection; percent-escapes, base64 and PEM decoded or bounded; the shapes a
hostile review found unmasked, each with its hand-written masked text; what must stay as it is;
and the log's shell (golden/log_clean.py, golden/log_reader.py): column values masked whole
before the cut, dropped column names masked, log text in error messages masked."""

from __future__ import annotations

import base64
import csv
from collections import Counter

import pytest

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.golden.log_clean import MAX_QUERY_CHARS, MAX_VALUE_CHARS, RawQuery, clean_log, cut_value
from retrieval_gate.golden.log_reader import iter_log
from retrieval_gate.golden.masking import Masker, normal_form

MASKER = Masker()
AWS_SECRET = "Cl6WmgQ5g1L6ekr7+W+i1eJgBd28KoTpml9gZfob"  # 30 random bytes in base64: + inside, no keyword
AZURE_KEY = "hIM4PPvm2kdlqzdqcgOjdXIF8GMMnldwhMILtXeMkgVNAP5MWV1epZi0QwR4rCgjDqqvb0e0KQBCtWo/JZCxCQ=="


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ ４１１１", "jane@example.com 4111"),  # full-width: NFKC
        ("ja\u200bne@exa\u200cmple.com", "jane@example.com"),  # zero-width space and non-joiner: Cf
        ("card 4111\u00ad1111", "card 41111111"),  # soft hyphen: Cf
        ("\u202egnp.exe\u2066 x\ufeff", "gnp.exe x"),  # bidi controls and BOM: Cf
        ("key\u034fA\ufe0fB", "keyAB"),  # combining grapheme joiner, variation selector: default-ignorable
        ("ﬁle version 2.4", "file version 2.4"),  # a ligature
        ("plain ascii stays", "plain ascii stays"),
        ("key \u0410KIA1 j\u0430ne", "key AKIA1 jane"),  # Cyrillic А, а inside a Latin word: read as Latin
        ("Привет мир, ΑΒΓ", "Привет мир, ΑΒΓ"),  # Russian and Greek words alone: as written
    ],
)
def test_the_normal_form_is_nfkc_without_invisible_characters(text, expected):
    assert normal_form(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # base64 keys without a keyword, with + / = inside (the entropy rule reads the whole run)
        (f"aws secret {AWS_SECRET} not working", "aws secret <secret> not working"),
        (f"azure storage {AZURE_KEY} denied", "azure storage <secret> denied"),
        ("signing key uB34wQpFUDSsJ9iTP6vd2AqTjC0GGyjDt/hyiekt8BQ= rotated", "signing key <secret> rotated"),
        ("chave uB34wQpFUDSsJ9iTP6vd2AqTjC0GGyjDt-hyiekt8BQ vazou", "chave <secret> vazou"),  # base64url
        # PEM private keys: one line, literal \n, no spaces, cut before its END line
        ("pem -----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeL "
         "-----END RSA PRIVATE KEY----- leaked", "pem <secret> leaked"),
        ("k -----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u\\n"
         "-----END OPENSSH PRIVATE KEY----- in chat", "k <secret> in chat"),
        ("-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-----END PRIVATE KEY-----", "<secret>"),
        ("cut -----BEGIN EC PRIVATE KEY----- MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04f then words",
         "cut <secret> then words"),
        # invisible characters and full-width letters inside an AWS key id
        ("key AKIA\u200bIOSFODNN7EXAMPLE stopped", "key <secret> stopped"),
        ("key ＡＫＩＡＩＯＳＦＯＤＮＮ７ＥＸＡＭＰＬＥ denied", "key <secret> denied"),
        # percent-encoded: the run is written decoded with the item masked
        ("login password%3DHunter2Secret%21 fails", "login password=<secret> fails"),
        ("go https%3A%2F%2Fbob%3As3cr3tpass%40git.example.com%2Fr.git", "go https://<secret>@git.example.com/r.git"),
        ("next=https%3A%2F%2Fapi.example.com%2Fv1%3Ftoken%3Dabcd1234efgh5678 401",
         "next=https://api.example.com/v1?token=<secret> 401"),
        # a password said in words: the word after it, when it has a digit or a sign
        ("my password is Hunter2! please", "my password is <secret>! please"),
        ("minha senha é Mudar@123 e não entra", "minha senha é <secret> e não entra"),
        # a hex key whose digit run passes Luhn is one key, not a card inside a key
        ("got 403 with 01912f3b64eb259358293915696562f94fc602adb11dc2f86048f14c32f14428 today",
         "got 403 with <secret> today"),
        ("chave KyfQx1FvyfwwSdokyafNFLxImnKYsaiwclQFGQLU nope", "chave <secret> nope"),  # one digit, long runs
        # base64 that decodes to a user:password pair (HTTP Basic without the word)
        ("auth " + base64.b64encode(b"admin:S3cretPassw0rd").decode() + " header", "auth <secret> header"),
    ],
)
def test_secrets_hidden_by_encoding_are_masked(text, expected):
    masked, found = MASKER.mask(text)
    assert masked == expected
    assert set(found) == {"secret"}


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ("contact ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ please", "contact <email> please", "email"),
        ("email jane\u200b.roe@example.com refund", "email <email> refund", "email"),
        ("unsubscribe jane.doe%40example.com please", "unsubscribe <email> please", "email"),
        ("twice jane%2540example.com", "twice <email>", "email"),  # %25 is %: encoded twice
        ("https://shop.example.com/reset?email=jane.doe%40example.com&x=1",
         "https://shop.example.com/reset?email=<email>&x=1", "email"),
        ("user " + base64.b64encode(b"jane.doe@example.com").decode() + " cookie", "user <email> cookie", "email"),
        ("card ４１１１ １１１１ １１１１ １１１１ declined", "card <card> declined", "card"),
        ("card 4111\u200b1111\u200b1111\u200b1111 declined", "card <card> declined", "card"),
        ("call +44 20\u200b7946 0958 today", "call <phone> today", "phone"),
        ("ligar 11 91234-5678 urgente", "ligar <phone> urgente", "phone"),  # Brazil without +55, region US
        ("telefone 21 3456-7890 fixo", "telefone <phone> fixo", "phone"),
        ("meu celular 11 9 1234-5678", "meu celular <phone>", "phone"),
        # CPF 529.982.247-25 (check digits hand-worked: 2 and 5) and CNPJ 11.222.333/0001-81 in any grouping
        ("cpf 529982247-25 x", "cpf <cpf> x", "cpf"),
        ("cpf 529 982 247 25", "cpf <cpf>", "cpf"),
        ("cpf 529-982-247-25", "cpf <cpf>", "cpf"),
        ("cnpj 11222333/0001-81", "cnpj <cnpj>", "cnpj"),
        ("cnpj 11.222.333.0001-81", "cnpj <cnpj>", "cnpj"),
        ("cnpj 11 222 333 0001 81", "cnpj <cnpj>", "cnpj"),
        # dates of birth in words
        ("nascido em 14 de março de 1985", "nascido em <date>", "date"),
        ("fecha de nacimiento 14 de marzo de 1985", "fecha de nacimiento <date>", "date"),
        ("né le 14 mars 1985", "né le <date>", "date"),
        ("geboren am 14. März 1985", "geboren am <date>", "date"),
        ("born on March 14, 1985", "born on <date>", "date"),
        ("dob 14-Mar-1985", "dob <date>", "date"),
        ("data de nascimento 02/05/2012", "data de nascimento <date>", "date"),  # recent, but a birth word
        ("from 192.168.001.010", "from <ip>", "ip"),  # leading zeros
        ("dob: 3/14/85", "dob: <date>", "date"),  # a two-digit year after a birth word
        ("write to jane.roe @ example.com", "write to <email>", "email"),  # spaces around @
        ("ssn 078-05-1120 verify", "ssn <ssn> verify", "ssn"),  # a famous SSN stdnum refuses: after "ssn"
    ],
)
def test_identifiers_in_the_shapes_found_unmasked_are_masked(text, expected, kind):
    masked, found = MASKER.mask(text)
    assert masked == expected
    assert set(found) == {kind}


@pytest.mark.parametrize(
    "text",
    [
        "I was charged on 03/14/2024 but cancelled on 03/10/2024",  # recent dates, no birth word
        "between March 1, 1999, and May 31, 2002, at 6 clinics",  # dates in words without a birth word
        "My order from 12 March 2024 is still processing",
        "set max_tokens=1024 and max_completion_tokens=2048",  # a count, not a token
        "Invoice INV-2024-000123 shows the wrong VAT",  # digits glued to a word are no phone
        "Tracking number 1Z999AA10123456784 not found",
        "Oct4/Sox2/Klf4/Myc-mediated reprogramming",  # words joined by / and -
        "IndexFlatIP/IndexFlatL2 in faiss",
        "tests/test_filter_exclusion.py::test_50_percent_exclusion_rate fails",  # _-joined words
        "Why does https://docs.example.com/api/v2/auth-tokens return 404?",
        "50% off with code SPRING24", "100%25 sure",
        "MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli is slow",
        "the word internationalization",
        "O CEP 01310-100 não é aceito no cadastro",
        "Protocolo 2024031512345 da ouvidoria",
        "password reset for 12 users", "reset password v2.4.1 fails", "password self-service portal",
        "password requirements: 8+ chars", "senha com 8 dígitos",
    ],
)
def test_ordinary_text_with_numbers_codes_and_paths_is_left_alone(text):
    assert MASKER.mask(text) == (text, Counter())


def test_a_date_without_a_birth_word_is_masked_when_its_year_is_before_2010():
    assert MASKER.mask("update 14/03/1985 please")[0] == "update <date> please"
    assert MASKER.mask("update 14/03/2015 please")[0] == "update 14/03/2015 please"


def test_keep_pii_decodes_too_and_masks_only_the_secrets():
    secrets_only = Masker(personal=False)
    masked = secrets_only.mask("a jane%40example.com b password%3Dhunter22")[0]
    assert masked == "a jane%40example.com b password=<secret>"


# --- the log's shell -----------------------------------------------------------------------------


def test_a_column_value_is_masked_whole_before_it_is_cut():
    key = "AKIAIOSFODNN7EXAMPLE"
    value = "x" * (MAX_QUERY_CHARS - 10) + " " + key + " tail"  # the key across the 500-character cut
    queries, report = clean_log([RawQuery(1, "refund status", 1, {"plan": value})], slice_columns=("plan",))
    kept = queries[0].fields["plan"]
    assert len(kept) <= MAX_QUERY_CHARS and "AKIA" not in kept and kept.endswith("<secret>")
    assert report.masked == Counter({"secret": 1})
    huge = "a" * (MAX_VALUE_CHARS + 1)  # a pasted document: dropped, not cut
    assert "plan" not in clean_log([RawQuery(1, "q", 1, {"plan": huge})], slice_columns=("plan",))[0][0].fields


def test_a_cut_never_leaves_half_a_mask():
    assert cut_value("a" * (MAX_QUERY_CHARS - 3) + "<secret> b") == "a" * (MAX_QUERY_CHARS - 3)
    assert cut_value("short <email>") == "short <email>"


def test_a_dropped_column_named_after_a_secret_is_counted_under_its_masked_name():
    secret_column = "key ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    rows = [RawQuery(i, "refund status", 1, {secret_column: "v", "user_id": "u"}) for i in range(1, 4)]
    _, report = clean_log(rows)
    assert dict(report.dropped_columns) == {"key <secret>": 3, "user_id": 3}
    assert report.masked == Counter({"secret": 1})  # the header's key counted once, not once a row


def test_a_header_without_the_query_column_names_its_columns_masked(tmp_path):
    path = tmp_path / "log.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([["q", "AKIAIOSFODNN7EXAMPLE", "x" * 300], ["a", "b", "c"]])
    with pytest.raises(InputError) as caught:
        list(iter_log(path, problems=[]))
    message = str(caught.value.problems[0])
    assert "no 'query' column" in message and "<secret>" in message
    assert "AKIAIOSFODNN7EXAMPLE" not in message and "x" * 100 not in message


def test_a_bad_count_is_quoted_masked_and_short(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": "q", "count": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}\n', encoding="utf-8")
    problems: list[Problem] = []
    assert list(iter_log(path, problems=problems)) == []
    assert "<secret>" in problems[0].message and "ghp_" not in problems[0].message
    path.write_text('{"query": "q", "count": "' + "9" * 5000 + 'x"}\n', encoding="utf-8")
    problems = []
    assert list(iter_log(path, problems=problems)) == []
    assert "(a value of 5,003 characters)" in problems[0].message and "9" * 100 not in problems[0].message
