"""A GitHub REST API v3 stand-in on 127.0.0.1, answering from an in-memory state of PRs.

::

    with ForgeStandin("octo-org", "recipes", token="tok") as github:
        github.add_pull(7, head_sha="a" * 40, labels=["sweep"])
        forge = GitHubForge(github.url, "octo-org", "recipes", environ={"GITHUB_TOKEN": "tok"})
        forge.comment(7, "measured")
        assert github.comment_bodies(7) == ["measured"]

It serves, under ``/api/v3`` as GitHub Enterprise Server does, the endpoints
``inferx_pipeline.forge.github`` uses: the open pulls (paged by ``per_page`` and ``page``,
with GitHub's ``Link`` header whose URLs are spelled ``/repositories/<id>/...``), one pull,
one commit, a PR's comments (paged too), a new comment, an edited comment.

Bodies are GitHub's own published examples (``tests/forge/fixtures/github/``, see its
SOURCE.md) with the fields the state sets overridden, so every other key keeps GitHub's
shape. Errors are GitHub's ``{"message", "documentation_url", "status"}``.

Every request is recorded in ``seen`` with whether it carried an Authorization header,
never the header's value. ``fail`` makes one method and path answer an error (with extra
headers, such as a rate limit's), optionally echoing the Authorization header back in the
message as a careless proxy might, or any other status, body and headers (a Link loop).
``token`` set: a request with another token is a 401, and a write with none is a 401, as
on GitHub.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.services.http_thread import ServerThread

FIXTURES = Path(__file__).resolve().parents[1] / "forge" / "fixtures" / "github"
PREFIX = "/api/v3"
DOCS = "https://docs.github.com/rest"
DEFAULT_PER_PAGE = 30  # GitHub's default page size
MAX_PER_PAGE = 100

Answer = tuple[int, Any, dict[str, str]]  # status, JSON body, headers
Route = Callable[..., Answer]


@cache
def example(name: str) -> Any:
    """GitHub's published example ``name`` (``pull.json``), parsed; copy before changing."""
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Pull:
    """One pull request of the state; ``merged_at`` an ISO 8601 time once merged."""

    number: int
    head_sha: str
    base_sha: str
    title: str = "Add a recipe"
    body: str | None = None  # the description; GitHub sends null for none
    head_ref: str = "feature"
    base_ref: str = "main"
    state: Literal["open", "closed"] = "open"
    labels: list[str] = field(default_factory=list)
    author: str = "octocat"
    draft: bool = False
    merged_at: str | None = None
    merge_commit_sha: str | None = None


@dataclass(frozen=True)
class Seen:
    """One request answered: whether it was authorized, never with what."""

    method: str
    path: str  # without the /api/v3 prefix and the query
    query: dict[str, str]
    authorized: bool
    accept: str | None
    api_version: str | None  # X-GitHub-Api-Version
    body: Any


@dataclass(frozen=True)
class Failure:
    """What ``fail`` makes a method and path answer."""

    status: int
    message: str
    headers: dict[str, str]
    echo_authorization: bool
    body: Any  # answered instead of GitHub's error object when not None


@dataclass
class _State:
    owner: str
    repo: str
    token: str | None
    pulls: dict[int, Pull] = field(default_factory=dict)
    commits: dict[str, str] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)  # by comment id
    failures: dict[tuple[str, str], Failure] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1_000_001))
    lock: threading.Lock = field(default_factory=threading.Lock)


class ForgeStandin(ServerThread):
    """The stand-in for one repository (see the module doc); ``url`` is the API base URL."""

    def __init__(
        self, owner: str = "octo-org", repo: str = "recipes", *, token: str | None = None
    ) -> None:
        self.owner = owner
        self.repo = repo
        self._state = _State(owner, repo, token)
        self.url = ""  # set once the port is known, before the first request

        def handler(port: int) -> type[_Handler]:
            self.url = f"http://127.0.0.1:{port}{PREFIX}"
            return type("Handler", (_Handler,), {"state": self._state, "base": self.url})

        super().__init__(handler)

    @property
    def seen(self) -> list[Seen]:
        """Every request answered so far, in order."""
        with self._state.lock:
            return list(self._state.seen)

    def add_pull(self, number: int, **fields: Any) -> Pull:
        """Add (or replace) PR ``number``; ``fields`` as ``Pull``'s (SHAs default to fakes)."""
        fields.setdefault("head_sha", f"{number:040x}")
        fields.setdefault("base_sha", "b" * 40)
        pull = Pull(number, **fields)
        with self._state.lock:
            self._state.pulls[number] = pull
        return pull

    def pull(self, number: int) -> Pull:
        """PR ``number`` of the state, to change it in place (a push, a label, a merge)."""
        return self._state.pulls[number]

    def add_commit(self, sha: str, message: str) -> None:
        """Make ``GET /commits/<sha>`` answer this commit."""
        with self._state.lock:
            self._state.commits[sha] = message

    def add_comment(self, number: int, body: str, author: str = "octocat") -> int:
        """A comment already on PR ``number``; its id."""
        with self._state.lock:
            return int(_new_comment(self._state, number, body, author)["id"])

    def comment_bodies(self, number: int) -> list[str]:
        """The bodies of PR ``number``'s comments, oldest first."""
        with self._state.lock:
            found = [c for c in self._state.comments.values() if c["_number"] == number]
        return [c["body"] for c in sorted(found, key=lambda c: c["id"])]

    def fail(
        self,
        path: str,
        status: int,
        message: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        echo_authorization: bool = False,
        body: Any = None,
    ) -> None:
        """Answer ``method path`` (``/repos/o/r/pulls/7``, no query) with this error from now on;
        ``body``: answer that JSON instead of GitHub's error object."""
        failure = Failure(status, message, dict(headers or {}), echo_authorization, body)
        with self._state.lock:
            self._state.failures[(method, path)] = failure


