"""Grouping jobs by server identity: one group per server, ascending concurrency."""

from __future__ import annotations

import pytest

from inferx_pipeline.errors import MatrixError
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.groups import group_jobs
from tests.engines.jobs import recipe_jobs


def test_minimax_seed_has_five_servers_each_ascending() -> None:
    jobs = recipe_jobs("minimaxm3-fp8-mi325x-vllm-agentic-mtp")
    groups = group_jobs(reversed(jobs))
    assert len(jobs) == 23 and len(groups) == 5
    assert sorted(len(g.jobs) for g in groups) == [3, 5, 5, 5, 5]
    for group in groups:
        assert list(group.concurrencies) == sorted(group.concurrencies)
        assert group.spec_job.conc == max(group.concurrencies)
        assert {j.server_key for j in group.jobs} == {group.server_key}


def test_the_same_point_twice_is_an_error(seed_jobs: list[BenchmarkJob]) -> None:
    first = seed_jobs[0]
    with pytest.raises(MatrixError) as err:
        group_jobs([first, first])
    assert str(err.value) == (
        f"jobs {first.job_id} and {first.job_id} are the same point "
        f"(server {first.server_key[:12]}, conc {first.conc}); select each once"
    )
