"""Serve a built site directory over HTTP on 127.0.0.1 (never another interface)."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from inferx_pipeline.errors import LeaderboardError

HOST = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        # Request lines would drown the one line the CLI prints; errors still raise.
        return


class SiteServer:
    """A static file server for ``directory`` on 127.0.0.1:``port`` (0 = a free port).

    Use as a context manager to serve from a background thread (tests), or call
    ``serve_forever`` to block (the CLI). Raises LeaderboardError when the directory has no
    ``index.html`` or the port is taken.
    """

    def __init__(self, directory: Path, port: int = 0) -> None:
        if not (directory / "index.html").is_file():
            raise LeaderboardError(
                f"{directory}: no index.html; build the site first with `inferx leaderboard build`"
            )
        handler = functools.partial(_QuietHandler, directory=str(directory))
        try:
            self._httpd = ThreadingHTTPServer((HOST, port), handler)
        except OSError as err:
            raise LeaderboardError(
                f"{HOST}:{port}: cannot listen: {err.strerror}; "
                "pass another --port, or 0 for a free one"
            ) from err
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/``."""
        return f"http://{HOST}:{self._httpd.server_address[1]}/"

    def serve_forever(self) -> None:
        """Block serving requests until interrupted; the socket is closed on the way out."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> SiteServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
