"""A private two-node Slurm 22.05 cluster: munge, slurmctld, and one slurmd per network namespace.

::

    with private_cluster(Path(tmp)) as cluster:      # installs Debian's slurm-wlm if missing
        cluster.run("sbatch", "--parsable", "--wrap", "hostname")
        cluster.kill_node("node2")                    # its slurmd and jobs, by PID: NODE_FAIL

The controller and munge run in the root namespace on 10.200.0.1 (a bridge this module
creates); each node is a namespace with a veth on that bridge (10.200.0.11, .12) and its
own hostname and ``/etc/hosts`` (``nsenter --net`` + ``unshare -m -u``: ``ip netns exec``
remounts /sys and slurmd dies). GPUs are faked as character devices so gres binding and
``CUDA_VISIBLE_DEVICES`` are real. Timers are short (``SlurmdTimeout=5``, ``KillWait=2``)
so node failures and cancellations land in seconds. Everything is torn down by PID; the
veths, namespaces and bridge are deleted by their names, which only this module uses.
(How this was found by hand: ``deploy/slurm.md``.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge", "slurmrestd")
SBIN = "/usr/sbin:/usr/bin:/sbin:/bin"
SUBNET = "10.200.0"
BRIDGE = "ixslurm0"
CTLD_PORT = 16817
SLURMD_PORT = 16818
PARTITION = "gpu"
CLUSTER_NAME = "inferx-test"
GPUS_PER_NODE = 2
READY_DEADLINE_S = 30.0
STOP_GRACE_S = 10.0
POLL_S = 0.2


class ClusterError(RuntimeError):
    """The private cluster could not be installed, started or queried."""


@dataclass(frozen=True)
class Node:
    """One compute node: its Slurm name, address and network namespace."""

    name: str
    addr: str

    @property
    def netns(self) -> str:
        return f"ixslurm-{self.name}"

    @property
    def veth(self) -> str:
        return f"ixs-{self.name}"


NODES = (Node("node1", f"{SUBNET}.11"), Node("node2", f"{SUBNET}.12"))


def installed() -> bool:
    return all(shutil.which(p, path=SBIN) for p in ("slurmctld", "slurmd", "munged", "sbatch"))


def install() -> None:
    """``apt-get install`` the Slurm packages when missing; ClusterError when that fails."""
    if installed():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env={**os.environ, "PATH": SBIN}
    )
    if check and done.returncode != 0:
        raise ClusterError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done


def slurm_conf(root: Path, controller: str) -> str:
    """The cluster's slurm.conf (pure): private paths, short timers, fake-GPU gres."""
    state = root / "state"
    nodes = "\n".join(
        f"NodeName={n.name} NodeAddr={n.addr} CPUs=2 RealMemory=1000 Gres=gpu:{GPUS_PER_NODE}"
        for n in NODES
    )
    node_names = ",".join(n.name for n in NODES)
    return f"""\
ClusterName={CLUSTER_NAME}
SlurmctldHost={controller}({SUBNET}.1)
SlurmctldPort={CTLD_PORT}
SlurmdPort={SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/spool/%n
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=5
MessageTimeout=3
TCPTimeout=2
KillWait=2
InactiveLimit=0
MinJobAge=300
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
SlurmdParameters=config_overrides
GresTypes=gpu
{nodes}
PartitionName={PARTITION} Nodes={node_names} Default=YES MaxTime=INFINITE State=UP
"""


def gres_conf(root: Path) -> str:
    return f"Name=gpu File={root}/dev/nvidia[0-{GPUS_PER_NODE - 1}]\n"


def hosts_file(controller: str) -> str:
    lines = ["127.0.0.1 localhost", f"{SUBNET}.1 {controller}"]
    return "\n".join(lines + [f"{n.addr} {n.name}" for n in NODES]) + "\n"


@dataclass
class Cluster:
    """A running private cluster; ``env`` is what a Slurm client needs (``SLURM_CONF``)."""

    root: Path
    conf: Path
    partition: str = PARTITION
    nodes: tuple[Node, ...] = NODES
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        """A Slurm client command's stdout; ClusterError when it fails."""
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, env={**os.environ, **self.env}
        )
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def active_jobs(self) -> list[str]:
        """Ids of jobs pending, running or completing (what a plain ``squeue`` lists)."""
        return self.run("squeue", "-h", "-o", "%i").split()

    def node_state(self, name: str) -> str:
        """``scontrol``'s State of node ``name``, e.g. IDLE, MIXED, DOWN+NOT_RESPONDING."""
        fields = self.run("scontrol", "-o", "show", "node", name).split()
        return next(f.split("=", 1)[1] for f in fields if f.startswith("State="))

    def wait_nodes_idle(self, deadline_s: float = READY_DEADLINE_S) -> None:
        """Poll until every node is idle (registered, no jobs); ClusterError at the deadline."""
        deadline = time.monotonic() + deadline_s
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            try:
                states = {n.name: self.node_state(n.name) for n in self.nodes}
            except ClusterError as err:
                states = {"sinfo": str(err)}
            if all(state == "IDLE" for state in states.values()):
                return
            time.sleep(POLL_S)  # polling sinfo, bounded by the deadline
        raise ClusterError(f"nodes not idle after {deadline_s:g} s: {states}; see {self.root}/log")

    def start_node(self, node: Node) -> None:
        """Start ``node``'s slurmd in its namespace, with its own hostname and hosts file."""
        script = (
            f"hostname {node.name} && mount --bind {self.root}/hosts /etc/hosts && "
            f"exec slurmd -D -N {node.name} -f {self.conf}"
        )
        argv = ["nsenter", f"--net=/run/netns/{node.netns}", "unshare", "-m", "-u"]
        argv += ["--propagation", "private", "sh", "-c", script]
        self.daemons[node.name] = _spawn(argv, self.root / "log" / f"{node.name}.out")

    def kill_node(self, name: str) -> None:
        """Kill ``name``'s slurmd and every process in its namespace (a dead node), by PID."""
        node = next(n for n in self.nodes if n.name == name)
        proc = self.daemons.pop(name)
        proc.kill()
        proc.wait(STOP_GRACE_S)
        _kill_netns_processes(node.netns)

    def restart_node(self, name: str) -> None:
        """Start a killed node again and wait until every node is idle."""
        self.start_node(next(n for n in self.nodes if n.name == name))
        self.wait_nodes_idle()


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PATH": SBIN},
            start_new_session=True,
        )


