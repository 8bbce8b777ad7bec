"""Secrets and personal data in a query log, masked by well-kept detectors (docs/golden-set.md,
"Personal data and secrets"). Pure: text in, masked text and counts by kind out.

**The normal form first** (``normal_form``): NFKC, every format character (Cf: zero-width spaces
and joiners, soft hyphens, bidi controls) and other default-ignorable character removed, and in a
word mixing Latin letters with Cyrillic or Greek look-alikes, those read as Latin. Then what hides
an item is undone before detection: a run with percent-escapes is decoded and masked as decoded
(written decoded when it held an item); a base64 token that decodes to text holding an item, or
to a ``user:password`` pair, is masked whole; a PEM private key is one ``<secret>`` from BEGIN to
END (or, cut short, through its base64).

Each item found becomes ``<kind>``; the kinds, in the order they are looked for (a secret's
digits must not be read as a phone number first):

- ``secret`` — credentials in URLs (``user:pass@``, ``?token=``/``key=``/``password=``…); the
  regex plugins of **detect-secrets** (AWS keys, GitHub, GitLab, Slack, Stripe, OpenAI, JWT,
  SendGrid, npm, PyPI, private keys, …: their patterns, each match widened to the whole token);
  ``keyword=value`` / ``keyword: value`` pairs for detect-secrets' keyword list (password,
  secret, api_key, …) and ``token``, ``senha`` (a counting name, ``max_tokens``, is none); a
  password said in words ("my password is Hunter2!"); ``Bearer``/``Basic`` values; forge and API
  key prefixes detect-secrets does not know (``sk-proj-…``, ``github_pat_…``, ``hf_…``,
  ``AIza…``); UUIDs; and random-looking runs of a key's alphabet, ``+ / = - _`` inside
  (``_random_run``: entropy, detect-secrets' own measure, and the average length of the run's
  word/number segments).
- ``email`` — Unicode local parts and IDN domains (checked by **email-validator**, no DNS),
  spaces around the ``@``, and the spelled-out ``john dot doe at gmail dot com`` / ``[at]`` /
  ``arroba … ponto`` form.
- ``iban`` (any case, mod-97 by **python-stdnum**), ``cnpj`` and ``cpf`` (Brazil, check digits by
  python-stdnum, in any grouping), ``card`` (13–19 digits with spaces, dots or dashes, Luhn by
  python-stdnum), ``ssn`` (US: ``123-45-6789``, or 9 digits after "SSN"/"social security"),
  ``date`` (a full date of birth: in numbers or with the month's name in five languages, after a
  birth word; in numbers also without one when its year is before 2010; checked by
  ``datetime.date``), ``ip`` (IPv4, leading zeros too, and IPv6, checked by ``ipaddress``).
- ``phone`` — **phonenumbers**' ``PhoneNumberMatcher``: international numbers (``+44 …``)
  anywhere, national numbers as the region reads them (``region``, default ``US``; ``cases
  draft --region``), valid numbers first, then *possible* numbers of nine digits or more that
  look like one number (no dotted group, no group shorter than three digits, no range, not glued
  to a word); a Brazilian number without ``+55`` valid in Brazil; then a number written in a
  national format (a trunk ``0`` or an area code in parentheses, and a separator) that is
  possible in one of ``NATIONAL_REGIONS`` (GB, DE, FR, BR, IN, ES, IT, NL, PT, MX, AU, JP).
- ``name`` and ``address`` — only when a detector is handed in (``NameDetector``: the optional
  Presidio adapter, ``golden.masking_names``); without one they are not covered, and draft.md
  says so.

A compiled pre-filter skips, before any detector runs, every line with no digit, no ``@``, no
``=`` or ``:``, no percent-escape, no private key, no password said in words, no key-like token
(11+ characters of a key's alphabet that are not one word) and not both an "at" and a "dot" —
most queries of a log; each detector runs only on the lines that hold what it needs (the phone
matcher: a run of seven digits or more).
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import ipaddress
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_REGION = "US"
NATIONAL_REGIONS = ("GB", "DE", "FR", "BR", "IN", "ES", "IT", "NL", "PT", "MX", "AU", "JP")
SECRET_KINDS = ("secret",)
IDENTIFIER_KINDS = ("email", "iban", "cnpj", "cpf", "card", "ssn", "date", "ip", "phone")
OPTIONAL_KINDS = ("name", "address")
KINDS = (*SECRET_KINDS, *IDENTIFIER_KINDS, *OPTIONAL_KINDS)

# (start, end, kind) spans a name/address detector finds in a text.
NameDetector = Callable[[str], Iterable[tuple[int, int, str]]]

# Invisible characters removed before detection: every format character (Unicode category Cf:
# zero-width space and joiners, soft hyphen, word joiner, BOM, bidi controls, tags) and the
# default-ignorable code points of other categories (combining grapheme joiner, variation
# selectors, Hangul fillers, Mongolian free variation selectors).
_IGNORABLE_RE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                           "\U000e0100-\U000e01ef]")


# Cyrillic and Greek letters drawn like Latin ones, read as Latin inside a word that mixes them
# with Latin letters (``АKIA…`` with a Cyrillic А); a word of Russian or Greek alone is left as written.
_CONFUSABLES = str.maketrans("АВЕКМНОРСТХаеорсухіјѕԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧον",
                             "ABEKMHOPCTXaeopcyxijsdqwABEZHIKMNOPTYXov")


def normal_form(text: str) -> str:
    """The form every detector reads: NFKC (full-width digits and ``＠`` become ASCII, ligatures
    letters) with every format character (Cf) and other default-ignorable character removed — a
    zero-width space inside an e-mail, a phone or a key no longer hides it — and, in a word that
    mixes Latin letters with Cyrillic or Greek ones drawn alike, those read as Latin."""
    if text.isascii():
        return text
    text = _IGNORABLE_RE.sub("", "".join(ch for ch in text if unicodedata.category(ch) != "Cf"))
    text = unicodedata.normalize("NFKC", text)
    return _MIXED_RE.sub(_latin_word, text) if _NON_LATIN_RE.search(text) else text


_MIXED_RE = re.compile(r"[\w+/=.@-]+")
_NON_LATIN_RE = re.compile(r"[А-Яа-яЀ-џΑ-Ωα-ω]")
_LATIN_RE = re.compile(r"[A-Za-z]")


def _latin_word(m: re.Match[str]) -> str:
    word = m.group(0)
    if not _LATIN_RE.search(word) or not _NON_LATIN_RE.search(word):
        return word
    return word.translate(_CONFUSABLES)

# A keyword's name that counts or sizes rather than holds a secret (``max_tokens``, ``num_keys``).
_COUNT_KEY_RE = re.compile(r"(?i)(?:tokens|keys|secrets|passwords)$|(?:^|[_-])(?:max|min|num|n|count|total)[_-]")
_KEYWORDS_EXTRA = ("token", "access_?token", "auth_?token", "refresh_?token", "client_?secret", "apikey",
                   "api-key", "senha", "pass", "passcode")
_URL_PARAM_NAMES = (r"(?:access_|refresh_|id_|auth_|api_?)?token|api_?key|key|apikey|password|passwd|pwd|secret"
                    r"|client_secret|sig|signature|code|auth|session|sessionid|sid|jwt")
_PREFIX_RE = re.compile(r"(?<![\w-])(?:sk-(?:proj-|ant-|live-|test-|svcacct-|admin-)?|sk_(?:live|test)_"
                        r"|rk_(?:live|test)_|pk_(?:live|test)_|github_pat_|gh[pousr]_|glpat-|gldt-|glrt-|xox[abposr]-|hf_|npm_|pypi-"
                        r"|AIza|ya29\.|AKIA|ASIA|shpat_|dop_v1_)[A-Za-z0-9_\-]{8,}")
_BEARER_RE = re.compile(r"(?i)\b(bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})")
# A password said in words: "my password is Hunter2!", "minha senha é Mudar@123", "pwd Xk9#mP2$".
# The word after it is taken when it has six characters or more, a letter and a digit or a sign
# other than a hyphen (a plain word, "reset", "self-service", is prose; a version, "v2.4.1", too).
_PASSWORD_SIGNS = frozenset("@#$%&*!?+=^~")
_VERSION_RE = re.compile(r"(?i)v?\d+(?:\.\d+)+[a-z0-9.-]*")
_PASSWORD_SAID_RE = re.compile(r"(?i)\b(?:password|passwd|pwd|passcode|senha|contraseña|contrasena|passwort|"
                               r"mot de passe)\s+(?:(?:is|was|é|era|es|est|ist|=|:)\s+)?([^\s\"'`,;]{6,})")
_URL_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@:]+(?::[^\s/?#@]*)?)@")
_URL_PARAM_RE = re.compile(rf"(?i)([?&;#](?:{_URL_PARAM_NAMES})=)([^&\s#]+)")
# A run of a key's alphabet (base64's ``+``, ``/``, ``=``, base64url's ``-``, ``_``): tested whole
# and piece by piece by ``_random_run``; a UUID.
_ENTROPY_RUN_RE = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{20,}(?![A-Za-z0-9_+/=-])")
_RUN_SEPARATORS_RE = re.compile(r"[+/=-]+")
_PIECE_RE = re.compile(r"[A-Za-z0-9_]{20,}")
# The segments a run falls into: a word (``Sox``, ``alpha``), an upper-case run (``LIN``), digits.
_SEGMENT_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# A run of text with a percent-escape (``jane%40example.com``, ``token%3Dabc``): decoded, then masked.
_PERCENT_RUN_RE = re.compile(r"\S*%[0-9A-Fa-f]{2}\S*")
_PERCENT_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_PERCENT_ESCAPES_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# A PEM private key, on one line or with literal ``\n``: from its BEGIN line to its END line; cut
# short (no END), through the base64 that follows the BEGIN line.
_PEM_BEGIN_RE = re.compile(r"-----\s*BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)\s*-----")
_PEM_BODY_RE = re.compile(r"(?:(?:\s|\\[nr])*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z0-9+/=]*[0-9+/=][A-Za-z0-9+/=]*))+")
_PEM_END_RE = re.compile(r"-----\s*END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?\s*-----")
# A base64 (or base64url) token that may hide text: decoded and masked as what it holds.
_BASE64_RE = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9_+/=-])")
_CREDENTIAL_RE = re.compile(r"[\w.@+-]{1,64}:[^\s:]{4,}")
_UUID_RE = re.compile(r"(?i)(?<![0-9a-f-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f-])")

_EMAIL_RE = re.compile(r"(?<![\w.+%-])[\w.!#$%'*+^`~-]+@(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_]{2,}(?![\w-])")
_SPACED_EMAIL_RE = re.compile(r"(?<![\w.+%-])[\w.+-]+\s+@\s+(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_]{2,}(?![\w-])")
_AT = r"(?:\s+(?:at|arroba)\s+|\s*[\[(<{]\s*(?:at|arroba|@)\s*[\])>}]\s*)"
_DOT = r"(?:\s+(?:dot|ponto|punto)\s+|\s*[\[(<{]\s*(?:dot|ponto|punto|\.)\s*[\])>}]\s*)"
_SPELLED_EMAIL_RE = re.compile(rf"(?i)(?<![\w.])[\w.+-]+(?:{_DOT}[\w+-]+)*{_AT}[\w-]+(?:{_DOT}[\w-]+)*{_DOT}"
                               r"[^\W\d_]{2,6}(?![\w.])")
_SPELLED_WORDS_RE = re.compile(r"(?i)\b(?:dot|ponto|punto)\b|[\[(<{]")

# An IBAN as written: one run, or groups of four (the printed form) and a shorter last group.
_IBAN_RE = re.compile(r"(?i)(?<![A-Za-z0-9])[A-Z]{2}\d{2}"
                      r"(?:[A-Z0-9]{11,30}|(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?)(?![A-Za-z0-9])")
# CNPJ and CPF in any grouping people type: dots, dashes, slashes, spaces or nothing between the
# groups (``11222333/0001-81``, ``11.222.333.0001-81``; ``529982247-25``, ``529 982 247 25``).
# Not glued to a letter: the digits inside a hex key are no card, CPF or CNPJ.
_CNPJ_RE = re.compile(r"(?<![\w./-])\d{2}[. -]?\d{3}[. -]?\d{3}[./ -]?\d{4}[. -]?\d{2}(?![\w/-]|\.\d)")
_CPF_RE = re.compile(r"(?<![\w./-])\d{3}[. -]?\d{3}[. -]?\d{3}[./ -]?\d{2}(?![\w/-]|\.\d)")
_CARD_RE = re.compile(r"(?<![\w.-])\d(?:[ .-]?\d){12,18}(?![\w-]|\.\d)")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_SSN_CONTEXT_RE = re.compile(r"(?i)\b(ssn|ss#|social security(?: number| no\.?| n[ºo°])?)(\W{0,4}(?:is\s+)?)"
                             r"(\d{3}[ -]?\d{2}[ -]?\d{4})(?!\d)")
# After a birth word only: a date with a two-digit year (``dob 3/14/85``).
_SHORT_YEAR_DATE_RE = re.compile(r"(?<![\d./-])(\d{1,2})([/.-])(\d{1,2})\2(\d{2})(?![\d]|[./-]\d)")
_DATE_RE = re.compile(r"(?<![\d./-])(?:(\d{1,2})([/.-])(\d{1,2})\2((?:19|20)\d{2})"
                      r"|((?:19|20)\d{2})([/.-])(\d{1,2})\6(\d{1,2}))(?![\d]|[./-]\d)")
# Month names and their abbreviations in English, Portuguese, Spanish, French and German.
_MONTH_NAMES = (
    ("january", "jan", "janeiro", "enero", "ene", "janvier", "janv", "januar", "jän"),
    ("february", "feb", "fevereiro", "fev", "febrero", "février", "fevrier", "févr", "fevr", "februar"),
    ("march", "mar", "março", "marco", "marzo", "mars", "märz", "marz", "mrz"),
    ("april", "apr", "abril", "abr", "avril", "avr"),
    ("may", "maio", "mai", "mayo"),
    ("june", "jun", "junho", "junio", "juin", "juni"),
    ("july", "jul", "julho", "julio", "juillet", "juil", "juli"),
    ("august", "aug", "agosto", "ago", "août", "aout"),
    ("september", "sep", "sept", "setembro", "set", "septiembre", "septembre"),
    ("october", "oct", "outubro", "out", "octubre", "octobre", "oktober", "okt"),
    ("november", "nov", "novembro", "noviembre", "novembre"),
    ("december", "dec", "dezembro", "dez", "diciembre", "dic", "décembre", "decembre", "déc", "dezember"),
)
_MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, start=1) for name in names}
_MONTH = r"([^\W\d_]{3,10})\.?"
# A date written with its month's name: ``14 March 1985``, ``14th of March, 1985``, ``14 de março
# de 1985``, ``14. März 1985``, ``March 14, 1985``, ``14-Mar-1985``.
_WORD_DATE_RE = re.compile(rf"(?i)(?<![\w.])(?:(\d{{1,2}})(?:st|nd|rd|th|o|\.)?(?:\s+(?:of|de|del)\s+|\s+|-){_MONTH}"
                           rf"(?:,?\s+(?:of\s+|de\s+|del\s+)?|-)((?:19|20)\d{{2}})"
                           rf"|{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{{2}}))(?!\w|\.\w)")
# Words that make a date after them a date of birth (within ``_BIRTH_WINDOW`` characters before it).
_BIRTH_WORDS_RE = re.compile(r"(?i)(?<!\w)(?:born|birth\w*|d\.?o\.?b|nasc\w*|anivers[aá]rio|nacid[oa]|nacimiento"
                             r"|née?|naissance|geboren|geburt\w*|cumpleaños)(?!\w)")
_BIRTH_WINDOW = 40
# A full date with no birth word before it is masked when its year is before this one: a date of
# birth written without the word. Orders, invoices and releases in support questions are recent.
_BIRTH_YEAR_BEFORE = 2010
# Not after a word that makes four dotted numbers a version or an enzyme (EC 1.14.16.2).
_IPV4_RE = re.compile(r"(?<![\w.])(?<!(?i:ec) )(?<!(?i:version) )(?<!(?i:build) )(?<![vV])(?:\d{1,3}\.){3}\d{1,3}"
                      r"(?![\w]|\.\d)")
_IPV4_PADDED_RE = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}")
_IPV6_RE = re.compile(r"(?i)(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}(?:[0-9a-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3})(?:%\w+)?"
                      r"(?![\w:])")
# Anything any detector could match has one of these; a line without any is left as it is.
_DIGIT_RE = re.compile(r"\d")
_AT_WORD_RE = re.compile(r"(?i)\b(?:at|arroba)\b")
_KEYLIKE_RE = re.compile(r"[A-Za-z0-9_\-+/=]{11,}")
# A number in a national format with a trunk ``0`` or an area code in parentheses and a separator
# (``07700 900123``, ``030 12345678``, ``(11) 91234-5678``, ``01 42 68 53 00``), taken when it is a
# possible number in one of ``NATIONAL_REGIONS`` though ``--region`` reads it otherwise.
_NATIONAL_RE = re.compile(r"(?<![\w+.,/-])(?:\(0?\d{2,4}\)\s?|0\d{1,4}[\s-])\d{2,5}(?:[\s-]?\d{2,5}){0,4}"
                          r"(?![\w.,/-]|\s\d)")
_DIGIT_RUN_RE = re.compile(r"[+(]?\d[\d\s().\-/]*\d")
# A Brazilian number without ``+55`` and without a trunk 0: a two-digit area code, then a mobile
# (``9`` and eight digits) or a landline (``2``–``5`` and seven); taken when phonenumbers finds it a
# valid Brazilian number (``11 91234-5678``, ``11 9 1234-5678``, ``21 3456-7890``).
_BR_PHONE_RE = re.compile(r"(?<![\w+.,/-])\(?[1-9]\d\)?[ .-]?(?:9[ .-]?\d{4}|[2-5]\d{3})[ .-]?\d{4}(?![\w,/-]|\.\d)")
_PHONE_EDGE = frozenset("-_/.")
_RANGE_RE = re.compile(r"(\d+)\s?[-–]\s?(\d+)")
_TOKEN_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~")


@dataclass(frozen=True)
class _Plugins:
    patterns: tuple[re.Pattern[str], ...]
    keyword_re: re.Pattern[str]
    entropy: Callable[[str], float]


@lru_cache(maxsize=1)
def _plugins() -> _Plugins:
    """detect-secrets' regex plugins (every registered one but its public-IP detector: IPs are
    ``<ip>`` here), its keyword list, its entropy measure. Loaded once, on first use."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.ip_public import IPPublicDetector
    from detect_secrets.plugins.keyword import DENYLIST

    patterns: list[re.Pattern[str]] = []
    for _, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if issubclass(cls, RegexBasedDetector) and not issubclass(cls, IPPublicDetector):
            patterns.extend(cls().denylist)
    words = "|".join((*DENYLIST, *_KEYWORDS_EXTRA))
    # keyword, optional closing quote/bracket, = or : (or :=, =>), optional quote, the value (one token)
    keyword_re = re.compile(rf"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]*[_-])?(?:{words})\w*['\"\]]{{0,2}}"
                            r"\s*(?::=|=>|==?|:)\s*['\"`]?)([^\s'\"`,;&]+)")
    entropy = Base64HighEntropyString().calculate_shannon_entropy
    return _Plugins(patterns=tuple(patterns), keyword_re=keyword_re, entropy=entropy)


