"""The judgement a reviewer downloads (one line of ``labels.jsonl``, from the HTML report's queue or
the labelling page of a draft). Pure; the file is read by ``golden.labels_file``.

A decision: ``{"case", "card", "grade", "sha", "at"}`` and an optional ``"labeller"``; grade 0 =
not relevant, ≥ 1 = relevant at that grade. The drafting page (``cases draft``) also writes
``{"case", "no_answer": true}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Decision(BaseModel):
    """A reviewer's judgement of one card for one case. The grade is a JSON integer (``true`` or
    ``1.5`` is no grade); fields a newer page adds are ignored."""

    model_config = ConfigDict(extra="ignore")

    case: str = Field(min_length=1)
    card: str = Field(min_length=1)
    grade: int = Field(ge=0, le=100)
    sha: str = Field(min_length=1)
    at: str = ""
    labeller: str = ""

    @field_validator("grade", mode="before")
    @classmethod
    def _integer(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer grade (0 not relevant, 1 or more relevant), not "
                             f"{json.dumps(value)[:40]}")
        return value


class NoAnswer(BaseModel):
    """A labeller's word that no card of the KB answers a drafted query (``n`` on the labelling
    page): the query becomes a case with empty gold."""

    model_config = ConfigDict(extra="ignore")

    case: str = Field(min_length=1)
    no_answer: Literal[True]
    at: str = ""
    labeller: str = ""


def not_relevant_lines(decisions: Sequence[Decision]) -> str:
    """The sidecar's new lines: one JSON object per "not relevant" decision."""
    return "".join(json.dumps({"case": d.case, "card": d.card, "sha": d.sha, "at": d.at}, ensure_ascii=False,
                              sort_keys=True) + "\n" for d in decisions)
