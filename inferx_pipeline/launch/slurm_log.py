"""A batch job's output file, streamed into the server log while the job runs.

``JobOutput`` follows ``slurm_job-<id>.out`` from a thread (the file appears when the job
starts), appends each complete line to the ``LogBuffer`` and records the replica lines
(``INFERX_SLURM_REPLICA rank=R node=N port=P``, see ``slurm_script``) and worker exit
lines (``INFERX_SLURM_WORKER_EXIT rank=R status=S``, see ``slurm_deploy``) it passes.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from inferx_pipeline.launch.base import LogBuffer
from inferx_pipeline.launch.slurm_script import EXIT_PREFIX, REPLICA_PREFIX

FOLLOW_POLL_S = 0.1
JOIN_S = 5.0
_REPLICA = re.compile(rf"{REPLICA_PREFIX} rank=(\d+) node=(\S+) port=(\d+)")
_EXIT = re.compile(rf"{EXIT_PREFIX} rank=(\d+) status=(\d+)")


class JobOutput:
    """Follows ``path`` into ``log`` until ``close()``; ``replicas`` maps rank -> (node, port)."""

    def __init__(self, path: Path, log: LogBuffer) -> None:
        self.path = path
        self.log = log
        self.replicas: dict[int, tuple[str, int]] = {}
        self.exits: dict[int, int] = {}  # a deployment's worker that ended -> its status
        self.seen = threading.Event()  # set at each new replica line
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=f"slurm-{path.name}", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not self.path.exists():
            if self._closing.wait(FOLLOW_POLL_S):
                return
        pending = ""
        with self.path.open(encoding="utf-8", errors="replace") as stream:
            while True:
                chunk = stream.read()
                if chunk:
                    pending = self._lines(pending + chunk)
                elif self._closing.is_set():
                    break
                else:
                    self._closing.wait(FOLLOW_POLL_S)
        if pending:
            self._line(pending)

    def _lines(self, text: str) -> str:
        *complete, rest = text.split("\n")
        for line in complete:
            self._line(line)
        return rest

    def _line(self, line: str) -> None:
        self.log.append(line)
        match = _REPLICA.search(line)
        if match:
            self.replicas[int(match[1])] = (match[2], int(match[3]))
            self.seen.set()
        elif match := _EXIT.search(line):
            self.exits[int(match[1])] = int(match[2])
            self.seen.set()

    def close(self) -> None:
        """Read what is left of the file, stop following, close the log (idempotent)."""
        self._closing.set()
        self._thread.join(JOIN_S)
        self.log.close()