def _new_comment(state: _State, number: int, body: str, author: str) -> dict[str, Any]:
    comment_id = next(state.ids)
    stored = {"id": comment_id, "body": body, "_number": number, "_author": author}
    state.comments[comment_id] = stored
    return stored


def _web(state: _State) -> str:
    return f"https://github.com/{state.owner}/{state.repo}"


def _label(state: _State, base: str, name: str, index: int) -> dict[str, Any]:
    label: dict[str, Any] = copy.deepcopy(example("labels-list.json")[0])
    label.update(
        id=label["id"] + index,
        node_id=f"LA_{label['id'] + index}",
        name=name,
        url=f"{base}/repos/{state.owner}/{state.repo}/labels/{name}",
    )
    return label


def _pull_json(state: _State, base: str, pull: Pull, template: dict[str, Any]) -> dict[str, Any]:
    payload = copy.deepcopy(template)
    api = f"{base}/repos/{state.owner}/{state.repo}"
    payload.update(
        number=pull.number,
        title=pull.title,
        body=pull.body,
        state=pull.state,
        draft=pull.draft,
        html_url=f"{_web(state)}/pull/{pull.number}",
        url=f"{api}/pulls/{pull.number}",
        labels=[_label(state, base, name, i) for i, name in enumerate(pull.labels)],
        merged_at=pull.merged_at,
        merge_commit_sha=pull.merge_commit_sha,
        closed_at=pull.merged_at if pull.state == "closed" else None,
    )
    if "merged" in payload:  # only the single-PR answer carries it
        payload["merged"] = pull.merged_at is not None
    payload["user"]["login"] = pull.author
    for side, sha, ref in (
        ("head", pull.head_sha, pull.head_ref),
        ("base", pull.base_sha, pull.base_ref),
    ):
        payload[side].update(sha=sha, ref=ref, label=f"{state.owner}:{ref}")
    return payload


def _comment_json(
    state: _State, base: str, stored: dict[str, Any], template: dict[str, Any]
) -> dict[str, Any]:
    payload = copy.deepcopy(template)
    number = stored["_number"]
    payload.update(
        id=stored["id"],
        node_id=f"IC_{stored['id']}",
        body=stored["body"],
        html_url=f"{_web(state)}/pull/{number}#issuecomment-{stored['id']}",
        url=f"{base}/repos/{state.owner}/{state.repo}/issues/comments/{stored['id']}",
        issue_url=f"{base}/repos/{state.owner}/{state.repo}/issues/{number}",
    )
    payload["user"]["login"] = stored["_author"]
    return payload


def _commit_json(state: _State, base: str, sha: str, message: str) -> dict[str, Any]:
    payload: dict[str, Any] = copy.deepcopy(example("commit.json"))
    payload.update(
        sha=sha,
        html_url=f"{_web(state)}/commit/{sha}",
        url=f"{base}/repos/{state.owner}/{state.repo}/commits/{sha}",
    )
    payload["commit"]["message"] = message
    return payload


def _repo_id() -> int:
    # GitHub's Link URLs name the repository by id; take the example's.
    return int(example("pull.json")["base"]["repo"]["id"])


_ROUTES: list[tuple[str, re.Pattern[str]]] = [
    ("pulls", re.compile(r"^/pulls$")),
    ("pull", re.compile(r"^/pulls/(\d+)$")),
    ("commit", re.compile(r"^/commits/([0-9A-Za-z._/-]+)$")),
    ("comments", re.compile(r"^/issues/(\d+)/comments$")),
    ("edit", re.compile(r"^/issues/comments/(\d+)$")),
]


