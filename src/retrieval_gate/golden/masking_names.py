"""The masker ``cases draft`` uses (``golden.masking.Masker``), with the optional detector of names and
street addresses handed in when it can run here: **presidio-analyzer** with a spaCy English
model the user installed (``pip install presidio-analyzer`` and a spaCy model package such as
``en_core_web_lg``). Nothing is downloaded: without both, names and addresses are not covered
and draft.md says so (docs/golden-set.md). Presidio's ``PERSON`` becomes ``<name>``, its
``LOCATION`` ``<address>``."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from retrieval_gate.errors import UsageError
from retrieval_gate.golden.masking import DEFAULT_REGION, Masker, NameDetector

SPACY_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_trf")
PRESIDIO_KINDS = {"PERSON": "name", "LOCATION": "address"}
MIN_SCORE = 0.5


def installed_spacy_model() -> str | None:
    """The first of ``SPACY_MODELS`` installed, when presidio-analyzer is installed too."""
    if importlib.util.find_spec("presidio_analyzer") is None:
        return None
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


def presidio_detector() -> NameDetector | None:
    """Presidio's analyzer over the installed spaCy model, or None when either is missing."""
    model = installed_spacy_model()
    if model is None:
        return None
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    engine = NlpEngineProvider(nlp_configuration={"nlp_engine_name": "spacy",
                                                  "models": [{"lang_code": "en", "model_name": model}]}).create_engine()
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])

    def detect(text: str) -> Iterable[tuple[int, int, str]]:
        for r in analyzer.analyze(text=text, language="en", entities=list(PRESIDIO_KINDS)):
            if r.score >= MIN_SCORE:
                yield r.start, r.end, PRESIDIO_KINDS[r.entity_type]

    return detect


def draft_masker(region: str = DEFAULT_REGION, *, names: NameDetector | None = None,
                 find_names: bool = True, personal: bool = True) -> Masker:
    """The masker for ``region`` (exit 2 on a region phonenumbers does not know), with the
    name detector given, else Presidio's when installed (``find_names``); ``personal=False``
    (``--keep-pii``): secrets only."""
    if names is None and find_names and personal:
        names = presidio_detector()
    try:
        return Masker(region=region, names=names, personal=personal)
    except ValueError as exc:
        raise UsageError(f"--region {region!r}: {exc}") from None
