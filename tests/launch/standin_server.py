"""A tiny stand-in engine for launcher tests: /health, a listening line, scriptable exits.

Run as a script (``python standin_server.py --port 0``) or, in containers that only
have python3, as ``python3 -c SOURCE ...`` (``SOURCE`` below is this file's text).
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import sys
import threading
import time
from pathlib import Path

SOURCE = Path(__file__).read_text() if "__file__" in globals() else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--load-time-s", type=float, default=0.0)
    parser.add_argument("--exit-after-s", type=float, default=None)
    parser.add_argument("--exit-code", type=int, default=3)
    parser.add_argument("--show-env", action="append", default=[])
    args = parser.parse_args()
    ready_at = time.monotonic() + args.load_time_s

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/health" and time.monotonic() >= ready_at
            self.send_response(200 if ok else 503)
            self.end_headers()
            self.wfile.write(b"ok" if ok else b"loading")

        def log_message(self, fmt: str, *a: object) -> None:
            print("request " + fmt % a, flush=True)

    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    for name in args.show_env:
        print(f"env {name}={'set' if os.environ.get(name) else 'unset'}", flush=True)
    print("standin: loading model", flush=True)
    print(f"INFERX_SIM_LISTENING http://{args.host}:{server.server_address[1]}", flush=True)
    if args.exit_after_s is not None:

        def leave() -> None:
            print(f"standin: exiting with {args.exit_code}", flush=True)
            os._exit(args.exit_code)

        threading.Timer(args.exit_after_s, leave).start()

    def on_term(signum: int, frame: object) -> None:
        print("standin: SIGTERM, shutting down", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    server.serve_forever()


if __name__ == "__main__":
    main()
