"""Whether a server of the test's process groups is answering a request right now.

A signal sent then lands inside a point's measurement (the bench client's event loop),
not between points: the case where the client must cut the point cleanly.
"""

from __future__ import annotations

from collections.abc import Iterable

import psutil

from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.ownership import group_members

RUNNING = "vllm:num_requests_running"


def _ports(pgid: int) -> list[int]:
    ports = []
    for pid in group_members(pgid):
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:  # ended while we looked
            continue
        ports += [c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN]
    return ports


def in_flight(pgids: Iterable[int]) -> bool:
    """Whether a server in process groups ``pgids`` has a request running (its /metrics)."""
    for pgid in pgids:
        for port in _ports(pgid):
            try:
                running = scrape(f"http://127.0.0.1:{port}", timeout_s=1.0).get(RUNNING)
            except EndpointError:  # not its HTTP port, or going away
                continue
            if running:
                return True
    return False
