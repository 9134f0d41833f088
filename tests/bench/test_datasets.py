"""Datasets: exact token counts, range ratio, prefix sharing, seeded determinism, shards."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.datasets import Draw, PrefixRepetitionSpec, RandomSpec, Shard
from inferx_pipeline.tokens import default_tokenizer

TOK = default_tokenizer()


def _texts(requests: Sequence[Request]) -> list[object]:
    return [r.prompt for r in requests]


def test_random_prompts_have_exact_token_counts() -> None:
    plan = RandomSpec(input_len=300, output_len=50).plan(Draw(20, 2, seed=1), TOK, Shard())
    assert len(plan.requests) == 20
    assert len(plan.warmup_requests) == 2
    for r in plan.requests:
        assert isinstance(r.prompt, str)
        assert TOK.count(r.prompt) == r.prompt_len == 300
        assert r.max_tokens == 50


def test_same_seed_same_requests_other_seed_other_requests() -> None:
    spec = RandomSpec(input_len=64, output_len=8, range_ratio=0.5)
    a = spec.plan(Draw(10, 0, seed=7), TOK, Shard()).requests
    b = spec.plan(Draw(10, 0, seed=7), TOK, Shard()).requests
    c = spec.plan(Draw(10, 0, seed=8), TOK, Shard()).requests
    assert a == b
    assert _texts(a) != _texts(c)


def test_warmup_count_does_not_change_measured_requests() -> None:
    spec = RandomSpec(input_len=16, output_len=4)
    assert (
        spec.plan(Draw(5, 0, seed=3), TOK, Shard()).requests
        == spec.plan(Draw(5, 9, seed=3), TOK, Shard()).requests
    )


def test_range_ratio_bounds_lengths() -> None:
    plan = RandomSpec(input_len=100, output_len=100, range_ratio=0.25).plan(
        Draw(200, 0, seed=0), TOK, Shard()
    )
    ins = [r.prompt_len for r in plan.requests]
    outs = [r.max_tokens for r in plan.requests]
    assert min(ins) >= 75 and max(ins) <= 125
    assert min(outs) >= 75 and max(outs) <= 125
    assert len(set(ins)) > 10  # actually spread
    assert abs(sum(ins) / len(ins) - 100) < 5


def test_prefix_repetition_shares_prefixes() -> None:
    spec = PrefixRepetitionSpec(prefix_len=20, suffix_len=10, num_prefixes=3, output_len=5)
    plan = spec.plan(Draw(12, 0, seed=0), TOK, Shard())
    prefixes = {tuple(str(r.prompt).split()[:20]) for r in plan.requests}
    assert len(prefixes) == 3
    assert all(r.prompt_len == 30 == TOK.count(str(r.prompt)) for r in plan.requests)
    assert len({r.prompt for r in plan.requests}) == 12  # suffixes differ


def test_shards_partition_the_same_requests() -> None:
    spec = RandomSpec(input_len=8, output_len=2)
    whole = spec.plan(Draw(11, 0, seed=5), TOK, Shard()).requests
    parts = [spec.plan(Draw(11, 0, seed=5), TOK, Shard(i, 3)).requests for i in range(3)]
    merged = sorted((r for p in parts for r in p), key=lambda r: r.index)
    assert merged == list(whole)
    assert [len(p) for p in parts] == [4, 4, 3]


def test_extra_requests_continue_the_indices_and_shards_with_fresh_prompts() -> None:
    spec = PrefixRepetitionSpec(prefix_len=20, suffix_len=10, num_prefixes=3, output_len=5)
    whole = spec.plan(Draw(6, 0, seed=2), TOK, Shard())
    extra = list(itertools.islice(whole.extra, 6))
    assert [r.index for r in extra] == list(range(6, 12))
    assert not set(_texts(extra)) & set(_texts(whole.requests))  # not the planned again
    shared = {tuple(str(r.prompt).split()[:20]) for r in whole.requests}
    assert {tuple(str(r.prompt).split()[:20]) for r in extra} <= shared
    parts = [spec.plan(Draw(6, 0, seed=2), TOK, Shard(i, 2)).extra for i in range(2)]
    merged = sorted((r for p in parts for r in itertools.islice(p, 3)), key=lambda r: r.index)
    assert merged == extra
