"""The fork-comment path's size budget: how large the files a fork's run uploads get with the size
of its KB, against the caps the privileged comment job reads them under (``publish/untrusted``:
``results.json`` 32 MiB, ``comparison.json`` 16 MiB).

For each KB size N (synthetic cards: ids like ``docs/section-012/article-000345``, 40-character
titles, 16-hex-digit content hashes as ``kb_manifest`` writes them): the KB manifest
(``baselines/<suite>.kb.json``, as ``dumps_manifest`` writes it), the manifest as it sits in
``results.json`` (``kb_cards``), and the comparison's ``kb_changes`` when the PR replaces every
card (N removed, N added: the worst case), each as the bytes ``dumps_json`` writes; then the
largest KB whose manifest fits the results cap.

Run: ``python benchmarks/bench_fork_budget.py [--sizes 1000,100000,1000000]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from retrieval_gate.compare.kb_changes import kb_diff
from retrieval_gate.files import dumps_json
from retrieval_gate.publish.untrusted import COMPARISON_MAX_BYTES, RESULTS_MAX_BYTES
from retrieval_gate.score.kb_manifest import KbCard, dumps_manifest


def manifest(n: int, *, salt: str) -> dict[str, KbCard]:
    cards = {}
    for i in range(n):
        card = f"docs/section-{i % 1000:03d}/article-{i:06d}{salt}"
        cards[card] = KbCard(sha=hashlib.sha256(f"{card} text".encode()).hexdigest()[:16],
                             title=f"How to do thing number {i:09d} in product")
    return cards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    args = parser.parse_args()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        before, after = manifest(n, salt=""), manifest(n, salt="-new")
        started = time.perf_counter()
        diff = kb_diff(before=before, after=after)
        diff_s = time.perf_counter() - started
        in_results = len(dumps_json({name: card.model_dump() for name, card in after.items()}).encode())
        rows.append({"cards": n, "manifest_bytes": len(dumps_manifest(after, suite="default").encode()),
                     "results_kb_cards_bytes": in_results,
                     "comparison_kb_changes_bytes": len(dumps_json(diff.model_dump(mode="json")).encode()),
                     "kb_diff_s": round(diff_s, 3)})
    per_card = rows[-1]["results_kb_cards_bytes"] / rows[-1]["cards"]
    print(json.dumps({"rows": rows, "results_cap_bytes": RESULTS_MAX_BYTES,
                      "comparison_cap_bytes": COMPARISON_MAX_BYTES,
                      "bytes_per_card_in_results": round(per_card, 1),
                      "largest_kb_within_results_cap": int(RESULTS_MAX_BYTES // per_card)}, indent=2))


if __name__ == "__main__":
    main()
