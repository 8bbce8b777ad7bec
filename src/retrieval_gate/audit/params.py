"""The audit's knobs, as plain data (the suite config's ``audit:`` section validates into this).

Near-duplicate detection (MinHash + LSH over word shingles, Broder 1997 / Indyk & Motwani 1998):

- ``shingle_size`` (default 3 words): smaller shingles make unrelated texts on one topic look
  alike (more **false merges**: two different refund cards flagged as twins); larger ones let a
  few edited words break many shingles (more **missed merges**: a lightly edited copy not found).
- ``num_perm`` (default 128): the number of hash permutations. The Jaccard estimate's standard
  error is about sqrt(J(1-J)/num_perm) (≈ 0.035 at J = 0.8 with 128); more permutations cost
  time and memory linearly.
- ``threshold`` (default 0.8, set for precision: a false merge corrupts gold): the Jaccard similarity above which
  two cards are one cluster. Lower it and more distinct-but-similar cards merge (false merges,
  which corrupt gold); raise it and edited copies slip through (missed merges). The LSH band
  layout is datasketch's optimum for this threshold, and every LSH candidate is checked against
  the MinHash estimate, so the reported clusters all estimate ≥ ``threshold``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class AuditParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # near-duplicate cards
    shingle_size: int = Field(default=3, ge=1, le=20)
    num_perm: int = Field(default=128, ge=16, le=1024)
    threshold: float = Field(default=0.8, gt=0.0, le=1.0)
    seed: int = Field(default=1, ge=0)
    # near-duplicate queries: character n-grams of the normalised query (queries are short)
    query_shingle_chars: int = Field(default=4, ge=2, le=20)
    query_threshold: float = Field(default=0.8, gt=0.0, le=1.0)
    # query leakage: a query of ≥ leak_min_words words whose word n-grams (shingle_size) are
    # found in one card at a share ≥ leak_containment (1.0 = verbatim)
    leak_min_words: int = Field(default=6, ge=1)
    leak_containment: float = Field(default=0.9, gt=0.0, le=1.0)
    # unwinnable cases: a gold card with fewer characters of text (stripped) than this
    min_card_chars: int = Field(default=20, ge=0)
    # coverage matrix: case fields (kind, locale, form, hard_class, split, tag.KEY) and the gold
    # cards' metadata (gold.KEY). None = kind, locale, and gold.doc_type / gold.section when
    # any card has them.
    coverage: tuple[str, ...] | None = None
    power: float = Field(default=0.8, gt=0.0, lt=1.0)
    # label completeness: how many review-queue entries the report keeps (all are counted)
    review_limit: int = Field(default=200, ge=0)

    @field_validator("coverage", mode="before")
    @classmethod
    def _fields(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in (p.strip() for p in value.split(",")) if v]
        if value is not None:
            if not value:
                raise ValueError("give at least one coverage field")
            for name in value:  # type: ignore[union-attr]
                if not isinstance(name, str) or not is_coverage_field(name):
                    raise ValueError(f"unknown coverage field {name!r} (known: kind, locale, form, "
                                     "hard_class, split, tag.KEY, gold.KEY)")
        return value


CASE_FIELDS = ("kind", "locale", "form", "hard_class", "split")


def is_coverage_field(name: str) -> bool:
    if name in CASE_FIELDS:
        return True
    return any(name.startswith(prefix) and len(name) > len(prefix) for prefix in ("tag.", "gold."))