def _whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to the whole token around it (a plugin's pattern may match only
    its prefix, or stop short of a JWT's signature); a trailing full stop stays outside."""
    s, e = start, end
    while s > 0 and text[s - 1] in _TOKEN_SET:
        s -= 1
    while e < len(text) and text[e] in _TOKEN_SET:
        e += 1
    while e > end and text[e - 1] in ".=-":
        e -= 1
    return s, max(e, end)


class _Spans:
    """The masked spans of one text, merged; then the text with each span as ``<kind>`` — or, for
    a span decoded and masked on its own (a percent-encoded run), as its masked decoding."""

    def __init__(self, text: str):
        self.text = text
        self.spans: list[tuple[int, int, str]] = []
        self.decoded: dict[tuple[int, int], tuple[str, Counter]] = {}
        self._view: str | None = text

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in self.spans)

    def add(self, start: int, end: int, kind: str) -> None:
        if start >= end:
            return
        kept = [(s, e, k) for s, e, k in self.spans if e <= start or s >= end]
        if len(kept) != len(self.spans):  # overlaps a span found before: one mask, the earlier kind
            inner = [(s, e, k) for s, e, k in self.spans if not (e <= start or s >= end)]
            start, end = min(start, *(s for s, _, _ in inner)), max(end, *(e for _, e, _ in inner))
            kind = next((k for _, _, k in inner if k != "decoded"), kind if kind != "decoded" else "secret")
            for s, e, _ in inner:
                self.decoded.pop((s, e), None)
        self.spans = [*kept, (start, end, kind)]
        self._view = None

    def replace(self, start: int, end: int, masked: str, found: Counter) -> None:
        """``[start, end)`` written as ``masked`` (its decoding, masked), its masks ``found``."""
        self.add(start, end, "decoded")
        if (start, end, "decoded") in self.spans:
            self.decoded[(start, end)] = (masked, found)

    def view(self) -> str:
        """The text with every masked span blanked (so later detectors skip it)."""
        if self._view is None:
            out, at = [], 0
            for s, e, _ in sorted(self.spans):
                out += [self.text[at:s], "\x00" * (e - s)]
                at = e
            out.append(self.text[at:])
            self._view = "".join(out)
        return self._view

    def result(self) -> tuple[str, Counter]:
        found: Counter = Counter()
        parts, at = [], 0
        for s, e, kind in sorted(self.spans):
            if (s, e) in self.decoded:
                masked, inner = self.decoded[(s, e)]
                parts += [self.text[at:s], masked]
                found.update(inner)
            else:
                parts += [self.text[at:s], f"<{kind}>"]
                found[kind] += 1
            at = e
        parts.append(self.text[at:])
        return "".join(parts), found


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


