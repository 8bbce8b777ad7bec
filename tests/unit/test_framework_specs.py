"""Framework retriever specs (``langchain:``, ``llamaindex:``, ``haystack:``) as the config reads
them: parsing, names, options checked where every option is, and the guards that keep the team's
code away from a write token. No framework is imported here."""

from __future__ import annotations

import os

import pytest

from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.forge.guard import refuse_user_code
from retrieval_gate.overrides import SuiteOverrides
from retrieval_gate.retrieve.spec import FRAMEWORKS, parse_retriever, parse_retrievers
from retrieval_gate.settings import ConfigFile, resolve_suite
from retrieval_gate.sweep.plan import check_part_winner


@pytest.mark.parametrize("kind", FRAMEWORKS)
def test_a_framework_spec_parses_to_its_kind_name_and_slug(kind):
    spec = parse_retriever(f"{kind}:my_app.rag:retriever")
    assert (spec.kind, spec.target, spec.name) == (kind, "my_app.rag:retriever", f"{kind}:my_app.rag:retriever")
    assert spec.slug == f"{kind}-my_app-rag-retriever" and not spec.needs_embedder
    assert parse_retriever(f"{kind}:app/rag.py:build+rerank").rerank


@pytest.mark.parametrize("text", ["langchain:", "langchain:module_only", "llamaindex:mod:", "haystack::attr"])
def test_a_framework_spec_without_module_and_attribute_is_a_usage_error(text):
    with pytest.raises(UsageError, match=r"expected (langchain|llamaindex|haystack):module:attribute"):
        parse_retriever(text)


def test_the_unknown_spec_message_lists_the_framework_specs():
    with pytest.raises(UsageError, match="langchain:module:attr, llamaindex:module:attr, haystack:module:attr"):
        parse_retrievers("langchian:a:b")


def test_framework_options_are_read_and_checked_with_the_others():
    suite = resolve_suite(ConfigFile(), suite="default", config_path=None,
                          overrides=SuiteOverrides(options={"id_key": "card_id", "retriever_version": 3,
                                                            "async_concurrency": 2,
                                                            "haystack_query_input": "embedder.text"}))
    custom = suite.options.custom
    assert (custom.id_key, custom.retriever_version, custom.concurrency, custom.haystack_query_input) == (
        "card_id", 3, 2, "embedder.text")
    assert suite.options.model_dump() == {"async_concurrency": 2, "haystack_query_input": "embedder.text",
                                          "id_key": "card_id", "retriever_version": 3}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"id_key": ""}, "options.id_key: String should have at least 1 character"),
        ({"id_key": 5}, "options.id_key: Input should be a valid string, got '5'"),
        ({"async_concurrency": 0}, "options.async_concurrency: Input should be greater than or equal to 1"),
        ({"retriever_version": 1.1}, "options.retriever_version: "),
    ],
)
def test_a_bad_framework_option_is_an_input_error_naming_the_key(options, message):
    with pytest.raises(InputError) as err:
        resolve_suite(ConfigFile(), suite="default", overrides=SuiteOverrides(options=options), config_path=None)
    assert message in str(err.value)


@pytest.mark.parametrize("kind", FRAMEWORKS)
def test_a_framework_retriever_is_refused_beside_a_write_token(kind):
    with pytest.raises(UsageError, match=f"retriever {kind}:a:b: a {kind}: retriever is refused while "
                                         "RETRIEVAL_GATE_GITLAB_WRITE_TOKEN is set"):
        refuse_user_code(parse_retrievers(f"bm25,{kind}:a:b"), variable="RETRIEVAL_GATE_GITLAB_WRITE_TOKEN",
                         advice="x")


def test_a_sweep_part_cannot_choose_a_framework_retriever(tmp_path):
    current = resolve_suite(ConfigFile(), suite="default", config_path=None, overrides=SuiteOverrides())
    with pytest.raises(InputError, match="from a sweep part is not written"):
        check_part_winner({"retriever": "langchain:evil:r"}, where="part.json", current=current)



@pytest.mark.parametrize(
    ("meta", "own", "id_key", "said"),
    [
        ({"source": "kb/a.md"}, None, "card_id",
         "has no metadata['card_id'] (option id_key; its metadata keys: source)"),
        ({"card_id": None}, None, "card_id", "has None in metadata['card_id']"),
        ({"card_id": ""}, None, "card_id", "has an empty metadata['card_id']"),
        ({"card_id": True}, None, "card_id", "has a bool in metadata['card_id']"),
        ({"card_id": ["a"]}, None, "card_id", "has a list in metadata['card_id']"),
        ({}, None, None, "has no Document.id (set the id_key option to the metadata key that holds the card id)"),
    ],
)
def test_a_document_without_a_card_id_is_refused_never_read_as_none(meta, own, id_key, said):
    from retrieval_gate.retrieve.frameworks import MissingId, _id_of

    with pytest.raises(MissingId) as err:
        _id_of(meta, own, id_key, meta_name="metadata", own_name="Document.id")
    assert str(err.value).startswith("a returned document " + said)


def test_a_card_id_is_text_or_an_integer_taken_as_text():
    from retrieval_gate.retrieve.frameworks import _id_of

    assert _id_of({"card_id": 7}, None, "card_id", meta_name="metadata", own_name="Document.id") == "7"
    assert _id_of({"card_id": "a"}, "chunk-1", "card_id", meta_name="metadata", own_name="Document.id") == "a"
    assert _id_of({}, "chunk-1", None, meta_name="metadata", own_name="Document.id") == "chunk-1"


def test_the_cli_turns_haystack_telemetry_off_unless_the_user_set_it(monkeypatch):
    from retrieval_gate.environment import no_framework_telemetry

    monkeypatch.delenv("HAYSTACK_TELEMETRY_ENABLED", raising=False)
    no_framework_telemetry()
    assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "False"
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "True")
    no_framework_telemetry()
    assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "True"
