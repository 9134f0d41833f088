"""An HTTP server the test process runs on a thread of its own, on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

POLL_S = 0.05  # how often serve_forever checks for shutdown


class ServerThread:
    """Serves ``handler_for(port)`` on a free loopback port until ``close`` (or the
    ``with`` block ends); ``port`` is where (a handler may need it for the URLs it
    writes)."""

    def __init__(self, handler_for: Callable[[int], Any]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        self.port: int = self._server.server_address[1]
        self._server.RequestHandlerClass = handler_for(self.port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL_S,), daemon=True
        )
        self._thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving: the server thread this object started ends before this returns."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