class Masker:
    """Masks one text at a time (see the module docstring). ``region``: the ISO 3166 region
    national phone numbers are read in; ``names``: an optional name/address detector;
    ``personal=False``: secrets only (``--keep-pii`` keeps personal data, never a secret)."""

    def __init__(self, *, region: str = DEFAULT_REGION, names: NameDetector | None = None, personal: bool = True):
        import phonenumbers

        region = region.upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"unknown region {region!r} (an ISO 3166 code such as US, GB, DE, BR, IN)")
        self.region = region
        self.names = names if personal else None
        self.personal = personal  # False (--keep-pii): secrets only, personal data kept
        self._pn = phonenumbers

    @property
    def covers_names(self) -> bool:
        return self.names is not None

    def mask(self, text: str) -> tuple[str, Counter]:
        """``text`` in its normal form (``normal_form``) with every item found as ``<kind>``, and
        the count of each kind."""
        return self._mask(normal_form(text), depth=0)

    def _mask(self, text: str, *, depth: int) -> tuple[str, Counter]:
        # the pre-filter: what each detector needs to see before it can match anything
        digits = _DIGIT_RE.search(text) is not None
        assign = "=" in text or ":" in text
        keylike = _has_keylike(text)
        mail = "@" in text or (_AT_WORD_RE.search(text) is not None and _SPELLED_WORDS_RE.search(text) is not None)
        pem = "PRIVATE KEY" in text
        said = _PASSWORD_SAID_RE.search(text) is not None
        encoded = "%" in text and _PERCENT_ESCAPE_RE.search(text) is not None
        if not (digits or assign or keylike or mail or pem or encoded or said) and self.names is None:
            return text, Counter()
        spans = _Spans(text)
        if encoded and depth < _MAX_DECODE_DEPTH:
            self._percent_encoded(spans, depth=depth)
        if pem:
            self._private_keys(spans)
        if digits or assign or keylike or pem or said:
            self._secrets(spans, assign=assign, keylike=keylike, said=said)
        if keylike and depth < _MAX_DECODE_DEPTH:
            self._base64_encoded(spans, depth=depth)
        if mail and self.personal:
            self._emails(spans)
        if digits and self.personal:
            self._numbers(spans)
        if keylike:
            self._high_entropy(spans)
        if self.names is not None:
            for start, end, kind in self.names(spans.view()):
                if spans.free(start, end) and kind in OPTIONAL_KINDS:
                    spans.add(start, end, kind)
        return spans.result()

    # --- decoding: percent-escapes, base64, PEM ---------------------------------------------

    def _percent_encoded(self, spans: _Spans, *, depth: int) -> None:
        """A run with percent-escapes is decoded (twice encoded: twice) and masked as decoded;
        when its decoding holds an item, the run is written decoded with the item masked."""
        for m in _PERCENT_RUN_RE.finditer(spans.view()):
            run = decoded = m.group(0)
            for _ in range(_MAX_DECODE_DEPTH + 1):
                if not _PERCENT_ESCAPE_RE.search(decoded):
                    break
                decoded = _percent_decode(decoded)
            if decoded == run:
                continue
            masked, found = self._mask(normal_form(decoded), depth=depth + 1)
            if found:
                spans.replace(m.start(), m.end(), masked, found)

    def _private_keys(self, spans: _Spans) -> None:
        """A PEM private key from its BEGIN line to its END line, or through the base64 after the
        BEGIN line when the key was cut: one ``<secret>``."""
        text = spans.text
        for m in _PEM_BEGIN_RE.finditer(text):
            end = _PEM_END_RE.search(text, m.end())
            if end is not None:
                spans.add(m.start(), end.end(), "secret")
                continue
            body = _PEM_BODY_RE.match(text, m.end())
            spans.add(m.start(), body.end() if body else m.end(), "secret")

    def _base64_encoded(self, spans: _Spans, *, depth: int) -> None:
        """A base64 (or base64url) token that decodes to text: masked as a whole when that text
        holds an item (as the item's kind; ``secret`` when one is a secret) or is a
        ``user:password`` pair (HTTP Basic credentials without the word)."""
        for m in _BASE64_RE.finditer(spans.view()):
            decoded = _b64_text(m.group(0))
            if decoded is None:
                continue
            if _CREDENTIAL_RE.fullmatch(decoded):
                spans.add(m.start(), m.end(), "secret")
                continue
            _, found = self._mask(normal_form(decoded), depth=depth + 1)
            if found:
                spans.add(m.start(), m.end(), "secret" if "secret" in found else found.most_common(1)[0][0])

    # --- secrets ---------------------------------------------------------------------------

    def _secrets(self, spans: _Spans, *, assign: bool, keylike: bool, said: bool = True) -> None:
        text = spans.text
        if assign:
            for m in _URL_USERINFO_RE.finditer(text):
                spans.add(m.start(2), m.end(2), "secret")
            for m in _URL_PARAM_RE.finditer(text):
                spans.add(m.start(2), m.end(2), "secret")
        plugins = _plugins()
        for pattern in plugins.patterns if assign or keylike or "PRIVATE KEY" in text or "PuTTY" in text else ():
            for m in pattern.finditer(spans.view()):
                if m.group(0).strip():
                    s, e = m.span(0)
                    while s < e and not (text[s].isalnum() or text[s] in "-_"):
                        s += 1  # the patterns that take the space or quote before a key
                    while e > s and not (text[e - 1].isalnum() or text[e - 1] in "-_=."):
                        e -= 1
                    spans.add(*_whole_token(text, s, e), "secret")
        for m in _PREFIX_RE.finditer(spans.view()):
            spans.add(*_whole_token(text, *m.span(0)), "secret")
        for m in _BEARER_RE.finditer(spans.view()):
            value = m.group(2)
            if any(ch.isdigit() for ch in value) or len(value) >= 20:
                spans.add(m.start(2), m.end(2), "secret")
        for m in _PASSWORD_SAID_RE.finditer(spans.view()) if said else ():
            value = m.group(1).rstrip(".!?:;)")
            if (len(value) >= 6 and "\x00" not in value and any(ch.isalpha() for ch in value)
                    and any(ch.isdigit() or ch in _PASSWORD_SIGNS for ch in value)
                    and not value.startswith("<") and not _VERSION_RE.fullmatch(value)):
                spans.add(m.start(1), m.start(1) + len(value), "secret")
        for m in plugins.keyword_re.finditer(spans.view()) if assign else ():
            value, sep = m.group(2), m.group(1).rstrip(" '\"`")[-1:]
            # after ":" a plain word is prose ("password: forgot it"), a value with a digit or a sign is not
            if sep == ":" and value.isalpha() and len(value) < 12:
                continue
            if value.startswith("<") or "\x00" in value or len(value) < 4:
                continue
            if _COUNT_KEY_RE.search(m.group(1).rstrip(" '\"`:=>]")):  # max_tokens=1024: a count, not a token
                continue
            spans.add(m.start(2), m.end(2), "secret")

    def _high_entropy(self, spans: _Spans) -> None:
        """Last: a long random-looking run that no named detector took (``_random_run``)."""
        entropy = _plugins().entropy
        for m in _UUID_RE.finditer(spans.view()):
            spans.add(m.start(), m.end(), "secret")
        for m in _ENTROPY_RUN_RE.finditer(spans.view()):
            run = m.group(0)
            if _random_run(run, entropy):
                spans.add(m.start(), m.end(), "secret")
                continue
            for piece in _PIECE_RE.finditer(run):  # the pieces between separators, each tested
                if _random_token(piece.group(0), entropy):
                    spans.add(m.start() + piece.start(), m.start() + piece.end(), "secret")

    # --- e-mail ----------------------------------------------------------------------------

    def _emails(self, spans: _Spans) -> None:
        from email_validator import EmailNotValidError, validate_email

        view = spans.view()
        if "@" in view:
            for pattern in (_EMAIL_RE, _SPACED_EMAIL_RE):  # spaces around the @: "jane @ example.com"
                for m in pattern.finditer(spans.view()):
                    try:
                        validate_email("".join(m.group(0).split()), check_deliverability=False,
                                       test_environment=True)
                    except EmailNotValidError:
                        continue
                    spans.add(m.start(), m.end(), "email")
        view = spans.view()
        if _SPELLED_WORDS_RE.search(view):
            for m in _SPELLED_EMAIL_RE.finditer(view):
                spans.add(m.start(), m.end(), "email")

    # --- numbers ---------------------------------------------------------------------------

    def _numbers(self, spans: _Spans) -> None:
        from stdnum import iban, luhn
        from stdnum.br import cnpj, cpf
        from stdnum.us import ssn

        def each(pattern: re.Pattern[str], kind: str, valid: Callable[[re.Match[str]], bool]) -> None:
            for m in pattern.finditer(spans.view()):
                if "\x00" not in m.group(0) and valid(m):
                    spans.add(m.start(), m.end(), kind)

        each(_IBAN_RE, "iban", lambda m: iban.is_valid(m.group(0).upper().replace("-", "")))
        each(_CNPJ_RE, "cnpj", lambda m: cnpj.is_valid(_digits(m.group(0))) and len(set(_digits(m.group(0)))) > 1)
        each(_CPF_RE, "cpf", lambda m: cpf.is_valid(_digits(m.group(0))) and len(set(_digits(m.group(0)))) > 1)
        each(_CARD_RE, "card", lambda m: luhn.is_valid(_digits(m.group(0))) and len(set(_digits(m.group(0)))) > 1)
        each(_SSN_RE, "ssn", lambda m: ssn.is_valid(m.group(0)))
        for m in _SSN_CONTEXT_RE.finditer(spans.view()):  # after "SSN": any nine digits (a known test number too)
            if "\x00" not in m.group(3):
                spans.add(m.start(3), m.end(3), "ssn")
        text = spans.text
        each(_DATE_RE, "date", lambda m: _is_date(m) and _personal_date(text, m.start(), _date_year(m)))
        for m in _SHORT_YEAR_DATE_RE.finditer(spans.view()):
            day_month = ((int(m.group(1)), int(m.group(3))), (int(m.group(3)), int(m.group(1))))
            if ("\x00" not in m.group(0) and _birth_word_before(text, m.start())
                    and any(_valid_date(1972, month, day) for day, month in day_month)):
                spans.add(m.start(), m.end(), "date")
        for m in _WORD_DATE_RE.finditer(spans.view()):
            year = _word_date_year(m)
            if "\x00" not in m.group(0) and year and _birth_word_before(text, m.start()):
                spans.add(m.start(), m.end(), "date")
        if ":" in spans.text:  # IPv6 first: it may end in an IPv4 address (::ffff:192.0.2.1)
            each(_IPV6_RE, "ip", lambda m: m.group(0).count(":") >= 2 and _is_ip(m.group(0).split("%")[0]))
        each(_IPV4_RE, "ip", lambda m: _is_ipv4(m.group(0)))
        self._phones(spans)

    def _phones(self, spans: _Spans) -> None:
        pn = self._pn
        if not any(len(_digits(run)) >= 7 for run in _DIGIT_RUN_RE.findall(spans.view())):
            return
        for leniency in (pn.Leniency.VALID, pn.Leniency.POSSIBLE):
            view = spans.view()
            for m in pn.PhoneNumberMatcher(view, self.region, leniency=leniency):
                raw = m.raw_string
                if "\x00" in raw or not spans.free(m.start, m.end):
                    continue
                if leniency == pn.Leniency.POSSIBLE and not _one_number(raw):
                    continue
                if _inside_word(view, m.start, m.end):  # INV-2024-000123, 1Z999AA10123456784
                    continue
                spans.add(m.start, m.end, "phone")
        for m in _BR_PHONE_RE.finditer(spans.view()):  # Brazil's without +55 under another region
            raw = m.group(0)
            if "\x00" in raw or self.region == "BR":
                continue
            try:
                number = pn.parse(raw, "BR")
            except pn.NumberParseException:
                continue
            if pn.is_valid_number(number):
                spans.add(m.start(), m.end(), "phone")
        for m in _NATIONAL_RE.finditer(spans.view()):  # another region's national format
            raw = m.group(0)
            if "\x00" in raw or not 9 <= len(_digits(raw)) <= 12:
                continue
            for region in NATIONAL_REGIONS:
                try:
                    number = pn.parse(raw, region)
                except pn.NumberParseException:
                    continue
                if pn.is_possible_number(number):
                    spans.add(m.start(), m.end(), "phone")
                    break