class _Handler(BaseHTTPRequestHandler):
    state: _State
    base: str

    def log_message(self, format: str, *args: object) -> None:
        return  # keep pytest output clean

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def _serve(self) -> None:
        split = urlsplit(self.path)
        path = split.path.removeprefix(PREFIX)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        authorization = self.headers.get("Authorization")
        with self.state.lock:
            seen = Seen(
                self.command,
                path,
                query,
                authorized=authorization is not None,
                accept=self.headers.get("Accept"),
                api_version=self.headers.get("X-GitHub-Api-Version"),
                body=body,
            )
            self.state.seen.append(seen)
            answer = self._answer(path, query, body, authorization)
        self._send(*answer)

    def _answer(
        self, path: str, query: dict[str, str], body: Any, authorization: str | None
    ) -> Answer:
        failure = self.state.failures.get((self.command, path))
        if failure is not None:
            said = failure.message
            if failure.echo_authorization:
                said += f" (you sent Authorization: {authorization})"
            if failure.body is not None:
                return failure.status, failure.body, failure.headers
            return _error(failure.status, said, failure.headers)
        token = self.state.token
        if token is not None and authorization not in (None, f"Bearer {token}"):
            return _error(401, "Bad credentials")
        if self.command != "GET" and authorization is None:
            return _error(401, "Requires authentication")
        prefixes = (f"/repos/{self.state.owner}/{self.state.repo}", f"/repositories/{_repo_id()}")
        for prefix in prefixes:
            rest = path.removeprefix(prefix)
            for name, pattern in _ROUTES:
                match = pattern.match(rest) if rest != path else None
                if match is not None:
                    route: Route = getattr(self, f"_{name}")
                    return route(rest, query, body, *match.groups())
        return _error(404, "Not Found")

    def _page(self, rest: str, items: list[Any], query: dict[str, str]) -> Answer:
        per_page = min(int(query.get("per_page", DEFAULT_PER_PAGE)), MAX_PER_PAGE)
        page = int(query.get("page", 1))
        last = max(1, -(-len(items) // per_page))
        links = {"prev": page - 1, "next": page + 1, "last": last, "first": 1}
        where = f"{self.base}/repositories/{_repo_id()}{rest}"
        shown = [
            f'<{where}?{urlencode({**query, "per_page": per_page, "page": to})}>; rel="{rel}"'
            for rel, to in links.items()
            if 1 <= to <= last and to != page
        ]
        headers = {"Link": ", ".join(shown)} if shown else {}
        return 200, items[(page - 1) * per_page : page * per_page], headers

    def _pulls(self, rest: str, query: dict[str, str], body: Any) -> Answer:
        wanted = query.get("state", "open")
        template = example("pulls-list.json")[0]
        pulls = sorted(self.state.pulls.values(), key=lambda p: -p.number)  # newest first
        items = [
            _pull_json(self.state, self.base, p, template)
            for p in pulls
            if wanted in ("all", p.state)
        ]
        return self._page(rest, items, query)

    def _pull(self, rest: str, query: dict[str, str], body: Any, number: str) -> Answer:
        pull = self.state.pulls.get(int(number))
        if pull is None:
            return _error(404, "Not Found")
        return 200, _pull_json(self.state, self.base, pull, example("pull.json")), {}

    def _commit(self, rest: str, query: dict[str, str], body: Any, sha: str) -> Answer:
        found = [full for full in self.state.commits if full.startswith(sha)]
        if len(found) != 1:
            return _error(422, f"No commit found for SHA: {sha}")
        return 200, _commit_json(self.state, self.base, found[0], self.state.commits[found[0]]), {}

    def _comments(self, rest: str, query: dict[str, str], body: Any, number: str) -> Answer:
        if int(number) not in self.state.pulls:
            return _error(404, "Not Found")
        if self.command == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return _error(422, 'Invalid request.\n\nNo subschema in "anyOf" matched.')
            stored = _new_comment(self.state, int(number), body["body"], "inferx-bot")
            return (
                201,
                _comment_json(self.state, self.base, stored, example("issue-comment.json")),
                {},
            )
        template = example("issue-comments-list.json")[0]
        found = sorted(
            (c for c in self.state.comments.values() if c["_number"] == int(number)),
            key=lambda c: c["id"],
        )
        items = [_comment_json(self.state, self.base, c, template) for c in found]
        return self._page(rest, items, query)

    def _edit(self, rest: str, query: dict[str, str], body: Any, comment_id: str) -> Answer:
        stored = self.state.comments.get(int(comment_id))
        if self.command != "PATCH" or stored is None:
            return _error(404, "Not Found")
        stored["body"] = body["body"]
        return 200, _comment_json(self.state, self.base, stored, example("issue-comment.json")), {}

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json; charset=utf-8", **headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Answer:
    return (
        status,
        {"message": message, "documentation_url": DOCS, "status": str(status)},
        headers or {},
    )
