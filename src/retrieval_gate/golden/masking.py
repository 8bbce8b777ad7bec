"""Secrets and personal data in a query log, masked by well-kept detectors (docs/golden-set.md,
"Personal data and secrets"). Pure: text in, masked text and counts by kind out.

Each item found becomes ``<kind>``; the kinds, in the order they are looked for (a secret's
digits must not be read as a phone number first):

- ``secret`` — credentials in URLs (``user:pass@``, ``?token=``/``key=``/``password=``…); the
  regex plugins of **detect-secrets** (AWS keys, GitHub, GitLab, Slack, Stripe, OpenAI, JWT,
  SendGrid, npm, PyPI, private keys, …: their patterns, each match widened to the whole token);
  ``keyword=value`` / ``keyword: value`` pairs for detect-secrets' keyword list (password,
  secret, api_key, …) and ``token``, ``senha``; ``Bearer``/``Basic`` values; forge and API key
  prefixes detect-secrets does not know (``sk-proj-…``, ``github_pat_…``, ``hf_…``, ``AIza…``)
  UUIDs, and any token of 20+ letters, digits, ``_`` or ``=`` (hyphens, slashes and plus signs
  join the words of a compound) with letters and two digits or more whose Shannon entropy (detect-secrets' own
  measure) is at least 3.5 bits a character.
- ``email`` — Unicode local parts and IDN domains (checked by **email-validator**, no DNS), and
  the spelled-out ``john dot doe at gmail dot com`` / ``[at]`` / ``arroba … ponto`` form.
- ``iban`` (any case, mod-97 by **python-stdnum**), ``cnpj`` and ``cpf`` (Brazil, check
  digits by python-stdnum), ``card`` (13–19 digits with spaces, dots or dashes, Luhn by
  python-stdnum), ``ssn`` (US: ``123-45-6789``, or 9 digits after "SSN"/"social security";
  python-stdnum's rules), ``date`` (a day, month and year: ``14/03/1985``, ``1985-03-14``, and
  ``14 March 1985`` after "born"/"birth"/"DOB"; checked by ``datetime.date``), ``ip`` (IPv4 and
  IPv6, checked by the standard library's ``ipaddress``).
- ``phone`` — **phonenumbers**' ``PhoneNumberMatcher``: international numbers (``+44 …``)
  anywhere, national numbers as the region reads them (``region``, default ``US``; ``cases
  draft --region``), valid numbers first, then *possible* numbers of nine digits or more that
  look like one number (no dotted group, no group shorter than three digits); then a number
  written in a national format (a trunk ``0`` or an area code in parentheses, and a separator)
  that is possible in one of ``NATIONAL_REGIONS`` (GB, DE, FR, BR, IN, ES, IT, NL, PT, MX, AU, JP).
- ``name`` and ``address`` — only when a detector is handed in (``NameDetector``: the optional
  Presidio adapter, ``golden.masking_names``); without one they are not covered, and draft.md
  says so.

A compiled pre-filter skips, before any detector runs, every line with no digit, no ``@``, no
``=`` or ``:``, no key-like token (11+ characters of a key's alphabet that are not one word) and
not both an "at" and a "dot" — most queries of a log; each detector runs only on the lines that
hold what it needs (the phone matcher: a run of seven digits or more).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
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

_KEYWORDS_EXTRA = ("token", "access_?token", "auth_?token", "refresh_?token", "client_?secret", "apikey",
                   "api-key", "senha", "pass", "passcode")
_URL_PARAM_NAMES = (r"(?:access_|refresh_|id_|auth_|api_?)?token|api_?key|key|apikey|password|passwd|pwd|secret"
                    r"|client_secret|sig|signature|code|auth|session|sessionid|sid|jwt")
_PREFIX_RE = re.compile(r"(?<![\w-])(?:sk-(?:proj-|ant-|live-|test-|svcacct-|admin-)?|sk_(?:live|test)_"
                        r"|rk_(?:live|test)_|pk_(?:live|test)_|github_pat_|gh[pousr]_|glpat-|gldt-|glrt-|xox[abposr]-|hf_|npm_|pypi-"
                        r"|AIza|ya29\.|AKIA|ASIA|shpat_|dop_v1_)[A-Za-z0-9_\-]{8,}")
_BEARER_RE = re.compile(r"(?i)\b(bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})")
_URL_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@:]+(?::[^\s/?#@]*)?)@")
_URL_PARAM_RE = re.compile(rf"(?i)([?&;#](?:{_URL_PARAM_NAMES})=)([^&\s#]+)")
# A random-looking token: letters, digits, ``_`` and ``=`` in one run (hyphens, slashes and plus
# signs join words: "25-hydroxycholecalciferol", "Oct4/Sox2/Nanog/LIN28", "CD4+CD25+Foxp3+" are
# not keys; a base64 key with them is cut into pieces, each tested); a UUID.
_ENTROPY_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_=]{20,}(?![A-Za-z0-9_+/=-])")
_UUID_RE = re.compile(r"(?i)(?<![0-9a-f-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f-])")

_EMAIL_RE = re.compile(r"(?<![\w.+%-])[\w.!#$%'*+^`~-]+@(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_]{2,}(?![\w-])")
_AT = r"(?:\s+(?:at|arroba)\s+|\s*[\[(<{]\s*(?:at|arroba|@)\s*[\])>}]\s*)"
_DOT = r"(?:\s+(?:dot|ponto|punto)\s+|\s*[\[(<{]\s*(?:dot|ponto|punto|\.)\s*[\])>}]\s*)"
_SPELLED_EMAIL_RE = re.compile(rf"(?i)(?<![\w.])[\w.+-]+(?:{_DOT}[\w+-]+)*{_AT}[\w-]+(?:{_DOT}[\w-]+)*{_DOT}"
                               r"[^\W\d_]{2,6}(?![\w.])")
_SPELLED_WORDS_RE = re.compile(r"(?i)\b(?:dot|ponto|punto)\b|[\[(<{]")

# An IBAN as written: one run, or groups of four (the printed form) and a shorter last group.
_IBAN_RE = re.compile(r"(?i)(?<![A-Za-z0-9])[A-Z]{2}\d{2}"
                      r"(?:[A-Z0-9]{11,30}|(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?)(?![A-Za-z0-9])")
_CNPJ_RE = re.compile(r"(?<![\d./-])(?:\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}|\d{14})(?![\d/-]|\.\d)")
_CPF_RE = re.compile(r"(?<![\d./-])(?:\d{3}\.\d{3}\.\d{3}-\d{2}|\d{11})(?![\d/-]|\.\d)")
_CARD_RE = re.compile(r"(?<![\d.-])\d(?:[ .-]?\d){12,18}(?![\d-]|\.\d)")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_SSN_CONTEXT_RE = re.compile(r"(?i)\b(ssn|ss#|social security(?: number| no\.?| n[ºo°])?)(\W{0,4}(?:is\s+)?)"
                             r"(\d{3}[ -]?\d{2}[ -]?\d{4})(?!\d)")
_DATE_RE = re.compile(r"(?<![\d./-])(?:(\d{1,2})([/.-])(\d{1,2})\2((?:19|20)\d{2})"
                      r"|((?:19|20)\d{2})([/.-])(\d{1,2})\6(\d{1,2}))(?![\d]|[./-]\d)")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_BIRTH_DATE_RE = re.compile(r"(?i)\b(born(?: on)?|birth(?:day| date)?|date of birth|d\.?o\.?b\.?|nascid[oa](?: em)?"
                            r"|nascimento)(\W{0,4}(?:is\s+|on\s+)?)"
                            r"((\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]{3})[a-z]*\.?,?\s+((?:19|20)\d{2})"
                            r"|([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{2}))\b")
# Not after a word that makes four dotted numbers a version or an enzyme (EC 1.14.16.2).
_IPV4_RE = re.compile(r"(?<![\w.])(?<!(?i:ec) )(?<!(?i:version) )(?<!(?i:build) )(?<![vV])(?:\d{1,3}\.){3}\d{1,3}"
                      r"(?![\w]|\.\d)")
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
    """The masked spans of one text, merged; then the text with each span as ``<kind>``."""

    def __init__(self, text: str):
        self.text = text
        self.spans: list[tuple[int, int, str]] = []
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
            kind = inner[0][2]
        self.spans = [*kept, (start, end, kind)]
        self._view = None

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
        """``text`` with every item found as ``<kind>``, and the count of each kind."""
        # the pre-filter: what each detector needs to see before it can match anything
        digits = _DIGIT_RE.search(text) is not None
        assign = "=" in text or ":" in text
        keylike = _has_keylike(text)
        mail = "@" in text or (_AT_WORD_RE.search(text) is not None and _SPELLED_WORDS_RE.search(text) is not None)
        if not (digits or assign or keylike or mail or "PRIVATE KEY" in text) and self.names is None:
            return text, Counter()
        spans = _Spans(text)
        if digits or assign or keylike or "PRIVATE KEY" in text:
            self._secrets(spans, assign=assign, keylike=keylike)
        if mail and self.personal:
            self._emails(spans)
        if digits and self.personal:
            self._numbers(spans)
        if keylike and digits:
            self._high_entropy(spans)
        if self.names is not None:
            for start, end, kind in self.names(spans.view()):
                if spans.free(start, end) and kind in OPTIONAL_KINDS:
                    spans.add(start, end, kind)
        return spans.result()

    # --- secrets ---------------------------------------------------------------------------

    def _secrets(self, spans: _Spans, *, assign: bool, keylike: bool) -> None:
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
        for m in plugins.keyword_re.finditer(spans.view()) if assign else ():
            value, sep = m.group(2), m.group(1).rstrip(" '\"`")[-1:]
            # after ":" a plain word is prose ("password: forgot it"), a value with a digit or a sign is not
            if sep == ":" and value.isalpha() and len(value) < 12:
                continue
            if value.startswith("<") or "\x00" in value or len(value) < 4:
                continue
            spans.add(m.start(2), m.end(2), "secret")

    def _high_entropy(self, spans: _Spans) -> None:
        """Last: a long random-looking token that no named detector took."""
        entropy = _plugins().entropy
        for m in _UUID_RE.finditer(spans.view()):
            spans.add(m.start(), m.end(), "secret")
        for m in _ENTROPY_TOKEN_RE.finditer(spans.view()):
            token = m.group(0)
            letters = sum(ch.isalpha() for ch in token)
            digits = sum(ch.isdigit() for ch in token)
            if letters and digits >= 2 and entropy(token) >= 3.5:
                spans.add(m.start(), m.end(), "secret")

    # --- e-mail ----------------------------------------------------------------------------

    def _emails(self, spans: _Spans) -> None:
        from email_validator import EmailNotValidError, validate_email

        view = spans.view()
        if "@" in view:
            for m in _EMAIL_RE.finditer(view):
                try:
                    validate_email(m.group(0), check_deliverability=False, test_environment=True)
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
        each(_CNPJ_RE, "cnpj", lambda m: cnpj.is_valid(m.group(0)) and len(set(_digits(m.group(0)))) > 1)
        each(_CPF_RE, "cpf", lambda m: cpf.is_valid(m.group(0)) and len(set(_digits(m.group(0)))) > 1)
        each(_CARD_RE, "card", lambda m: luhn.is_valid(_digits(m.group(0))) and len(set(_digits(m.group(0)))) > 1)
        each(_SSN_RE, "ssn", lambda m: ssn.is_valid(m.group(0)))
        for m in _SSN_CONTEXT_RE.finditer(spans.view()):
            if ssn.is_valid(_digits(m.group(3))):
                spans.add(m.start(3), m.end(3), "ssn")
        each(_DATE_RE, "date", _is_date)
        for m in _BIRTH_DATE_RE.finditer(spans.view()):
            if _is_spelled_date(m):
                spans.add(m.start(3), m.end(3), "date")
        if ":" in spans.text:  # IPv6 first: it may end in an IPv4 address (::ffff:192.0.2.1)
            each(_IPV6_RE, "ip", lambda m: m.group(0).count(":") >= 2 and _is_ip(m.group(0).split("%")[0]))
        each(_IPV4_RE, "ip", lambda m: _is_ip(m.group(0)))
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
                spans.add(m.start, m.end, "phone")
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


def _has_keylike(text: str) -> bool:
    """A key-like token: 11+ characters of a key's alphabet that are not one word in lower case
    (or capitalised) — what detect-secrets' token patterns, the prefixes and the entropy rule need."""
    return any(not (t.isalpha() and t[1:].islower()) for t in _KEYLIKE_RE.findall(text))


def _one_number(raw: str) -> bool:
    """A *possible* phone number taken only when it reads as one number: nine digits or more,
    no dotted group (a version, a decimal), every group of three digits or more (``10 2019``
    is a rank and a year), or a leading ``+``/``(``."""
    digits = _digits(raw)
    if len(digits) < 9 or "." in raw:
        return False
    if raw.lstrip().startswith(("+", "(")):
        return True
    return all(len(g) >= 3 for g in re.split(r"[\s-]+", raw.strip()) if g)


def _is_date(m: re.Match[str]) -> bool:
    if m.group(1):
        a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
        return any(_valid_date(year, month, day) for day, month in ((a, b), (b, a)))
    return _valid_date(int(m.group(5)), int(m.group(7)), int(m.group(8)))


def _is_spelled_date(m: re.Match[str]) -> bool:
    day, month, year = (m.group(4), m.group(5), m.group(6)) if m.group(4) else (m.group(8), m.group(7), m.group(9))
    month = month.lower()
    return month in _MONTHS and _valid_date(int(year), _MONTHS.index(month) + 1, int(day))


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