_MAX_DECODE_DEPTH = 2
# A run with separators is random-looking (a key) when it is this long (letters and digits), its
# characters carry this much Shannon entropy (bits a character, detect-secrets' measure) and its
# segments (``_SEGMENT_RE``) are this short on average: words, gene names and paths fall into long
# segments (``Oct4/Sox2/Klf4/Myc-mediated`` 2.9, ``IndexFlatIP/IndexFlatL2`` 3.1), base64 keys into
# short ones; a long run may have longer segments when its entropy is higher (no text of SciFact's
# corpus, the seeds or the ordinary questions reaches 4.32 bits; 20,000 random keys all pass).
_RUN_RULES = ((28, 4.0, 2.8), (32, 4.3, 3.6), (32, 4.4, 8.0))  # (letters and digits, entropy, segment)
_TOKEN_ENTROPY = 3.5
# A hex run of 32 digits or more (a 16-byte key and longer; hex carries at most 4 bits a digit).
_HEX_RE = re.compile(r"[0-9a-f]{32,}|[0-9A-F]{32,}")
_HEX_ENTROPY = 3.2


def _random_token(token: str, entropy: Callable[[str], float]) -> bool:
    """A token without separators (letters, digits, ``_``, trailing ``=``) that reads as a key:
    letters, two digits or more, entropy ≥ 3.5 bits a character (3.2 for 32+ hex digits: a 32-byte
    hex key spreads over 16 symbols) — unless it is ``_``-joined words
    and numbers (``test_50_percent_exclusion_rate``)."""
    core = token.rstrip("=")
    if "=" in core or not any(ch.isalpha() for ch in core) or sum(ch.isdigit() for ch in core) < 2:
        return False
    if "_" in core and all(p.isalpha() or p.isdigit() for p in core.split("_") if p):
        return False
    return entropy(core) >= (_HEX_ENTROPY if _HEX_RE.fullmatch(core) else _TOKEN_ENTROPY)


