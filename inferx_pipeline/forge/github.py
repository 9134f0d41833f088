"""GitHub's REST API v3 as a ``Forge``: pull requests, commits and PR comments of one repository.

::

    forge = GitHubForge.from_url("git@github.com:org/recipes.git")   # api.github.com
    forge = GitHubForge("https://ghe.example.com/api/v3", "org", "recipes", token_env="GHE_TOKEN")
    for pull in forge.open_pulls():
        print(pull.number, pull.head_sha, pull.labels)
    forge.comment(12, "measured: ...")                                 # needs the token

The endpoints, as used here (``{o}/{r}`` the owner and repository):

- ``GET /repos/{o}/{r}/pulls?state=open&per_page=100`` following ``Link: <...>; rel="next"``
  (GitHub's next page may be spelled ``/repositories/<id>/pulls?...``: followed as given,
  but only on the API's own host, so the token never leaves it);
- ``GET /repos/{o}/{r}/pulls/{n}``, ``GET /repos/{o}/{r}/commits/{sha}``;
- ``GET`` and ``POST /repos/{o}/{r}/issues/{n}/comments`` (a PR's conversation is an issue's),
  ``PATCH /repos/{o}/{r}/issues/comments/{id}``.

The token is read from the environment variable ``token_env`` at each call, sent as
``Authorization: Bearer`` only when set (public repositories read anonymously, at a lower
rate limit); posting without it is a ForgeError before any request. A ForgeError names
the method, the path, the HTTP status and GitHub's ``message``; the token never appears
in it, even when a server echoes it back.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Self, TypeVar
from urllib.parse import urlencode, urlsplit

import requests

from inferx_pipeline.errors import ForgeError
from inferx_pipeline.forge.models import Comment, Commit, PullRequest
from inferx_pipeline.gitrepo import redact_url

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_TIMEOUT_S = 30.0
PAGE_SIZE = 100  # GitHub's largest page
MAX_PAGES = 100  # 10,000 PRs at 100 a page: a Link chain longer than that is a loop
REDACTED = "<redacted>"
_T = TypeVar("_T")

_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "inferx-pipeline",
}
_REPO_URL = re.compile(
    r"""^(?:
        (?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/
      | [^@/\s]+@(?P<scp_host>[^:/\s]+):      # scp-like: git@github.com:org/repo.git
    )(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+?)(?:\.git)?/?$""",
    re.VERBOSE,
)
_OWNER_REPO = re.compile(r"^(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)$")


def _api_for(host: str) -> str:
    # GitHub Enterprise Server serves its REST API under /api/v3 of its own host.
    return DEFAULT_API_URL if host in ("github.com", "www.github.com") else f"https://{host}/api/v3"


def _github_says(response: requests.Response) -> str:
    """GitHub's ``message`` (with its ``errors`` details, as a 422 gives), or the body's start."""
    try:
        doc = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:200] if text else "(no body)"
    if not isinstance(doc, dict) or "message" not in doc:
        return str(doc)[:200]
    details = [
        str(e.get("message") or e.get("code") or e) if isinstance(e, dict) else str(e)
        for e in doc.get("errors") or []
    ]
    return str(doc["message"]) + (f" ({'; '.join(details)})" if details else "")


def _retry_when(response: requests.Response) -> str | None:
    """When a rate-limited answer (403 or 429) says to retry; None when it is not one."""
    if response.status_code not in (403, 429):
        return None
    headers = response.headers
    if "Retry-After" in headers:  # secondary limits: seconds to wait
        return f"retry in {headers['Retry-After']} s"
    if headers.get("X-RateLimit-Remaining") == "0":
        reset = headers.get("X-RateLimit-Reset", "")
        if reset.isdigit():
            at = datetime.fromtimestamp(int(reset), UTC)
            return f"retry after {at:%Y-%m-%dT%H:%M:%SZ} (when the limit resets)"
        return "retry after the rate limit resets (in at most an hour)"
    return None


class GitHubForge:
    """One repository on GitHub (or GitHub Enterprise Server) through its REST API v3.

    ``api_url`` is the API base (``https://api.github.com``; ``https://HOST/api/v3`` for
    Enterprise). ``environ`` is where ``token_env`` is looked up, at each call (default
    ``os.environ``). ``session`` is closed by ``close`` only when this object made it.
    """

    def __init__(
        self,
        api_url: str,
        owner: str,
        repo: str,
        *,
        token_env: str = "GITHUB_TOKEN",
        environ: Mapping[str, str] | None = None,
        session: requests.Session | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.owner = owner
        self.repo = repo
        self.token_env = token_env
        self.timeout_s = timeout_s
        self.page_size = page_size
        self._environ = environ
        self._own_session = session is None
        self._session = session if session is not None else requests.Session()
        self._prefix = f"/repos/{owner}/{repo}"

    @classmethod
    def from_url(cls, url: str, *, api_url: str | None = None, **options: Any) -> Self:
        """The forge of a repository named by its URL (https, ssh or ``git@host:o/r``) or
        ``OWNER/NAME``. ``api_url`` defaults to api.github.com for github.com and to
        ``https://HOST/api/v3`` for another host; ``options`` go to the constructor.
        """
        match = _REPO_URL.match(url.strip())
        plain = _OWNER_REPO.match(url.strip())
        if match is not None:
            host = match.group("host") or match.group("scp_host")
            default_api = _api_for(host)
        elif plain is not None:
            match, default_api = plain, DEFAULT_API_URL
        else:
            raise ForgeError(
                f"repository URL {redact_url(url)!r}: cannot tell the owner and repository; "
                "expected https://github.com/OWNER/NAME, git@github.com:OWNER/NAME.git or "
                "OWNER/NAME"
            )
        return cls(api_url or default_api, match.group("owner"), match.group("repo"), **options)

    def __repr__(self) -> str:
        return f"GitHubForge({self.api_url!r}, {self.owner!r}, {self.repo!r})"

    def close(self) -> None:
        """Close the connection pool (only a session this object made)."""
        if self._own_session:
            self._session.close()

    def has_token(self) -> bool:
        """Whether ``token_env`` is set now: without it reads are anonymous and writes refused."""
        return self._token() is not None

    def pull_ref(self, number: int) -> str:
        """``refs/pull/<n>/head``: GitHub keeps every PR's head there, forks' included."""
        return f"refs/pull/{number}/head"

    def open_pulls(self) -> list[PullRequest]:
        """Every open PR, oldest page first as GitHub orders them (newest PR first)."""
        path = f"{self._prefix}/pulls"
        query = {"state": "open", "per_page": str(self.page_size)}
        return [
            self._parse("GET", path, PullRequest.from_github, item)
            for item in self._pages(path, query)
        ]

    def pull(self, number: int) -> PullRequest:
        """PR ``number`` whatever its state; ForgeError (HTTP 404) when there is none."""
        path = f"{self._prefix}/pulls/{number}"
        return self._parse("GET", path, PullRequest.from_github, self._json("GET", path))

    def commit(self, sha: str) -> Commit:
        """Commit ``sha`` (a full or abbreviated SHA, or a ref name)."""
        path = f"{self._prefix}/commits/{sha}"
        return self._parse("GET", path, Commit.from_github, self._json("GET", path))

    def comments(self, number: int) -> list[Comment]:
        """Every comment on PR ``number``'s conversation, oldest first (all pages)."""
        path = f"{self._prefix}/issues/{number}/comments"
        return [
            self._parse("GET", path, Comment.from_github, item)
            for item in self._pages(path, {"per_page": str(self.page_size)})
        ]

    def comment(self, number: int, body: str) -> Comment:
        """Post a new comment on PR ``number`` (each call posts one); needs the token."""
        path = f"{self._prefix}/issues/{number}/comments"
        answer = self._json("POST", path, body={"body": body})
        return self._parse("POST", path, Comment.from_github, answer)

    def update_comment(self, comment_id: int, body: str) -> Comment:
        """Replace comment ``comment_id``'s body (idempotent); needs the token."""
        path = f"{self._prefix}/issues/comments/{comment_id}"
        answer = self._json("PATCH", path, body={"body": body})
        return self._parse("PATCH", path, Comment.from_github, answer)

    def _pages(self, path: str, query: dict[str, str]) -> Iterator[Any]:
        """The items of every page of a list, following ``Link: rel="next"``."""
        url: str | None = f"{self.api_url}{path}?{urlencode(query)}"
        seen: set[str] = set()
        while url is not None:
            where = self._path_of(url)
            if len(seen) >= MAX_PAGES or url in seen:
                raise ForgeError(
                    f"GET {where}: the list did not end after {len(seen)} pages; expected a "
                    "Link chain that ends; report the forge's pagination loop"
                )
            seen.add(url)
            response = self._send("GET", url, where)
            page = self._decode("GET", where, response)
            if not isinstance(page, list):
                raise ForgeError(
                    f"GET {where}: HTTP {response.status_code} but the body is not a JSON list "
                    f"({self._redact(str(page)[:100])}); expected a page of items; check api_url"
                )
            yield from page
            url = self._next_page(where, response)  # carries the query

    def _next_page(self, where: str, response: requests.Response) -> str | None:
        link: str | None = response.links.get("next", {}).get("url")
        if link is None:
            return None
        if urlsplit(link).netloc != urlsplit(self.api_url).netloc:
            # Following it would send the token to another host.
            raise ForgeError(
                f"GET {where}: the next page is on another host ({urlsplit(link).netloc}); "
                f"expected a Link under {self.api_url}; check api_url"
            )
        return link

    def _path_of(self, url: str) -> str:
        split = urlsplit(url)
        path = split.path.removeprefix(urlsplit(self.api_url).path)
        return path + (f"?{split.query}" if split.query else "")

    def _json(self, method: str, path: str, *, body: dict[str, str] | None = None) -> Any:
        response = self._send(method, self.api_url + path, path, body=body)
        return self._decode(method, path, response)

    def _decode(self, method: str, path: str, response: requests.Response) -> Any:
        try:
            return response.json()
        except ValueError as err:
            raise ForgeError(
                f"{method} {path}: HTTP {response.status_code} but the body is not JSON "
                f"({self._redact(response.text[:100])!r}); expected GitHub's REST API v3; "
                "check api_url"
            ) from err

    def _parse(
        self, method: str, path: str, build: Callable[[Mapping[str, Any]], _T], payload: Any
    ) -> _T:
        with self._where(method, path):
            if not isinstance(payload, Mapping):
                raise ForgeError(f"got {str(payload)[:100]!r}; expected a JSON object")
            return build(payload)

    @contextlib.contextmanager
    def _where(self, method: str, path: str) -> Iterator[None]:
        try:
            yield
        except ForgeError as err:
            raise ForgeError(f"{method} {path}: {self._redact(str(err))}") from err

    def _token(self) -> str | None:
        environ = self._environ if self._environ is not None else os.environ
        return environ.get(self.token_env) or None

    def _send(
        self,
        method: str,
        url: str,
        where: str,
        *,
        body: dict[str, str] | None = None,
    ) -> requests.Response:
        token = self._token()
        if token is None and method != "GET":
            raise ForgeError(
                f"{method} {where}: no token to write with; set the environment variable "
                f"{self.token_env} to a token that may write pull request comments on "
                f"{self.owner}/{self.repo}"
            )
        headers = dict(_HEADERS)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = self._session.request(
                method, url, json=body, headers=headers, timeout=self.timeout_s
            )
        except requests.RequestException as err:
            raise ForgeError(
                f"{method} {where}: no answer from {self.api_url} ({type(err).__name__}: "
                f"{self._redact(str(err))}); check api_url and that the forge is reachable"
            ) from err
        if response.status_code >= 400:
            raise ForgeError(self._refusal(method, where, response, token is not None))
        return response

    def _refusal(
        self, method: str, where: str, response: requests.Response, authenticated: bool
    ) -> str:
        status = response.status_code
        retry = _retry_when(response)
        if retry is not None:
            more = "" if authenticated else f"; set {self.token_env} for a higher limit"
            advice = f"GitHub is rate limiting this client: {retry}{more}"
        elif status == 401:
            advice = f"the token in {self.token_env} is invalid or expired; replace it"
        elif status in (403, 404):
            # GitHub answers 404, not 403, for a private repository the caller cannot see.
            access = (
                f"the token in {self.token_env} may access it"
                if authenticated
                else f"the repository is public (or set {self.token_env})"
            )
            advice = f"check {self.owner}/{self.repo} and the number, and that {access}"
        elif status == 422:
            advice = "GitHub refused the content; check what was sent"
        else:
            advice = "GitHub failed; retry later" if status >= 500 else ""
        said = self._redact(_github_says(response))
        return f"{method} {where}: HTTP {status}: {said}" + (f"; {advice}" if advice else "")

    def _redact(self, text: str) -> str:
        token = self._token()
        return text.replace(token, REDACTED) if token else text
