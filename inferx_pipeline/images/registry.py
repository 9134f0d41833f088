"""Image registries over the Registry HTTP API v2: tags of a repository, digests of tags.

``RegistryClient`` is the seam (``tags``, ``digest``); ``HttpRegistry`` speaks the API with
``requests``; ``FakeRegistry`` (``images/fake.py``) is the in-memory one for tests.
``Registries`` picks the client for an ``ImageRef`` from a ``RegistryConfig``
(``images/config.py``: a registry host -> base URL, so ``docker.io`` names can be served
by a mirror such as ``http://127.0.0.1:5000``, and the environment variables holding its
credentials).

The API, as used here:

- ``GET /v2/<name>/tags/list?n=<page>`` follows ``Link: <...>; rel="next"`` until there is
  none (registries without pagination return every tag at once);
- ``HEAD /v2/<name>/manifests/<tag>`` with Accept for the OCI index and manifest and the
  Docker manifest list and v2 manifest; the digest is ``Docker-Content-Digest``;
- a 401 with ``WWW-Authenticate: Bearer realm=...,service=...,scope=...`` fetches a token
  from the realm (with basic credentials when configured) and retries once; tokens are
  kept per scope. A ``Basic`` challenge retries with the configured credentials.

Credentials are read from the named environment variables when a registry first asks for
them. Passwords and tokens never appear in messages, logs or reprs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urljoin

import requests

from inferx_pipeline.errors import RegistryError
from inferx_pipeline.images.config import RegistryConfig, RegistryHost
from inferx_pipeline.images.refs import ImageRef

# RegistryConfig and RegistryHost live in images/config.py; imported from here too.
__all__ = [
    "MANIFEST_TYPES",
    "HttpRegistry",
    "Registries",
    "RegistryClient",
    "RegistryConfig",
    "RegistryHost",
]

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
REDACTED = "<redacted>"

_ADVICE = {
    401: "check the credentials named in the registry config (or that the repository is public)",
    403: "the credentials lack pull access to this repository; check them or the name",
    404: "check the repository name and tag, and that they exist on this registry",
    429: "the registry is rate limiting: retry later or configure credentials",
}
_PARAM = re.compile(r'([A-Za-z_]+)=(?:"([^"]*)"|([^,\s]*))')


class RegistryClient(Protocol):
    """Reads one registry: the tags of a repository and the digest a tag points at."""

    def tags(self, repository: str) -> list[str]:
        """Every tag of ``repository`` (a path such as ``vllm/vllm-openai``), registry order."""
        ...

    def digest(self, repository: str, tag: str) -> str:
        """The content digest (``sha256:...``) that ``repository:tag`` points at now."""
        ...


@dataclass(frozen=True, slots=True)
class _Challenge:
    scheme: str
    params: dict[str, str]


def _challenge(header: str) -> _Challenge:
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): m.group(2) or m.group(3) or "" for m in _PARAM.finditer(rest)}
    return _Challenge(scheme.lower(), params)


def _registry_says(response: requests.Response) -> str:
    """The registry's own error text: ``errors[].message`` (with codes) or the body's start."""
    try:
        doc = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:200] if text else "(no body)"
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if isinstance(errors, list) and errors:
        parts = [
            f"{e.get('code', '?')}: {e.get('message', '')}".strip()
            if isinstance(e, dict)
            else str(e)
            for e in errors
        ]
        return "; ".join(parts)
    if isinstance(doc, dict) and "details" in doc:  # token servers answer {"details": ...}
        return str(doc["details"])
    return str(doc)[:200]


class HttpRegistry:
    """A Registry HTTP API v2 client for one registry (see the module doc).

    ``environ`` is where credential variables are looked up (default ``os.environ``, read
    when the registry first asks for credentials). Not thread-safe: one per thread.
    """

    def __init__(
        self,
        registry: str,
        config: RegistryConfig | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._config = config if config is not None else RegistryConfig()
        self.registry = registry
        self.base_url = self._config.base_url(registry)
        self._host = self._config.host(registry)
        self._environ = environ
        self._session = requests.Session()
        self._tokens: dict[str, str] = {}
        self._basic = False

    def __repr__(self) -> str:
        return f"HttpRegistry({self.registry!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._session.close()

    def tags(self, repository: str) -> list[str]:
        """Every tag of ``repository``, following ``Link`` pages; RegistryError on failure."""
        url: str | None = f"{self.base_url}/v2/{repository}/tags/list"
        params: dict[str, str] | None = {"n": str(self._config.page_size)}
        seen: list[str] = []
        tags: list[str] = []
        while url is not None:
            if len(seen) >= self._config.max_pages or url in seen:
                raise RegistryError(
                    f"GET {url}: the tag list of {repository} did not end after {len(seen)} "
                    f"pages; expected a Link chain that ends; raise max_pages or report the "
                    "registry's pagination loop"
                )
            seen.append(url)
            response = self._send("GET", url, repository, params=params)
            tags.extend(self._page_tags(response, repository))
            link = response.links.get("next", {}).get("url")
            url = urljoin(response.url, link) if link else None
            params = None  # the Link URL carries n and last
        return tags

    def _page_tags(self, response: requests.Response, repository: str) -> list[str]:
        try:
            doc = response.json()
            tags = doc.get("tags") or []
            if not all(isinstance(t, str) for t in tags):
                raise TypeError("tags is not a list of strings")
        except (ValueError, AttributeError, TypeError) as err:
            raise RegistryError(
                f"GET {response.url}: HTTP {response.status_code} but the body is not a tag "
                f'list ({err}); expected JSON {{"name": "{repository}", "tags": [...]}}; check '
                "that the URL is a Registry API v2 endpoint"
            ) from err
        return list(tags)

    def digest(self, repository: str, tag: str) -> str:
        """``Docker-Content-Digest`` of ``repository:tag`` (HEAD); RegistryError on failure."""
        url = f"{self.base_url}/v2/{repository}/manifests/{tag}"
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        response = self._send("HEAD", url, repository, headers=headers)
        digest = response.headers.get("Docker-Content-Digest")
        if not digest:
            raise RegistryError(
                f"HEAD {url}: HTTP {response.status_code} without a Docker-Content-Digest "
                "header; expected the manifest's digest there; this registry does not "
                "implement the Registry API v2 digest header"
            )
        return digest

    def _send(
        self,
        method: str,
        url: str,
        repository: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> requests.Response:
        scope = f"repository:{repository}:pull"
        response = self._request(method, url, scope, params, headers)
        if response.status_code == 401:
            self._authenticate(response, url, scope)
            response = self._request(method, url, scope, params, headers)
        if response.status_code >= 400:
            self._raise(method, url, repository, response, params, headers)
        return response

    def _request(
        self,
        method: str,
        url: str,
        scope: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> requests.Response:
        send_headers = dict(headers or {})
        auth: tuple[str, str] | None = None
        if scope in self._tokens:
            send_headers["Authorization"] = f"Bearer {self._tokens[scope]}"
        elif self._basic:
            auth = self._credentials(url)
        try:
            return self._session.request(
                method,
                url,
                params=params,
                headers=send_headers,
                auth=auth,
                timeout=self._config.timeout_s,
                allow_redirects=True,
            )
        except requests.RequestException as err:
            raise RegistryError(
                f"{method} {url}: no answer from {self.registry} ({type(err).__name__}: "
                f"{self._redact(str(err))}); expected a Registry API v2 server at "
                f"{self.base_url}; check the URL in the registry config and that it is up"
            ) from err

    def _raise(
        self,
        method: str,
        url: str,
        repository: str,
        response: requests.Response,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        if method == "HEAD":  # a HEAD answer has no body: ask again for the registry's words
            response = self._request("GET", url, f"repository:{repository}:pull", params, headers)
        status = response.status_code
        advice = _ADVICE.get(status, "the registry failed; retry later" if status >= 500 else "")
        raise RegistryError(
            f"{method} {url}: HTTP {status}: {self._redact(_registry_says(response))}; "
            f"expected {repository} on {self.registry} (served by {self.base_url})"
            + (f"; {advice}" if advice else "")
        )

    def _authenticate(self, response: requests.Response, url: str, scope: str) -> None:
        challenge = _challenge(response.headers.get("WWW-Authenticate", ""))
        if challenge.scheme == "bearer" and "realm" in challenge.params:
            self._tokens[scope] = self._fetch_token(challenge, scope)
        elif challenge.scheme == "basic":
            if self._host.username_env is None:
                raise RegistryError(
                    f"GET {url}: HTTP 401: {self.registry} asks for basic credentials and "
                    f"none are configured; set username_env and password_env for "
                    f"{self.registry} in the registry config"
                )
            self._basic = True
        else:
            raise RegistryError(
                f"GET {url}: HTTP 401 with challenge {challenge.scheme or '(none)'!r}; "
                "expected WWW-Authenticate Bearer realm=... or Basic; this client cannot "
                "authenticate to that registry"
            )

    def _fetch_token(self, challenge: _Challenge, scope: str) -> str:
        realm = challenge.params["realm"]
        query = {"service": challenge.params.get("service", ""), "scope": scope}
        if "scope" in challenge.params:
            query["scope"] = challenge.params["scope"]
        auth = self._credentials(realm) if self._host.username_env is not None else None
        try:
            answer = self._session.get(
                realm, params=query, auth=auth, timeout=self._config.timeout_s
            )
        except requests.RequestException as err:
            raise RegistryError(
                f"GET {realm}: no answer from the token server of {self.registry} "
                f"({type(err).__name__}); check that the realm is reachable from here"
            ) from err
        token = self._token_of(answer)
        if token is None:
            raise RegistryError(
                f"GET {realm}: HTTP {answer.status_code}: "
                f"{self._redact(_registry_says(answer))}; expected a JSON token for {scope}; "
                + _ADVICE.get(answer.status_code, "check the token server and the credentials")
            )
        return token

    @staticmethod
    def _token_of(answer: requests.Response) -> str | None:
        if answer.status_code != 200:
            return None
        try:
            doc: Any = answer.json()
        except ValueError:
            return None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        return token if isinstance(token, str) and token else None

    def _credentials(self, where: str) -> tuple[str, str]:
        # Called only when username_env and password_env are configured (both or neither).
        environ = self._environ if self._environ is not None else os.environ
        names = (str(self._host.username_env), str(self._host.password_env))
        missing = [name for name in names if not environ.get(name)]
        if missing:
            raise RegistryError(
                f"{where}: {self.registry} asks for credentials but environment variable(s) "
                f"{', '.join(missing)} are unset; export them or remove username_env/"
                "password_env from the registry config"
            )
        return environ[names[0]], environ[names[1]]

    def _redact(self, text: str) -> str:
        """``text`` with every token and the configured password replaced."""
        environ = self._environ if self._environ is not None else os.environ
        secrets = list(self._tokens.values())
        if self._host.password_env is not None and environ.get(self._host.password_env):
            secrets.append(environ[self._host.password_env])
        for secret in secrets:
            text = text.replace(secret, REDACTED)
        return text


class Registries:
    """The client for each registry host, built on first use from a ``RegistryConfig``.

    ``clients`` fixes the client for some hosts (a ``FakeRegistry`` in tests).
    """

    def __init__(
        self,
        config: RegistryConfig | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        clients: Mapping[str, RegistryClient] | None = None,
    ) -> None:
        self._config = config if config is not None else RegistryConfig()
        self._environ = environ
        self._clients: dict[str, RegistryClient] = dict(clients or {})
        self._built: list[HttpRegistry] = []

    def client_for(self, ref: ImageRef) -> RegistryClient:
        """The client serving ``ref``'s registry host."""
        client = self._clients.get(ref.registry)
        if client is None:
            http = HttpRegistry(ref.registry, self._config, environ=self._environ)
            self._built.append(http)
            self._clients[ref.registry] = client = http
        return client

    def close(self) -> None:
        """Close every HTTP client built here."""
        for http in self._built:
            http.close()
