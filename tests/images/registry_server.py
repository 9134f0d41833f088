"""A purpose-built Registry API v2 server for the client's tests (in-process, port 0).

It paginates tag lists the way the spec says (sorted, ``n``, ``last``, ``Link``), asks
for ``Basic`` or ``Bearer`` credentials on demand (serving its own token endpoint at
``/token``), and answers from an in-memory {repository: {tag: digest}} map or forwards
to an upstream registry (the real ``docker-registry`` fixture, which does not paginate).
Every request is recorded, so tests can assert what the client sent.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

Auth = Literal["none", "basic", "bearer", "negotiate"]
TOKEN = "tok-3f9a-never-print-me"  # a test token the client must never show


@dataclass
class Seen:
    """One request the server answered."""

    method: str
    path: str
    query: dict[str, str]
    authorization: str | None
    accept: str | None


@dataclass
class Behaviour:
    """What the server does; tests set it before the client runs."""

    images: dict[str, dict[str, str]] = field(default_factory=dict)
    upstream: str | None = None  # forward /v2/ reads to this registry instead of `images`
    auth: Auth = "none"
    username: str = "bench"
    password: str = "s3cret-pw"  # the password the client must never show
    paginate: bool = True
    digest_header: bool = True
    token_status: int = 200  # the token endpoint's answer to good credentials
    accept_token: bool = True  # False: the registry rejects the token its realm issued
    realm: str | None = None  # the Bearer realm to announce; None = this server's /token
    tags_body: bytes | None = None  # answer every tag list with this body instead
    link_to_self: bool = False  # a Link header that points back at the same page
    seen: list[Seen] = field(default_factory=list)


def _error(code: str, message: str) -> bytes:
    return json.dumps({"errors": [{"code": code, "message": message, "detail": {}}]}).encode()


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour
    base: str

    def log_message(self, format: str, *args: object) -> None:
        return  # keep pytest output clean

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        b = self.behaviour
        auth, accept = self.headers.get("Authorization"), self.headers.get("Accept")
        b.seen.append(Seen(method, split.path, query, auth, accept))
        if split.path == "/token":
            self._token(query)
        elif not self._authorized(query):
            self._challenge(split.path)
        elif split.path.endswith("/tags/list"):
            self._tags(split.path.removeprefix("/v2/").removesuffix("/tags/list"), query)
        elif "/manifests/" in split.path:
            name, _, ref = split.path.removeprefix("/v2/").partition("/manifests/")
            self._manifest(method, name, ref)
        else:
            self._send(404, _error("NOT_FOUND", "not found"))

    def _basic_ok(self) -> bool:
        b = self.behaviour
        want = base64.b64encode(f"{b.username}:{b.password}".encode()).decode()
        return self.headers.get("Authorization") == f"Basic {want}"

    def _authorized(self, query: dict[str, str]) -> bool:
        mode = self.behaviour.auth
        if mode == "basic":
            return self._basic_ok()
        if mode == "negotiate":
            return False
        if mode == "bearer":
            bearer = self.headers.get("Authorization") == f"Bearer {TOKEN}"
            return bearer and self.behaviour.accept_token
        return True

    def _challenge(self, path: str) -> None:
        name = path.removeprefix("/v2/").split("/tags/")[0].split("/manifests/")[0]
        b = self.behaviour
        if b.auth == "basic":
            header = 'Basic realm="test registry"'
        elif b.auth == "negotiate":
            header = "Negotiate"
        else:
            scope = f"repository:{name}:pull"
            realm = b.realm or f"{self.base}/token"
            header = f'Bearer realm="{realm}",service="test-registry",scope="{scope}"'
        body = _error("UNAUTHORIZED", "authentication required")
        self._send(401, body, {"WWW-Authenticate": header})

    def _token(self, query: dict[str, str]) -> None:
        if not self._basic_ok() or query.get("service") != "test-registry":
            self._send(401, json.dumps({"details": "incorrect username or password"}).encode())
            return
        status = self.behaviour.token_status
        body = {"token": TOKEN, "expires_in": 300} if status == 200 else {"details": "nope"}
        self._send(status, json.dumps(body).encode())

    def _all_tags(self, name: str) -> list[str] | None:
        b = self.behaviour
        if b.upstream is None:
            tags = b.images.get(name)
            return None if tags is None else list(tags)
        answer = requests.get(f"{b.upstream}/v2/{name}/tags/list", timeout=10)
        return answer.json()["tags"] if answer.status_code == 200 else None

    def _tags(self, name: str, query: dict[str, str]) -> None:
        if self.behaviour.tags_body is not None:
            self._send(200, self.behaviour.tags_body, {"Content-Type": "text/html"})
            return
        if self.behaviour.link_to_self:
            link = f"/v2/{name}/tags/list?n=1&last=x"
            self._send(200, b'{"tags": ["x"]}', {"Link": f'<{link}>; rel="next"'})
            return
        tags = self._all_tags(name)
        if tags is None:
            self._send(404, _error("NAME_UNKNOWN", "repository name not known to registry"))
            return
        tags = sorted(tags)
        headers: dict[str, str] = {}
        if self.behaviour.paginate and "n" in query:
            n = int(query["n"])
            after = [t for t in tags if "last" not in query or t > query["last"]]
            tags = after[:n]
            if len(after) > n:
                link = f"/v2/{name}/tags/list?{urlencode({'n': n, 'last': tags[-1]})}"
                headers["Link"] = f'<{link}>; rel="next"'
        self._send(200, json.dumps({"name": name, "tags": tags}).encode(), headers)

    def _digest(self, name: str, ref: str) -> str | None:
        b = self.behaviour
        if b.upstream is None:
            return b.images.get(name, {}).get(ref)
        answer = requests.head(
            f"{b.upstream}/v2/{name}/manifests/{ref}",
            headers={"Accept": self.headers.get("Accept", "")},
            timeout=10,
        )
        return answer.headers.get("Docker-Content-Digest") if answer.ok else None

    def _manifest(self, method: str, name: str, ref: str) -> None:
        digest = self._digest(name, ref)
        if digest is None:
            self._send(404, _error("MANIFEST_UNKNOWN", "manifest unknown"))
            return
        headers = {"Docker-Content-Digest": digest} if self.behaviour.digest_header else {}
        headers["Content-Type"] = "application/vnd.docker.distribution.manifest.v2+json"
        self._send(200, b"{}", headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {"Content-Type": "application/json", **(headers or {})}
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@contextmanager
def serving(behaviour: Behaviour) -> Iterator[str]:
    """Serve ``behaviour`` on 127.0.0.1 (a free port) in a thread; yield the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    server.RequestHandlerClass = type(
        "Handler", (_Handler,), {"behaviour": behaviour, "base": base}
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
