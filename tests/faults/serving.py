"""Whether a server of the test's process groups is answering a request right now.

A signal sent then lands inside a point's measurement (the bench client's event loop),
not between points: the case where the client must cut the point cleanly.
"""

from __future__ import annotations

from collections.abc import Iterable

import docker
import psutil

from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.ownership import group_members

RUNNING = "vllm:num_requests_running"


def _ports(pgid: int) -> list[int]:
    processes = []
    for pid in group_members(pgid):
        try:
            processes.append(psutil.Process(pid))
        except psutil.Error:  # ended while we looked
            continue
    return _listening(processes)


def _listening(processes: Iterable[psutil.Process]) -> list[int]:
    ports = []
    for process in processes:
        try:
            connections = process.net_connections(kind="tcp")
        except psutil.Error:  # ended while we looked
            continue
        ports += [c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN]
    return ports


def in_flight(pgids: Iterable[int]) -> bool:
    """Whether a server in process groups ``pgids`` has a request running (its /metrics)."""
    return _any_running(port for pgid in pgids for port in _ports(pgid))


def _any_running(ports: Iterable[int]) -> bool:
    for port in ports:
        try:
            running = scrape(f"http://127.0.0.1:{port}", timeout_s=1.0).get(RUNNING)
        except EndpointError:  # not its HTTP port, or going away
            continue
        if running:
            return True
    return False


def container_in_flight(client: docker.DockerClient, label: str) -> bool:
    """Whether a server in a running container labelled ``label`` has a request running:
    scraped on the ports it publishes, or (host network) on those its processes listen on."""
    ports = []
    for summary in client.api.containers(filters={"label": label}):
        published = [b["PublicPort"] for b in summary.get("Ports") or [] if b.get("PublicPort")]
        if published:
            ports += published
            continue
        try:
            root = psutil.Process(client.api.inspect_container(summary["Id"])["State"]["Pid"])
            ports += _listening([root, *root.children(recursive=True)])
        except (docker.errors.NotFound, psutil.Error):  # gone while we looked
            continue
    return _any_running(ports)
