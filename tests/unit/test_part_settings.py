"""Each part owns a typed settings model and receives only its slice: the retrievers' options are
validated in one place (``retrieve/settings.py``), the embedder's settings carry the export folder
the entry point read, the documented option keys are the ones read, and the config module imports
no builder. That no part imports the config module is an architecture rule
(tests/unit/test_architecture.py). The structural rules are read from the code with ``ast``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import retrieval_gate
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.errors import InputError
from retrieval_gate.overrides import SuiteOverrides
from retrieval_gate.retrieve.settings import FLAT_KEYS, RetrieverOptions
from retrieval_gate.settings import ConfigFile, SuiteConfig, parse_config, resolve_suite

PACKAGE = Path(retrieval_gate.__file__).parent
OPTIONS_HOME = "retrieve/settings.py"


def _trees() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


# -- one place validates the retriever options ------------------------------------------------------


def test_only_retrieve_settings_names_the_option_keys():
    """A flat option key as a string (``"bm25_k1"``, ``"http_retries"``) is where an option is
    read or checked: only the options' home may hold one (a key of a dict written out, such as a
    retriever's fingerprint, reads nothing). The store adapters' and the API model's keys are
    left out: the issue names them as ordinary words (``path``, ``url``, ``dsn``, ``api_key``) that
    other code uses for other things, and their adapters name them in messages; they too are read
    only from their typed slices (``RetrieverOptions.stores``, ``.openai``)."""
    checked = {key for key, (slice_name, _) in FLAT_KEYS.items() if slice_name not in ("stores", "openai")}
    found = []
    for rel, tree in _trees().items():
        if rel == OPTIONS_HOME:
            continue
        written = {id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys}
        found += [f"{rel}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in checked
                  and id(node) not in written]
    assert found == []


def test_the_options_documented_are_the_options_read():
    """docs/retrievers.md's option tables name exactly the flat keys the options' home reads."""
    doc = (PACKAGE.parents[1] / "docs" / "retrievers.md").read_text(encoding="utf-8")
    stores = "|".join(key for key, (slice_name, _) in FLAT_KEYS.items() if slice_name == "stores")
    keys = (r"(?:bm25|http|rerank|hybrid|haystack|openai)_[a-z0-9_]+|rrf_k|id_key|retriever_version|async_concurrency"
            rf"|base_url|api_key|{stores}")
    documented = set(re.findall(rf"^\| `({keys})` \|", doc, flags=re.MULTILINE))
    assert documented == set(FLAT_KEYS)


def test_the_config_module_imports_no_builder():
    imported = _imported(_trees()["settings.py"])
    builders = {m for m in imported if m.startswith(("retrieval_gate.retrieve.factory", "retrieval_gate.evaluation",
                                                     "retrieval_gate.embed.backends", "retrieval_gate.store.chroma"))}
    assert builders == set()


# -- the options, typed -----------------------------------------------------------------------------


def test_each_flat_key_lands_in_its_retrievers_slice_and_a_dump_reads_back():
    given = {"bm25_k1": 1.2, "bm25_stopwords": ["x", "y"], "rrf_k": 10, "hybrid_depth": 7,
             "rerank_top_n": 3, "http_retries": 0, "http_headers": {"X-Team": "rag"}}
    options = RetrieverOptions.model_validate(given)
    assert (options.bm25.k1, options.bm25.stopwords, options.bm25.b) == (1.2, ("x", "y"), 0.4)
    assert (options.hybrid.rrf_k, options.hybrid.depth) == (10, 7)
    assert (options.rerank.top_n, options.rerank.batch_size) == (3, 32)
    assert (options.http.retries, options.http.headers, options.http.timeout_s) == (0, {"X-Team": "rag"}, 10.0)
    assert options.model_dump() == dict(sorted(given.items()))  # only what was given, in the file's form
    assert RetrieverOptions.model_validate(options.model_dump()) == options


def test_a_number_keeps_the_type_it_was_written_with():
    """BM25's k1 and b go into the results' fingerprint as written: ``1`` must not become ``1.0``
    (that would read as a configuration change against an older baseline)."""
    bm25 = RetrieverOptions.model_validate({"bm25_k1": 1, "bm25_b": 0.5}).bm25
    assert (type(bm25.k1), type(bm25.b)) == (int, float)
    assert RetrieverOptions.model_validate({"bm25_stopwords": ["the", 1]}).bm25.stopwords == ("the", "1")


def test_flags_merge_over_the_files_options(tmp_path: Path):
    config = parse_config("suites:\n  default:\n    options: {rrf_k: 10, bm25_b: 0.75}\n", source=tmp_path / "rg.yml")
    suite = resolve_suite(config, suite="default", overrides=SuiteOverrides(options={"bm25_b": 0.5}),
                          config_path=tmp_path / "rg.yml")
    assert (suite.options.hybrid.rrf_k, suite.options.bm25.b) == (10, 0.5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rrf_k": "many"}, "options.rrf_k: Input should be a valid integer, got 'many'"),
        ({"rrf_k": 0}, "options.rrf_k: Input should be greater than or equal to 1"),
        ({"hybrid_depth": 2.5}, "options.hybrid_depth: Input should be a valid integer"),
        ({"bm25_k1": True}, "options.bm25_k1: Input should be a valid number"),  # strict: a boolean is no number
        ({"bm25_b": -0.1}, "options.bm25_b: Input should be greater than or equal to 0"),
        ({"http_retries": "2"}, "options.http_retries: Input should be a valid integer"),  # nor text an integer
        ({"http_deadline_s": float("nan")}, "options.http_deadline_s: Input should be a finite number"),
        ({"http_breaker": -1}, "options.http_breaker: Input should be greater than or equal to 0"),
        ({"bm25_kk": 1}, "unknown retriever option(s) bm25_kk (known: api_key, async_concurrency, base_url, bm25_b,"),
    ],
)
def test_a_bad_option_is_one_input_error_naming_the_file_and_the_key(tmp_path: Path, options, message):
    with pytest.raises(InputError) as err:
        resolve_suite(ConfigFile(), suite="default", overrides=SuiteOverrides(options=options), config_path=None)
    assert message in str(err.value) and str(err.value).startswith("<flags>: options: ")


def test_every_bad_option_is_reported_at_once():
    with pytest.raises(ValidationError) as err:
        RetrieverOptions.model_validate({"rrf_k": 0, "http_timeout_s": 0, "nope": 1})
    text = str(err.value)
    assert "unknown retriever option(s) nope" in text and "options.rrf_k:" in text and "options.http_timeout_s:" in text


def test_a_header_value_is_never_quoted_in_an_error():
    with pytest.raises(InputError) as err:
        resolve_suite(ConfigFile(), suite="default", config_path=None,
                      overrides=SuiteOverrides(options={"http_headers": {"Authorization": ["Bearer s3cr3t-token"]}}))
    assert "options.http_headers: must map header names to text values" in str(err.value)
    assert "s3cr3t" not in str(err.value)


# -- the embedder's settings ------------------------------------------------------------------------


def test_the_embedders_slice_carries_the_export_folder_the_entry_point_gave(tmp_path: Path):
    suite = resolve_suite(ConfigFile(), suite="default", overrides=SuiteOverrides(embed_backend="onnx", batch_size=8),
                          config_path=None, embed_exports=tmp_path / "onnx")
    assert suite.embed == EmbedSettings(backend="onnx", batch_size=8, export_root=tmp_path / "onnx")
    assert SuiteConfig().embed.export_root is None  # a library caller gives none: the ONNX builder asks for it


def test_onnx_on_a_gpu_is_refused_by_the_embedders_rule():
    with pytest.raises(ValidationError, match="onnx runs on the CPU"):
        EmbedSettings(backend="onnx", device="cuda")
