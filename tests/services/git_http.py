"""A real git repository served over HTTP on 127.0.0.1, with pull request heads like GitHub's.

::

    with ServedRepo(tmp_path) as served:          # git identity isolated (tests.gittools)
        base = served.commit({"recipes/a.yaml": "a: 1\\n"})
        served.branch("add-b", start=base)
        head = served.commit({"recipes/b.yaml": "b: 1\\n"}, branch="add-b")
        served.publish_pull(12, "add-b")          # refs/pull/12/head -> head
        WatchedRepo(served.url, mirror_dir=...).fetch_ref("refs/pull/12/head", ...)

The served repository is bare; a work tree beside it takes the commits and pushes them
(on the filesystem) to ``refs/heads/<branch>``, and ``publish_pull`` pushes a branch to
``refs/pull/<n>/head`` (forced, so publishing again after a rewrite is a force-push).

HTTP is git's own smart protocol: a threaded Python server runs ``git http-backend`` (the
CGI that ships with git) once per request with the CGI environment and the request body on
stdin. Where git lacks http-backend (``smart=None``, the default), or with ``smart=False``,
the same repository is served by git's dumb protocol instead: static files kept current by
``git update-server-info``; ``smart`` says which one runs. Each request's method and path (without
query) is recorded in ``seen``. The server runs in a thread of this process, stopped by
``close`` (or leaving the ``with``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from tests.gittools import Work
from tests.services.http_thread import ServerThread

BACKEND_TIMEOUT_S = 60.0


def http_backend() -> Path | None:
    """The ``git-http-backend`` program of the git on PATH, None when that git lacks it."""
    exec_path = subprocess.run(
        ["git", "--exec-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    backend = Path(exec_path) / "git-http-backend"
    return backend if os.access(backend, os.X_OK) else None


class _SmartHandler(BaseHTTPRequestHandler):
    """Runs ``git http-backend`` for each request, as a web server runs a CGI program."""

    root: Path
    backend: Path
    seen: list[str]

    def log_message(self, format: str, *args: object) -> None:
        return  # keep pytest output clean

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # git sends requests larger than http.postBuffer (1 MiB) chunked.
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF after each chunk
        self.rfile.readline()  # the CRLF after the last, empty chunk
        return b"".join(chunks)

    def _environ(self, body: bytes) -> dict[str, str]:
        split = urlsplit(self.path)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": self.request_version,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": split.path,
            "QUERY_STRING": split.query,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
        }
        # The other headers as HTTP_*: Git-Protocol (v2) and Content-Encoding (gzip) matter.
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if name.lower() not in ("content-type", "content-length"):
                env[key] = value
        return env

    def _cgi(self) -> None:
        self.seen.append(f"{self.command} {urlsplit(self.path).path}")
        body = self._body()
        done = subprocess.run(
            [str(self.backend)],
            input=body,
            env=self._environ(body),
            capture_output=True,
            timeout=BACKEND_TIMEOUT_S,
            check=False,
        )
        head, crlf, payload = done.stdout.partition(b"\r\n\r\n")
        if not crlf:  # a CGI program may end its headers with bare newlines
            head, _, payload = done.stdout.partition(b"\n\n")
        headers = [line.split(":", 1) for line in head.decode("latin-1").splitlines() if line]
        status = next((v.strip() for k, v in headers if k.lower() == "status"), "200 OK")
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason or None)
        for key, value in headers:
            if key.lower() != "status":
                self.send_header(key, value.strip())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _DumbHandler(SimpleHTTPRequestHandler):
    seen: list[str]

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.seen.append(f"GET {urlsplit(self.path).path}")
        super().do_GET()


class ServedRepo(ServerThread):
    """A bare repository ``repo.git`` under ``root``, served on 127.0.0.1 (module doc).

    ``url`` is its clone URL. Commits are made in ``work`` (a ``tests.gittools.Work`` on
    ``main``); the caller isolates git's identity and configuration first.
    """

    def __init__(self, root: Path, *, smart: bool | None = None) -> None:
        backend = http_backend()
        if smart and backend is None:
            raise RuntimeError("git-http-backend is not in `git --exec-path`; use smart=None")
        self.bare = root / "repo.git"
        self.work = Work(root / "work")
        self.seen: list[str] = []
        subprocess.run(["git", "init", "-q", "--bare", str(self.bare)], check=True)
        handler = self._handler(root, backend if smart is not False else None)
        super().__init__(lambda _port: handler)
        self.url = f"http://127.0.0.1:{self.port}/repo.git"

    def _handler(self, root: Path, backend: Path | None) -> Callable[..., BaseHTTPRequestHandler]:
        self.smart = backend is not None
        if backend is not None:
            attrs = {"root": root, "backend": backend, "seen": self.seen}
            return type("Handler", (_SmartHandler,), attrs)
        handler = type("Handler", (_DumbHandler,), {"seen": self.seen})
        return partial(handler, directory=str(root))

    def branch(self, name: str, start: str = "main") -> None:
        """Point branch ``name`` of the work tree at ``start`` (created or moved) and check it
        out; the next ``commit(branch=name)`` builds on ``start``. Not pushed until then."""
        self.work.git("checkout", "-q", "-B", name, start)

    def commit(
        self, files: dict[str, str | None], message: str = "change", *, branch: str = "main"
    ) -> str:
        """Commit ``files`` (None deletes) on ``branch`` and push it to the served repository
        (forced); return the new SHA."""
        if self.work.git("symbolic-ref", "--short", "HEAD") != branch:
            self.work.git("checkout", "-q", branch)
        sha = self.work.commit(files, message)
        self._push(f"+{branch}:refs/heads/{branch}")
        return sha

    def publish_pull(self, number: int, branch: str) -> str:
        """Push ``branch`` to ``refs/pull/<number>/head`` (forced, as a PR update); its SHA."""
        self._push(f"+{branch}:refs/pull/{number}/head")
        return self.work.git("rev-parse", branch)

    def ref(self, name: str) -> str | None:
        """The SHA ``name`` points at in the served repository; None when there is none."""
        done = subprocess.run(
            ["git", "-C", str(self.bare), "rev-parse", "--verify", "--quiet", name],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None

    def _push(self, refspec: str) -> None:
        self.work.git("push", "-q", str(self.bare), refspec)
        # The dumb protocol reads info/refs, which only this rewrites.
        subprocess.run(["git", "-C", str(self.bare), "update-server-info"], check=True)
