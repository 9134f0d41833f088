"""Random prompt text of an exact token count, reproducible from a seed."""

from __future__ import annotations

import random

from inferx_pipeline.tokens import Tokenizer

# Re-encoding rounds before accepting a real tokenizer's off-by-a-few length (BPE merges
# across token boundaries settle in two or three rounds).
_FIT_ROUNDS = 16


def seeded(seed: int, *scope: object) -> random.Random:
    """A generator for one named stream of a run (string seeds hash deterministically)."""
    return random.Random(":".join([str(seed), *map(str, scope)]))


def random_text(rng: random.Random, length: int, tokenizer: Tokenizer) -> tuple[str, int]:
    """Text of ``length`` random vocabulary tokens and its measured token count.

    With the default word-level tokenizer the count is exact; with a real one the
    decoded text is re-encoded, then cut or topped up with random tokens, until it
    encodes to exactly ``length`` tokens (nearly, if merges never settle).
    """
    if length <= 0:
        return "", 0
    pool = tokenizer.stable_ids
    ids = [rng.choice(pool) for _ in range(length)]
    text = tokenizer.decode(ids)
    for _ in range(_FIT_ROUNDS):
        actual = tokenizer.encode(text)
        if len(actual) == length:
            return text, length
        missing = length - len(actual)
        actual = actual[:length] + [rng.choice(pool) for _ in range(missing)]
        text = tokenizer.decode(actual)
    return text, tokenizer.count(text)


def lengths(rng: random.Random, nominal: int, range_ratio: float, n: int) -> list[int]:
    """``n`` lengths uniform in [nominal x (1 - r), nominal x (1 + r)] (all ``nominal`` at r=0)."""
    low = max(1, int(nominal * (1 - range_ratio)))
    high = max(low, int(nominal * (1 + range_ratio)))
    return [rng.randint(low, high) for _ in range(n)]
