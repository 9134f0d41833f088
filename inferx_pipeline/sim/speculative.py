"""Speculative-decoding acceptance draws with an exact target acceptance length.

Each of the k draft positions is accepted with probability ``p`` while all before it
were (a truncated geometric), so ``E[A] = p + p^2 + ... + p^k``. ``p`` is solved so that
``E[A] + 1`` equals the target AL exactly; draws come from a seeded RNG.
"""

from __future__ import annotations

import random

_BISECTION_STEPS = 100


def expected_accepted(p: float, k: int) -> float:
    """E[A] of the truncated geometric with per-position acceptance ``p`` over ``k`` drafts."""
    return sum(p**i for i in range(1, k + 1))


def solve_acceptance_rate(acceptance_length: float, k: int) -> float:
    """The per-position rate ``p`` with ``1 + E[A] == acceptance_length``.

    Raises ValueError unless ``1 <= acceptance_length <= k + 1``.
    """
    target = acceptance_length - 1.0
    if k < 1 or not 0.0 <= target <= k:
        raise ValueError(f"acceptance length {acceptance_length} needs 1 <= AL <= k + 1 (k={k})")
    low, high = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):  # E[A] is increasing in p
        mid = (low + high) / 2.0
        if expected_accepted(mid, k) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


class AcceptanceSampler:
    """Draws the accepted draft count A in 0..k for each verify step."""

    def __init__(self, acceptance_length: float, k: int, seed: int) -> None:
        self.k = k
        self.rate = solve_acceptance_rate(acceptance_length, k)
        self._rng = random.Random(seed)

    def draw(self) -> int:
        """Accepted draft tokens of one verify step (the step emits this + 1 tokens)."""
        accepted = 0
        while accepted < self.k and self._rng.random() < self.rate:
            accepted += 1
        return accepted
