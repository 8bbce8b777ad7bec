"""Where the vector store lives and how it searches (the suite's ``store:`` block)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StoreSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    path: str | None = None  # persistent: default .retrieval-gate/store
    host: str | None = None
    port: int | None = None
    # Search: True = exact (brute force over the stored vectors), False = the HNSW index,
    # None = auto: exact up to ``exact_max_chunks`` chunks (deterministic, and no index noise
    # can move a gate), HNSW above. 200,000: the cost curve (docs/performance.md) measured
    # where exact search stops paying for itself on a 2-core runner.
    exact: bool | None = None
    exact_max_chunks: int = Field(default=200_000, ge=0)
    ann_check: bool = False  # report the ANN's recall against exact search
    hnsw_construction_ef: int = 100
    hnsw_search_ef: int = 100
    hnsw_m: int = 16
    # One writer per store folder: how long a second eval waits for the first (store/folder.py).
    lock_timeout_s: float = Field(default=900.0, ge=0, allow_inf_nan=False)