def _random_run(run: str, entropy: Callable[[str], float]) -> bool:
    """A run of a key's alphabet (``+``, ``/``, ``-``, ``_``, ``=`` inside) that reads as one key:
    at least four letters, a digit (or, from 32 characters on, three upper- and three lower-case
    letters), and one of ``_RUN_RULES`` met: enough letters and digits (28 or more), entropy high
    enough, segments short enough on average; a run without ``+ / - =`` is also read as one token
    (``_random_token``)."""
    core = run.rstrip("=")
    if not _RUN_SEPARATORS_RE.search(core) and _random_token(run, entropy):
        return True
    alnum = [ch for ch in core if ch.isalnum()]
    if len(alnum) < 20:
        return False
    digits = sum(ch.isdigit() for ch in alnum)
    upper = sum(ch.isupper() for ch in alnum)
    lower = len(alnum) - digits - upper
    if upper + lower < 4 or not (digits or (len(alnum) >= 32 and upper >= 3 and lower >= 3)):
        return False
    bits, segment = entropy(core), len(alnum) / max(len(_SEGMENT_RE.findall(core)), 1)
    return any(len(alnum) >= n and bits >= e and segment <= seg for n, e, seg in _RUN_RULES)


def _percent_decode(text: str) -> str:
    """Every run of percent-escapes as the UTF-8 text its bytes spell (as ``urllib.parse.unquote``)."""
    return _PERCENT_ESCAPES_RE.sub(lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"),
                                   text)


