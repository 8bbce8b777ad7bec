"""Context precision against Ragas' own code, without an LLM.

Ragas (0.4.x) has two context-precision metrics that need no model:

- ``IDBasedContextPrecision`` (retrieved ids vs reference ids): relevant retrieved ÷ retrieved,
  over the *set* of retrieved ids — our ``context_precision_unweighted@k`` on the top k distinct
  cards;
- ``NonLLMContextPrecisionWithReference`` (retrieved texts vs reference texts, matched by a
  non-LLM similarity; here Ragas' own ``ExactMatch``, so a passage is relevant exactly when it
  is a reference passage): Ragas' position-weighted average precision, Σ precision@i · v_i over
  Σ v_i (+1e-10) — our ``context_precision@k``.

Both are computed by Ragas on seeded random rankings (cutoffs 1–20, rankings shorter than k,
none relevant) and compared with ``metrics.grid`` on the same de-duplicated top k.

Ragas pulls in langchain and friends, so it runs from its own virtual environment, with this
repository's ``src`` on the path:

    python -m venv /tmp/ragas && /tmp/ragas/bin/pip install ragas "langchain-community<0.4"
    PYTHONPATH=src /tmp/ragas/bin/python benchmarks/check_ragas.py

(``langchain-community`` 0.4 dropped a module ragas 0.4.3 imports at start-up.) Prints the
largest differences; exits 1 if one is above 1e-9.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import warnings

from retrieval_gate.metrics import metric_specs
from retrieval_gate.metrics.grid import grid_scores

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import ragas
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics import ExactMatch, IDBasedContextPrecision, NonLLMContextPrecisionWithReference


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    by_id = IDBasedContextPrecision()
    by_text = NonLLMContextPrecisionWithReference(distance_measure=ExactMatch())
    worst = {"context_precision": 0.0, "context_precision_unweighted": 0.0}
    compared = 0
    for _ in range(args.queries):
        pool = [f"passage {i}" for i in range(rng.randint(2, 60))]
        gold = set(rng.sample(pool, rng.randint(1, min(len(pool), 10))))
        ranked = rng.sample(pool, rng.randint(1, min(len(pool), 25)))  # distinct, as after de-duplication
        k = rng.choice([1, 2, 3, 5, 8, 10, 20])
        top = ranked[:k]
        ours = grid_scores(ranked, frozenset(gold), metric_specs((k,), measures=("context_precision",
                                                                                 "context_precision_unweighted")))
        theirs_unweighted = asyncio.run(by_id.single_turn_ascore(
            SingleTurnSample(retrieved_context_ids=top, reference_context_ids=sorted(gold))))
        theirs_weighted = asyncio.run(by_text.single_turn_ascore(
            SingleTurnSample(retrieved_contexts=top, reference_contexts=sorted(gold))))
        worst["context_precision_unweighted"] = max(worst["context_precision_unweighted"],
                                                    abs(ours[f"context_precision_unweighted@{k}"] - theirs_unweighted))
        worst["context_precision"] = max(worst["context_precision"],
                                         abs(ours[f"context_precision@{k}"] - theirs_weighted))
        compared += 1
    print(f"ragas {ragas.__version__}: {compared} random rankings")
    for name, diff in worst.items():
        print(f"  {name}@k: largest |ours − ragas| = {diff:.2e}")
    return 0 if max(worst.values()) <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