def _kill_netns_processes(netns: str) -> None:
    done = _sh("ip", "netns", "pids", netns, check=False)
    for pid in done.stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _remove_network() -> None:
    # Names only this module uses: leftovers of a crashed session are ours to delete.
    for node in NODES:
        if Path(f"/run/netns/{node.netns}").exists():
            _kill_netns_processes(node.netns)
        _sh("ip", "link", "del", node.veth, check=False)
        _sh("ip", "netns", "del", node.netns, check=False)
    _sh("ip", "link", "del", BRIDGE, check=False)


def _create_network() -> None:
    _sh("ip", "link", "add", BRIDGE, "type", "bridge")
    _sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
    _sh("ip", "link", "set", BRIDGE, "up")
    for node in NODES:
        _sh("ip", "netns", "add", node.netns)
        _sh("ip", "link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns",
            node.netns)  # fmt: skip
        _sh("ip", "link", "set", node.veth, "master", BRIDGE, "up")
        inside = ("ip", "-n", node.netns)
        _sh(*inside, "addr", "add", f"{node.addr}/24", "dev", "eth0")
        _sh(*inside, "link", "set", "eth0", "up")
        _sh(*inside, "link", "set", "lo", "up")


def _write_files(root: Path, controller: str) -> Path:
    for sub in ("munge", "log", "state/ctld", "state/spool", "dev", "etc"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o755)
    for index in range(GPUS_PER_NODE):
        os.mknod(root / "dev" / f"nvidia{index}", 0o666 | 0o020000, os.makedev(195, index))
    conf = root / "etc" / "slurm.conf"
    conf.write_text(slurm_conf(root, controller))
    (root / "etc" / "gres.conf").write_text(gres_conf(root))
    (root / "hosts").write_text(hosts_file(controller))
    return conf


def _start_munge(cluster: Cluster) -> None:
    munge = cluster.root / "munge"
    _sh("mungekey", "-c", "-k", str(munge / "munge.key"))
    (munge / "munge.key").chmod(0o600)
    argv = ["munged", "-F", "--force", f"--key-file={munge}/munge.key"]
    argv += [f"--socket={munge}/munge.socket", f"--pid-file={munge}/munged.pid"]
    argv += [f"--log-file={cluster.root}/log/munged.log", f"--seed-file={munge}/munge.seed"]
    cluster.daemons["munged"] = _spawn(argv, cluster.root / "log" / "munged.out")
    deadline = time.monotonic() + READY_DEADLINE_S
    while not (munge / "munge.socket").exists():
        if time.monotonic() > deadline or cluster.daemons["munged"].poll() is not None:
            raise ClusterError(f"munged did not start; see {cluster.root}/log/munged.log")
        time.sleep(POLL_S)  # polling for the socket, bounded by the deadline


def _stop(cluster: Cluster) -> None:
    for name in [n.name for n in cluster.nodes if n.name in cluster.daemons]:
        _stop_process(cluster.daemons.pop(name))
    for name in ("slurmctld", "munged"):
        if name in cluster.daemons:
            _stop_process(cluster.daemons.pop(name))


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_GRACE_S)


@contextlib.contextmanager
def private_cluster(root: Path) -> Iterator[Cluster]:
    """Install (if needed), start, and finally tear down the cluster; files under ``root``."""
    install()
    controller = socket.gethostname().split(".")[0]
    _remove_network()
    cluster = Cluster(root=root, conf=_write_files(root, controller))
    try:
        _create_network()
        _start_munge(cluster)
        argv = ["slurmctld", "-D", "-c", "-f", str(cluster.conf)]
        cluster.daemons["slurmctld"] = _spawn(argv, root / "log" / "slurmctld.out")
        for node in cluster.nodes:
            cluster.start_node(node)
        cluster.wait_nodes_idle()
        yield cluster
    finally:
        _stop(cluster)
        _remove_network()