def _b64_text(token: str) -> str | None:
    """The text a base64 or base64url token decodes to (printable, UTF-8), or None."""
    body = token.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    alphabet = b"-_" if ("-" in body or "_" in body) else None
    if alphabet and ("+" in body or "/" in body):
        return None
    try:
        raw = base64.b64decode(padded, altchars=alphabet, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if len(text) < 6 or not all(ch.isprintable() or ch in "\t\n" for ch in text):
        return None
    return text


def _has_keylike(text: str) -> bool:
    """A key-like token: 11+ characters of a key's alphabet that are not one word in lower case
    (or capitalised) — what detect-secrets' token patterns, the prefixes and the entropy rule need."""
    return any(not (t.isalpha() and t[1:].islower()) for t in _KEYLIKE_RE.findall(text))


def _one_number(raw: str) -> bool:
    """A *possible* phone number taken only when it reads as one number: nine digits or more,
    no dotted group (a version, a decimal), every group of three digits or more (``10 2019``
    is a rank and a year), or a leading ``+``/``(``; two numbers of the same length joined by a
    dash are a range (``12000-53000``, pages ``12345-12350``)."""
    digits = _digits(raw)
    if len(digits) < 9 or "." in raw:
        return False
    if (pair := _RANGE_RE.fullmatch(raw.strip())) and len(pair.group(1)) == len(pair.group(2)):
        return False
    if raw.lstrip().startswith(("+", "(")):
        return True
    return all(len(g) >= 3 for g in re.split(r"[\s-]+", raw.strip()) if g)


def _is_date(m: re.Match[str]) -> bool:
    if m.group(1):
        a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
        return any(_valid_date(year, month, day) for day, month in ((a, b), (b, a)))
    return _valid_date(int(m.group(5)), int(m.group(7)), int(m.group(8)))


def _date_year(m: re.Match[str]) -> int:
    return int(m.group(4) or m.group(5))


def _word_date_year(m: re.Match[str]) -> int | None:
    """The year of a date written with its month's name, when it is a real date (else None)."""
    day, month, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
    number = _MONTHS.get(month.lower().rstrip("."))
    if number is None or not _valid_date(int(year), number, int(day)):
        return None
    return int(year)


def _birth_word_before(text: str, start: int) -> bool:
    return _BIRTH_WORDS_RE.search(text, max(0, start - _BIRTH_WINDOW), start) is not None


def _personal_date(text: str, start: int, year: int) -> bool:
    """A full date in numbers is a date of birth when a birth word stands in the
    ``_BIRTH_WINDOW`` characters before it, or when its year is before ``_BIRTH_YEAR_BEFORE``
    (a date in words needs the word: "between March 1, 1999, and May 31, 2002" is a period)."""
    return year < _BIRTH_YEAR_BEFORE or _birth_word_before(text, start)


def _inside_word(text: str, start: int, end: int) -> bool:
    """A match glued to a word: a letter, digit or ``_`` next to it, or ``-``, ``/``, ``.``
    between it and one (``INV-2024-000123``)."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if before.isalnum() or before == "_" or after.isalnum() or after == "_":
        return True
    return ((before in _PHONE_EDGE and start >= 2 and text[start - 2].isalnum())
            or (after in _PHONE_EDGE and end + 1 < len(text) and text[end + 1].isalnum()))


def _is_ipv4(text: str) -> bool:
    """An IPv4 address, its numbers written with leading zeros too (``192.168.001.010``)."""
    if _is_ip(text):
        return True
    return _IPV4_PADDED_RE.fullmatch(text) is not None and all(int(part) <= 255 for part in text.split("."))


def _valid_date(year: int, month: int, day: int) -> bool:
    try:
        _dt.date(year, month, day)
    except ValueError:
        return False
    return True


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=8)
def default_masker(region: str = DEFAULT_REGION) -> Masker:
    return Masker(region=region)


def mask_text(text: str, *, masker: Masker | None = None) -> tuple[str, Counter]:
    """``text`` masked by ``masker`` (default: the default region's, no name detector)."""
    return (masker or default_masker()).mask(text)


def coverage_note(masker: Masker) -> str:
    """What draft.md says the masking did not cover."""
    if not masker.personal:
        return "personal data kept (--keep-pii): only secrets masked"
    if masker.covers_names:
        return "names and street addresses: masked by the optional detector (presidio-analyzer)"
    return ("names and street addresses: not covered (install presidio-analyzer and a spaCy model to mask them; "
            "docs/golden-set.md)")

