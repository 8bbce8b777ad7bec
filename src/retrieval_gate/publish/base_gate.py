"""The gate a pull request is judged by comes from its base, not from the pull request.

Under ``pull_request`` the checkout is the PR's: it may edit ``retrieval-gate.yml`` like any other
file. The *eval* settings (model, retriever, chunking, k, KB, cases) are what the PR proposes and
are taken from its checkout (the comparison's "not like-for-like" notice covers a change). The
*gate* settings — ``gate.*`` (which rows are judged, their tolerances and floors, whether a
regression fails), ``baseline`` (which file the PR is compared with) and ``headline_k`` (which
rows are the headline) — are read from the config file **at the ref the run compares with** (the
PR's base sha; a dispatch's ``base_ref``) through the contents API, and applied to the PR. A
change to them is listed in the comment and applies after merge. The suite's ``audit:`` section
(what the golden-set audit flags, ``publish.audit_step``) is taken from the base too: the PR's
findings are diffed with the base's audit, made with those settings.

Pure except for nothing: the caller fetches the base's text and passes it in.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.metrics import headline_k_problem
from retrieval_gate.publish.action_settings import ActionSettings, baseline_repo_path
from retrieval_gate.publish.untrusted import CONFIG_MAX_BYTES
from retrieval_gate.render.escape import md_text
from retrieval_gate.settings import SuiteConfig, parse_config


@dataclass(frozen=True)
class Change:
    key: str  # e.g. gate.fail_on_regression, gate.max_drop.hit@5, baseline
    base: str  # the value at the base (applies now), as JSON text; "(not set)" when absent
    proposed: str  # the PR's value (applies after merge)


@dataclass(frozen=True)
class JudgedBy:
    """The settings a run is judged by: the PR's eval settings with the base's gate."""

    suite_config: SuiteConfig
    baseline_path: str
    changes: tuple[Change, ...]
    notes: tuple[str, ...]  # what of the base could not be applied, and why
    base_has_config: bool
    config_path: str  # the config file's path in the repository


def config_path_of(settings: ActionSettings) -> str:
    """The config's repository path; a config outside the repository has no base to be read at."""
    if settings.config_repo_path is None:
        raise UsageError(f"config {settings.inputs.config}: outside the repository; the pr and comment modes read "
                         "the gate settings at the base commit, so the config must be a file of the repository")
    return settings.config_repo_path


def base_suite(text: str | None, *, settings: ActionSettings, ref: str) -> SuiteConfig | None:
    """The suite as the base's config file defines it (None when the base has no config file or
    no such suite: the defaults apply, as they would after merge for a new file or suite).
    Size-capped and alias-free like any config; header references are not resolved (only the
    gate part of it is used)."""
    if text is None:
        return None
    source = Path(f"{config_path_of(settings)}@{ref[:12]}")
    if len(text.encode("utf-8")) > CONFIG_MAX_BYTES:
        raise InputError(Problem(str(source), None, f"the base's config is over the {CONFIG_MAX_BYTES} byte cap"))
    config = parse_config(text, source=source)
    suite = config.suites.get(settings.inputs.suite)
    if suite is None:
        return None
    if suite.baseline and not posixpath.isabs(suite.baseline):
        folder = posixpath.dirname(config_path_of(settings))
        suite = suite.model_copy(update={"baseline": posixpath.join(folder, suite.baseline) if folder
                                         else suite.baseline})
    return suite


def judged_by(*, settings: ActionSettings, base: SuiteConfig | None, base_has_config: bool,
              proposed: SuiteConfig | None = None) -> JudgedBy:
    """The PR's suite config (``proposed``, else the checkout's) with the base's protected
    settings (the ``fail_on_regression`` input, part of the workflow, still overrides both); the
    changes the PR proposes to them."""
    override = settings.inputs.fail_on_regression
    if proposed is None:
        pr, pr_path = settings.suite_config, settings.baseline_path
    else:
        pr = proposed if override is None else proposed.model_copy(
            update={"gate": proposed.gate.model_copy(update={"fail_on_regression": override})})
        pr_path = baseline_repo_path(suite_config=pr, inputs=settings.inputs, workspace=settings.workspace)
    reference = base or SuiteConfig()
    gate = reference.gate
    if override is not None:
        gate = gate.model_copy(update={"fail_on_regression": override})
    notes: list[str] = []
    headline_k = reference.headline_k
    if headline_k_problem(headline_k=headline_k, k=pr.k):
        notes.append(f"the base's headline_k {headline_k} is not one of this PR's cutoffs k {list(pr.k)}, "
                     f"so the PR's headline_k ({pr.headline_k or 'default'}) is used")
        headline_k = pr.headline_k
    effective = pr.model_copy(update={"gate": gate, "baseline": reference.baseline, "headline_k": headline_k,
                                      "audit": reference.audit})
    base_path = baseline_repo_path(suite_config=effective, inputs=settings.inputs, workspace=settings.workspace)
    changes = _changes(base=_protected(effective, base_path), proposed=_protected(pr, pr_path))
    return JudgedBy(suite_config=effective, baseline_path=base_path, changes=tuple(changes), notes=tuple(notes),
                    base_has_config=base_has_config, config_path=config_path_of(settings))


def _protected(config: SuiteConfig, baseline_path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"baseline": baseline_path, "headline_k": config.headline_k}
    for key, value in config.gate.model_dump(mode="json").items():
        if isinstance(value, dict):
            for sub, item in value.items():
                out[f"gate.{key}.{sub}"] = item
        else:
            out[f"gate.{key}"] = value
    return out


def _changes(*, base: dict[str, Any], proposed: dict[str, Any]) -> list[Change]:
    out = []
    for key in sorted(set(base) | set(proposed)):
        old, new = base.get(key, _MISSING), proposed.get(key, _MISSING)
        if old != new:
            out.append(Change(key=key, base=_text(old), proposed=_text(new)))
    return out


_MISSING = object()


def _text(value: Any) -> str:
    if value is _MISSING or value is None:
        return "(not set)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def change_note(judged: JudgedBy, *, suite: str) -> str:
    """The comment's notice (Markdown; every value escaped) when the PR changes the gate."""
    if not judged.changes and not judged.notes:
        return ""
    lines = []
    if judged.changes:
        lines += [f"> ⚠️ **This pull request changes the gate settings** of suite {md_text(suite)} in "
                  f"{md_text(judged.config_path)}. This run is judged with the base's settings; the change applies "
                  "after merge.", ">",
                  "> | setting | base (applies now) | this PR (after merge) |", "> |:--|:--|:--|"]
        lines += [f"> | {md_text(c.key)} | {md_text(c.base)} | {md_text(c.proposed)} |" for c in judged.changes]
    for note in judged.notes:
        lines.append(f"> ⚠️ {md_text(note)}")
    return "\n".join(lines) + "\n\n"


def change_lines(judged: JudgedBy) -> list[str]:
    """The same, as plain log lines."""
    out = [f"{judged.config_path}: this PR changes {c.key}: {c.base} → {c.proposed} (applies after merge; judged with "
           "the base's value)" for c in judged.changes]
    return out + list(judged.notes)
