"""A launcher for other layers' tests: no process, no container, scriptable failures.

By default each start serves a trivial in-process HTTP endpoint on 127.0.0.1 (``/health``
and ``/metrics``); given ``base_url`` it wraps an existing server instead (e.g. the
simulator started in-process by a test). ``FakeScript`` makes it never turn healthy,
or "exit" after N seconds or N requests with a chosen code.

::

    launcher = FakeLauncher(FakeScript(exit_after_requests=3, exit_code=137))
    with launcher.start(spec) as server:
        server.wait_healthy()
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import mkdtemp

from pydantic import Field

from inferx_pipeline.launch.base import LogBuffer, ServerHandle, log_file
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.strict import FrozenModel


class FakeScript(FrozenModel):
    """What a fake server does; the defaults give a healthy server that never exits."""

    healthy: bool = Field(default=True, description="False: /health answers 503 forever.")
    exit_after_s: float | None = Field(
        default=None, ge=0, description="Exit this long after start."
    )
    exit_after_requests: int | None = Field(
        default=None,
        ge=0,
        description="Exit once this many requests were answered (in-process only).",
    )
    exit_code: int = Field(default=1, description="The exit status reported after exiting.")
    log_lines: tuple[str, ...] = Field(default=(), description="Lines the fake 'prints' at start.")


class _Endpoint:
    """The in-process server: answers until its request budget is spent."""

    def __init__(self, handle: FakeHandle) -> None:
        outer = handle

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if outer.exit_status() is not None:
                    self.close_connection = True
                    return
                outer.count_request()  # before answering: the caller sees the exit right after
                ok = self.path != "/health" or outer.script.healthy
                body = b"" if self.path == "/metrics" else b'{"ok": true}'
                self.send_response(200 if ok else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                outer.log.append("request " + format % args)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeHandle(ServerHandle):
    """A fake server; ``requests`` counts the requests it answered."""

    def __init__(
        self, spec: ServerSpec, script: FakeScript, log: LogBuffer, base_url: str | None
    ) -> None:
        super().__init__(spec, base_url or "", log)
        self.script = script
        self.requests = 0
        self.stopped = False
        self._exited: int | None = None
        self._lock = threading.Lock()
        self._endpoint = None if base_url else _Endpoint(self)
        if self._endpoint is not None:
            self.base_url = self._endpoint.url
        for line in script.log_lines:
            self.log.append(line)

    def count_request(self) -> None:
        with self._lock:
            self.requests += 1
            budget = self.script.exit_after_requests
            if budget is not None and self.requests >= budget:
                self._exit(f"fake: exiting after {self.requests} requests")

    def _exit(self, why: str) -> None:
        if self._exited is None:
            self._exited = self.script.exit_code
            self.log.append(why)

    def exit_status(self) -> int | None:
        after = self.script.exit_after_s
        if after is not None and time.monotonic() - self.started_at >= after:
            with self._lock:
                self._exit(f"fake: exiting after {after:g} s")
        return self._exited

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self._endpoint is not None:
            self._endpoint.close()
        self.log.close()


class FakeLauncher:
    """Starts fake servers and records every spec it was asked to start (``started``)."""

    def __init__(
        self,
        script: FakeScript | None = None,
        *,
        base_url: str | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self.script = script or FakeScript()
        self.base_url = base_url
        self.log_dir = log_dir or Path(mkdtemp(prefix="inferx-fake-logs-"))
        self.started: list[ServerSpec] = []
        self.handles: list[FakeHandle] = []

    def start(self, spec: ServerSpec) -> FakeHandle:
        """A running fake server for ``spec`` (never raises)."""
        self.started.append(spec)
        handle = FakeHandle(
            spec, self.script, LogBuffer(log_file(self.log_dir, spec)), self.base_url
        )
        self.handles.append(handle)
        return handle


class FakeProbeRunner:
    """A preflight ``ProbeRunner`` answering from a table: argv -> (exit code, output).

    An argv not in the table exits 127 (as a missing program would); ``runs`` counts calls.
    """

    def __init__(
        self, outputs: dict[tuple[str, ...], tuple[int, str]], digest: str = "sha256:fake"
    ) -> None:
        self.outputs = outputs
        self.image_digest = digest
        self.runs = 0

    def digest(self, image: str) -> str:
        return self.image_digest

    def run(self, image: str, argv: tuple[str, ...], timeout_s: float) -> tuple[int, str]:
        self.runs += 1
        return self.outputs.get(argv, (127, ""))
