"""Continuous batching: admission limits, chunked prefill, KV preemption, abort."""

from __future__ import annotations

from inferx_pipeline.sim.scheduler import BLOCK_TOKENS, Scheduler, SimRequest


def _never() -> int:
    return 0


def _sched(
    max_num_seqs: int = 4,
    max_num_batched_tokens: int = 1024,
    kv_capacity_tokens: int = 16_384,
    draft_tokens: int = 0,
) -> Scheduler:
    return Scheduler(max_num_seqs, max_num_batched_tokens, kv_capacity_tokens, draft_tokens)


def test_admission_stops_at_max_num_seqs() -> None:
    sched = _sched(max_num_seqs=2)
    for i in range(5):
        sched.add(SimRequest(str(i), 10, 5))
    plan = sched.schedule()
    assert [e.request.request_id for e in plan.entries] == ["0", "1"]
    assert len(sched.waiting) == 3


def test_long_prompt_is_prefilled_in_chunks_next_to_decodes() -> None:
    sched = _sched()
    short = SimRequest("short", 8, 10)
    sched.add(short)
    sched.complete(sched.schedule(), _never)  # prefill done: first token out
    sched.add(SimRequest("long", 3000, 10))
    plan = sched.schedule()
    queries = {e.request.request_id: (e.query, e.prefill) for e in plan.entries}
    assert queries == {"short": (1, False), "long": (1023, True)}
    assert plan.load.tokens == 1024
    emissions = sched.complete(plan, _never)
    assert [e.request.request_id for e in emissions] == ["short"]  # long still prefilling
    steps = 1
    while sched.running[1].prefilling:
        sched.complete(sched.schedule(), _never)
        steps += 1
    assert steps == 3  # 3000 tokens at <= 1023 per step


def test_admission_waits_for_kv_blocks() -> None:
    sched = _sched(
        kv_capacity_tokens=64 * BLOCK_TOKENS, max_num_seqs=10, max_num_batched_tokens=4096
    )
    for i in range(3):
        sched.add(SimRequest(str(i), 30 * BLOCK_TOKENS, 4))
    plan = sched.schedule()
    assert len(plan.entries) == 2  # the third prompt does not fit in the 4 blocks left
    assert sched.used_blocks == 60
    assert 0.9 < sched.kv_usage <= 1.0


def test_full_kv_preempts_the_newest_and_recomputes_it() -> None:
    sched = _sched(kv_capacity_tokens=6 * BLOCK_TOKENS)  # one fits, two do not
    first, second = (
        SimRequest("a", 2 * BLOCK_TOKENS - 1, 40),
        SimRequest("b", 2 * BLOCK_TOKENS - 1, 40),
    )
    sched.add(first)
    sched.add(second)
    finished: set[str] = set()
    for _ in range(400):
        plan = sched.schedule()
        if not plan.entries:
            break
        finished |= {e.request.request_id for e in sched.complete(plan, _never) if e.finished}
    assert sched.preemptions >= 1
    assert finished == {"a", "b"}
    assert sched.used_blocks == 0
    assert first.generated == second.generated == 40


def test_speculative_decode_schedules_k_plus_one_positions() -> None:
    sched = _sched(draft_tokens=3)
    req = SimRequest("s", 16, 10)
    sched.add(req)
    sched.complete(sched.schedule(), lambda: 3)
    plan = sched.schedule()
    assert plan.entries[0].query == 4
    assert plan.load.draft_seqs == 1
    emissions = sched.complete(plan, lambda: 2)
    assert (emissions[0].tokens, emissions[0].accepted, emissions[0].drafted) == (3, 2, True)
    assert req.generated == 4


def test_output_is_cut_at_max_tokens() -> None:
    sched = _sched(draft_tokens=3)
    req = SimRequest("s", 16, 3)
    sched.add(req)
    sched.complete(sched.schedule(), lambda: 3)
    emissions = sched.complete(sched.schedule(), lambda: 3)
    assert emissions[0].tokens == 2
    assert emissions[0].finished
    assert req.generated == 3


def test_abort_frees_blocks() -> None:
    sched = _sched()
    req = SimRequest("x", 100, 50)
    sched.add(req)
    sched.complete(sched.schedule(), _never)
    assert sched.used_blocks > 0
    sched.abort(req)
    assert sched.used_blocks == 0
    assert sched.idle
    assert not sched.schedule().entries
