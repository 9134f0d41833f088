"""Acceptance draws: the solved per-position rate gives the exact target AL."""

from __future__ import annotations

import pytest

from inferx_pipeline.sim.speculative import (
    AcceptanceSampler,
    expected_accepted,
    solve_acceptance_rate,
)


@pytest.mark.parametrize(("al", "k"), [(1.5, 1), (2.0, 3), (2.6, 3), (3.4, 5), (1.01, 4)])
def test_solved_rate_has_the_exact_mean(al: float, k: int) -> None:
    rate = solve_acceptance_rate(al, k)
    assert 1 + expected_accepted(rate, k) == pytest.approx(al, abs=1e-9)


def test_sample_mean_matches_the_target() -> None:
    sampler = AcceptanceSampler(2.6, 3, seed=7)
    draws = [sampler.draw() for _ in range(40_000)]
    assert all(0 <= d <= 3 for d in draws)
    assert 1 + sum(draws) / len(draws) == pytest.approx(2.6, rel=0.01)


def test_edges_are_deterministic() -> None:
    never = AcceptanceSampler(1.0, 3, seed=1)
    always = AcceptanceSampler(4.0, 3, seed=1)
    assert {never.draw() for _ in range(200)} == {0}
    assert {always.draw() for _ in range(200)} == {3}


def test_same_seed_same_draws() -> None:
    first = AcceptanceSampler(2.2, 4, seed=3)
    second = AcceptanceSampler(2.2, 4, seed=3)
    assert [first.draw() for _ in range(100)] == [second.draw() for _ in range(100)]


@pytest.mark.parametrize(("al", "k"), [(0.9, 3), (4.5, 3), (2.0, 0)])
def test_impossible_targets_raise(al: float, k: int) -> None:
    with pytest.raises(ValueError, match="needs 1 <= AL <= k \\+ 1"):
        solve_acceptance_rate(al, k)
