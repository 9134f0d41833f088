"""Session fixture for a real, private Slurm 22.05 cluster (controller + two nodes in namespaces).

``slurm_cluster`` installs Debian's Slurm when missing and starts the cluster of
``tests/services/slurm_cluster.py`` once per session (a file lock keeps two sessions on
one machine from sharing its addresses); each test finds every node idle and no job
queued, and leaves none behind. Nothing here skips: a cluster that cannot start
fails the tests that need it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.services.required import unavailable as required
from tests.services.slurm_cluster import Cluster, ClusterError, private_cluster

LOCK = Path("/var/tmp/inferx-slurm.lock")


def unavailable(reason: str) -> NoReturn:
    """Fail the test: the private Slurm cluster could not start."""
    required("the private Slurm cluster", reason)


@pytest.fixture(scope="session")
def slurm_session() -> Iterator[Cluster]:
    """The running cluster for the whole session, torn down by PID at its end."""
    if os.geteuid() != 0:
        unavailable("a private Slurm cluster needs root (network namespaces, mknod)")
    root = Path(tempfile.mkdtemp(prefix="inferx-slurm-"))
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with private_cluster(root) as cluster:
                yield cluster
        except ClusterError as err:
            unavailable(str(err))
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def slurm_cluster(slurm_session: Cluster) -> Iterator[Cluster]:
    """The session cluster, idle and empty before the test.

    Jobs a failed test left behind are cancelled afterwards, so the next test starts clean
    (tests that must leave no job assert it themselves).
    """
    slurm_session.wait_nodes_idle()
    assert slurm_session.active_jobs() == []
    yield slurm_session
    if leftover := slurm_session.active_jobs():
        slurm_session.run("scancel", *leftover)
