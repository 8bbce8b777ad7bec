"""init's CI route: a retriever that needs the team's code or packages gets the Python-job workflow
(the wheel in their own job), the same jobs as examples/workflows/python-job.yml; by prefix, by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from retrieval_gate.scaffold import texts
from retrieval_gate.scaffold.plan import CALLER, COMMENT, CONFIG, plan
from retrieval_gate.scaffold.route import OWN_JOB_PREFIXES, own_job_reason

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "python-job.yml"


@pytest.mark.parametrize("spec", ["python:app.rag:search", "langchain:app.rag:retriever",
                                  "llamaindex:app.index:index", "haystack:app.pipe:pipeline", "chroma:docs",
                                  "pgvector:chunks", "qdrant:docs", "LangChain:app:r", "python:a:b+rerank"])
def test_a_retriever_of_the_teams_code_or_store_needs_its_own_job(spec):
    reason = own_job_reason(spec)
    assert reason is not None and reason.startswith(f"retriever {spec} ")


@pytest.mark.parametrize("spec", ["dense", "bm25", "hybrid", "hybrid+rerank", "https://search.example/q",
                                  "run:runs/mine.trec"])
def test_what_the_image_runs_keeps_the_docker_action(spec):
    assert own_job_reason(spec) is None


def test_a_list_names_each_spec_that_needs_it():
    assert own_job_reason("bm25, python:a:b") == f"retriever python:a:b {OWN_JOB_PREFIXES['python:']}"
    assert own_job_reason(["dense", "qdrant:docs"]) == f"retriever qdrant:docs {OWN_JOB_PREFIXES['qdrant:']}"


def _install_lines(workflow: dict) -> dict[str, list[str]]:
    out = {}
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            if step.get("name", "").startswith("Install"):
                out[name] = step["run"].strip().splitlines()
                step["run"] = "INSTALL"
    return out


def test_the_python_job_is_the_examples_jobs_pinned_to_this_version_with_the_requirements():
    text = texts.python_job_workflow(version="1.2.3", branch="main", suite="default",
                                     requirements="-r requirements.txt")
    ours, example = yaml.safe_load(text), yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    installs = _install_lines(ours)
    _install_lines(example)
    assert ours == example  # every job, permission, step and input but the install lines
    assert installs["compare"][-1] == installs["baseline-eval"][-1] == \
        "python -m pip install retrieval-gate==1.2.3 -r requirements.txt"
    assert installs["baseline"][-1] == "python -m pip install retrieval-gate==1.2.3"  # none of the team's code
    assert text.startswith(texts.MARKER)


def test_branch_and_suite_are_yaml_scalars_never_pasted_yaml():
    text = texts.python_job_workflow(version="1.2.3", branch="on", suite="x: y", requirements=".")
    workflow = yaml.safe_load(text)
    assert workflow[True]["push"] == {"branches": ["on"]}  # YAML 1.1: the key `on` reads as True
    assert workflow["env"]["INPUT_SUITE"] == "x: y"


def test_plan_writes_the_python_job_as_the_one_workflow_without_a_pin():
    job = texts.python_job_workflow(version="1.2.3", branch="main", suite="default", requirements=".")
    steps = plan(suite="default", kb="kb", kb_kind="k", cases="c.jsonl", cases_kind="c", k=None, pin=None,
                 branch="main", existing={}, force=False, retriever="python:app.rag:search", python_job=job)
    by_path = {s.path: s for s in steps}
    assert by_path[CALLER].text == job and COMMENT not in by_path
    assert 'retriever: "python:app.rag:search"' in by_path[CONFIG].text
    assert yaml.safe_load(by_path[CONFIG].text)["suites"]["default"]["retriever"] == "python:app.rag:search"
