"""The PR subset: every non-empty cell keeps min(N, size) cases, adversarial and hard-class
cases first, deterministic for a seed, original order kept."""

from __future__ import annotations

import pytest

from retrieval_gate.audit.subset import stratified_subset
from retrieval_gate.models import Case


def c(id, kind="golden", locale="en-US", hard_class=None) -> Case:
    return Case(id=id, query=f"query {id}", gold=("a",), kind=kind, locale=locale, hard_class=hard_class)


CASES = [c("g1"), c("g2"), c("g3"), c("g4"), c("adv", kind="adversarial"), c("hard", hard_class="negation"),
         c("p1", locale="pt-BR"), c("p2", locale="pt-BR")]


@pytest.mark.parametrize(("per_cell", "expected_sizes"), [
    # cells: (adversarial, en-US) 1 · (golden, en-US) 5 · (golden, pt-BR) 2
    (1, [1, 1, 1]),
    (2, [1, 2, 2]),
    (10, [1, 5, 2]),
])
def test_every_cell_keeps_min_n_size(per_cell, expected_sizes):
    chosen, summary = stratified_subset(cases=CASES, by=["kind", "locale"], per_cell=per_cell, seed=0)
    assert [cell["kept"] for cell in summary["cells"]] == expected_sizes
    assert summary["n"] == len(chosen) == sum(expected_sizes) and summary["of"] == 8


def test_hard_classes_come_first_and_order_is_kept():
    chosen, _ = stratified_subset(cases=CASES, by=["locale"], per_cell=2, seed=0)
    # en-US cell: adversarial first, then the hard class; pt-BR: both
    assert [x.id for x in chosen] == ["adv", "hard", "p1", "p2"]


def test_same_seed_same_subset_and_seeds_differ():
    draws = {seed: tuple(x.id for x in stratified_subset(cases=CASES, by=["kind"], per_cell=2, seed=seed)[0])
             for seed in range(8)}
    again = tuple(x.id for x in stratified_subset(cases=list(reversed(CASES)), by=["kind"], per_cell=2, seed=3)[0])
    assert set(again) == set(draws[3])  # file order does not change the draw
    assert len(set(draws.values())) > 1


def test_per_cell_must_be_positive():
    with pytest.raises(ValueError):
        stratified_subset(cases=CASES, by=["kind"], per_cell=0, seed=0)


def test_hard_classes_take_turns():
    cell = [c("n1", hard_class="negation"), c("n2", hard_class="negation"), c("n3", hard_class="negation"),
            c("b1", hard_class="boilerplate"), c("plain")]
    for seed in range(5):
        chosen, _ = stratified_subset(cases=cell, by=["kind"], per_cell=2, seed=seed)
        assert sorted(x.hard_class for x in chosen) == ["boilerplate", "negation"]
    chosen, _ = stratified_subset(cases=[*cell, c("adv", kind="adversarial")], by=["locale"], per_cell=3, seed=0)
    assert {"adv", "b1"} <= {x.id for x in chosen} and "plain" not in {x.id for x in chosen}
