"""GitHubForge against the GitHub stand-in: every endpoint, paging, tokens, errors, URLs."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from inferx_pipeline.errors import ForgeError
from inferx_pipeline.forge.base import Forge
from inferx_pipeline.forge.github import DEFAULT_API_URL, REDACTED, GitHubForge
from inferx_pipeline.forge.models import Comment, Commit
from tests.forge.conftest import OWNER, REPO, TOKEN
from tests.services.forge_standin import ForgeStandin, example

WITH_TOKEN = {"GITHUB_TOKEN": TOKEN}
PULLS = f"/repos/{OWNER}/{REPO}/pulls"


def _forge(
    github: ForgeStandin, environ: dict[str, str] | None = None, page_size: int = 100
) -> GitHubForge:
    env = WITH_TOKEN if environ is None else environ
    return GitHubForge(github.url, OWNER, REPO, environ=env, timeout_s=10, page_size=page_size)


def test_open_pulls_follow_link_pages(github: ForgeStandin) -> None:
    for number in range(1, 6):
        github.add_pull(number, labels=[f"label-{number}"])
    github.add_pull(6, state="closed")
    pulls = _forge(github, page_size=2).open_pulls()
    assert [p.number for p in pulls] == [5, 4, 3, 2, 1]  # GitHub's order: newest first
    assert [p.labels for p in pulls][-1] == ("label-1",)
    asked = [(s.path, s.query) for s in github.seen]
    repo_id = example("pull.json")["base"]["repo"]["id"]
    assert asked == [
        (PULLS, {"state": "open", "per_page": "2"}),
        (f"/repositories/{repo_id}/pulls", {"state": "open", "per_page": "2", "page": "2"}),
        (f"/repositories/{repo_id}/pulls", {"state": "open", "per_page": "2", "page": "3"}),
    ]


def test_pull_reads_what_the_pipeline_needs(github: ForgeStandin) -> None:
    github.add_pull(
        7,
        title="Add dsr1 fp8 on h200",
        body="changelog: dsr1-fp8-h200",
        head_sha="c" * 40,
        head_ref="dsr1-h200",
        base_sha="d" * 40,
        labels=["sweep", "sku:h200"],
        author="alice",
        draft=True,
    )
    pull = _forge(github).pull(7)
    assert (pull.number, pull.title, pull.state, pull.author) == (
        7,
        "Add dsr1 fp8 on h200",
        "open",
        "alice",
    )
    assert (pull.head_sha, pull.head_ref) == ("c" * 40, "dsr1-h200")
    assert (pull.base_sha, pull.base_ref) == ("d" * 40, "main")
    assert pull.labels == ("sweep", "sku:h200")
    assert pull.body == "changelog: dsr1-fp8-h200"
    github.pull(7).head_sha = "1" * 40  # a push to the PR
    assert _forge(github).pull(7).head_sha == "1" * 40
    assert pull.html_url == f"https://github.com/{OWNER}/{REPO}/pull/7"
    assert (pull.draft, pull.merged, pull.merged_at, pull.merge_commit_sha) == (
        True,
        False,
        None,
        None,
    )


def test_a_merged_pull(github: ForgeStandin) -> None:
    github.add_pull(8, state="closed", merged_at="2024-05-01T12:00:00Z", merge_commit_sha="e" * 40)
    pull = _forge(github).pull(8)
    assert pull.state == "closed" and pull.merged
    assert pull.merged_at == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert pull.merge_commit_sha == "e" * 40


def test_commit(github: ForgeStandin) -> None:
    sha = "f" * 40
    github.add_commit(sha, "Add b\n\nchangelog: dsr1-fp8-h200")
    assert _forge(github).commit(sha) == Commit(
        sha=sha, message="Add b\n\nchangelog: dsr1-fp8-h200"
    )
    assert _forge(github).commit(sha[:12]).sha == sha  # GitHub resolves a short SHA


def test_comment_list_and_update(github: ForgeStandin) -> None:
    github.add_pull(7)
    earlier = [github.add_comment(7, f"comment {i}") for i in range(4)]
    forge = _forge(github, page_size=2)
    posted = forge.comment(7, "## inferx\nmeasuring")
    assert posted.body == "## inferx\nmeasuring"
    assert posted.html_url == f"https://github.com/{OWNER}/{REPO}/pull/7#issuecomment-{posted.id}"
    listed = forge.comments(7)  # 5 comments, 2 a page: 3 pages
    assert [c.id for c in listed] == [*earlier, posted.id]
    assert listed[-1] == posted
    edited = forge.update_comment(posted.id, "## inferx\ndone")
    assert edited == Comment(id=posted.id, body="## inferx\ndone", html_url=posted.html_url)
    assert github.comment_bodies(7)[-1] == "## inferx\ndone"
    writes = [(s.method, s.path, s.body) for s in github.seen if s.method != "GET"]
    assert writes == [
        ("POST", f"/repos/{OWNER}/{REPO}/issues/7/comments", {"body": "## inferx\nmeasuring"}),
        (
            "PATCH",
            f"/repos/{OWNER}/{REPO}/issues/comments/{posted.id}",
            {"body": "## inferx\ndone"},
        ),
    ]


def test_headers_and_anonymous_reads(github: ForgeStandin) -> None:
    github.add_pull(7)
    anonymous_forge, forge = _forge(github, environ={}), _forge(github)
    assert not anonymous_forge.has_token() and forge.has_token()
    anonymous_forge.pull(7)
    forge.pull(7)
    anonymous, authorized = github.seen
    assert not anonymous.authorized and authorized.authorized
    assert anonymous.accept == "application/vnd.github+json"
    assert anonymous.api_version == "2022-11-28"


def test_writing_without_a_token_names_the_variable_and_sends_nothing(github: ForgeStandin) -> None:
    github.add_pull(7)
    forge = GitHubForge(
        github.url, OWNER, REPO, token_env="RECIPES_TOKEN", environ={"GITHUB_TOKEN": TOKEN}
    )
    with pytest.raises(ForgeError) as caught:
        forge.comment(7, "hello")
    assert str(caught.value) == (
        f"POST /repos/{OWNER}/{REPO}/issues/7/comments: no token to write with; set the "
        f"environment variable RECIPES_TOKEN to a token that may write pull request comments "
        f"on {OWNER}/{REPO}"
    )
    with pytest.raises(ForgeError, match=r"PATCH .*set the environment variable RECIPES_TOKEN"):
        forge.update_comment(1, "hello")
    assert github.seen == []


def test_errors_name_method_path_status_and_message(github: ForgeStandin) -> None:
    forge = _forge(github)
    with pytest.raises(ForgeError) as caught:
        forge.pull(404)
    assert str(caught.value) == (
        f"GET {PULLS}/404: HTTP 404: Not Found; check {OWNER}/{REPO} and the number, and that "
        "the token in GITHUB_TOKEN may access it"
    )
    github.add_pull(7)
    comments = f"/repos/{OWNER}/{REPO}/issues/7/comments"
    github.fail(comments, 422, "Validation Failed", method="POST")
    with pytest.raises(
        ForgeError, match=f"^POST {comments}: HTTP 422: Validation Failed; GitHub refused"
    ):
        forge.comment(7, "x")
    github.fail(f"{PULLS}/7", 502, "Server Error")
    with pytest.raises(
        ForgeError, match=f"^GET {PULLS}/7: HTTP 502: Server Error; GitHub failed; retry later$"
    ):
        forge.pull(7)


def test_the_token_never_shows(github: ForgeStandin) -> None:
    github.fail(f"{PULLS}/7", 401, "Bad credentials", echo_authorization=True)
    forge = _forge(github)
    with pytest.raises(ForgeError) as caught:
        forge.pull(7)
    message = str(caught.value)
    assert TOKEN not in message and TOKEN not in repr(forge)
    assert f"(you sent Authorization: Bearer {REDACTED})" in message  # the echo was there
    assert message.endswith("the token in GITHUB_TOKEN is invalid or expired; replace it")

    wrong = _forge(github, environ={"GITHUB_TOKEN": "ghp_wrong-one"})
    first_page = re.escape(f"GET {PULLS}?state=open&per_page=100")
    with pytest.raises(ForgeError, match=f"^{first_page}: HTTP 401: Bad credentials; the token"):
        wrong.open_pulls()


def test_no_answer_names_the_api() -> None:
    url = "http://127.0.0.1:9/api/v3"  # the discard port: nothing answers HTTP there
    forge = GitHubForge(url, OWNER, REPO, environ=WITH_TOKEN, timeout_s=5)
    with pytest.raises(
        ForgeError, match=f"^GET {PULLS}/7: no answer from {url} \\(ConnectionError"
    ):
        forge.pull(7)


def test_rate_limits_say_when_to_retry(github: ForgeStandin) -> None:
    reset = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000000"}
    github.fail(PULLS, 403, "API rate limit exceeded for 127.0.0.1.", headers=reset)
    with pytest.raises(ForgeError) as caught:
        _forge(github, environ={}).open_pulls()
    assert str(caught.value) == (
        f"GET {PULLS}?state=open&per_page=100: HTTP 403: API rate limit exceeded for 127.0.0.1.; "
        "GitHub is rate limiting this client: retry after 2023-11-14T22:13:20Z (when the limit "
        "resets); set GITHUB_TOKEN for a higher limit"
    )
    github.fail(f"{PULLS}/7", 429, "secondary rate limit", headers={"Retry-After": "60"})
    with pytest.raises(ForgeError, match=r"HTTP 429: secondary rate limit; .*: retry in 60 s$"):
        _forge(github).pull(7)
    github.fail(f"{PULLS}/8", 403, "Resource not accessible by integration")
    with pytest.raises(ForgeError, match="HTTP 403: Resource not accessible") as forbidden:
        _forge(github).pull(8)
    assert "retry" not in str(forbidden.value)  # a plain 403 is no rate limit


def test_an_answer_that_is_not_a_pull_names_the_field_and_the_request(github: ForgeStandin) -> None:
    github.fail(f"{PULLS}/7", 200, "", body={"number": 7, "title": "t", "state": "open"})
    with pytest.raises(
        ForgeError, match=f"^GET {PULLS}/7: pull request JSON: missing field merged_at"
    ):
        _forge(github).pull(7)
    github.fail(PULLS, 200, "", body={"message": "not a list"})
    with pytest.raises(
        ForgeError, match=f"^GET {PULLS}.*: HTTP 200 but the body is not a JSON list"
    ):
        _forge(github).open_pulls()


def test_a_link_elsewhere_or_in_a_loop_is_not_followed(github: ForgeStandin) -> None:
    elsewhere = {"Link": '<https://evil.example/steal?page=2>; rel="next"'}
    github.fail(PULLS, 200, "", body=[], headers=elsewhere)
    with pytest.raises(ForgeError, match=r"the next page is on another host \(evil.example\)"):
        _forge(github).open_pulls()
    assert [s.path for s in github.seen] == [PULLS]  # the token stayed home

    loop = {"Link": f'<{github.url}{PULLS}?page=2>; rel="next"'}
    github.fail(PULLS, 200, "", body=[], headers=loop)
    with pytest.raises(ForgeError, match="the list did not end after 2 pages"):
        _forge(github).open_pulls()


def test_pull_ref_and_the_protocol() -> None:
    forge: Forge = GitHubForge(DEFAULT_API_URL, OWNER, REPO, environ={})
    assert forge.pull_ref(12) == "refs/pull/12/head"


@pytest.mark.parametrize(
    ("url", "api", "owner", "repo"),
    [
        ("https://github.com/octo-org/recipes", DEFAULT_API_URL, "octo-org", "recipes"),
        ("https://github.com/octo-org/recipes.git", DEFAULT_API_URL, "octo-org", "recipes"),
        ("https://github.com/octo-org/recipes/", DEFAULT_API_URL, "octo-org", "recipes"),
        ("https://x-access-token:s3cr3t@github.com/o/r.git", DEFAULT_API_URL, "o", "r"),
        ("git@github.com:octo-org/recipes.git", DEFAULT_API_URL, "octo-org", "recipes"),
        ("ssh://git@github.com/octo-org/recipes.git", DEFAULT_API_URL, "octo-org", "recipes"),
        (
            "git@ghe.example.com:team/recipes.v2.git",
            "https://ghe.example.com/api/v3",
            "team",
            "recipes.v2",
        ),
        ("octo-org/recipes", DEFAULT_API_URL, "octo-org", "recipes"),
    ],
)
def test_from_url(url: str, api: str, owner: str, repo: str) -> None:
    forge = GitHubForge.from_url(url, environ={})
    assert (forge.api_url, forge.owner, forge.repo) == (api, owner, repo)


def test_from_url_takes_an_api_url_and_refuses_what_it_cannot_read(github: ForgeStandin) -> None:
    github.add_pull(3)
    forge = GitHubForge.from_url(
        "https://github.com/octo-org/recipes", api_url=github.url, environ=WITH_TOKEN
    )
    assert forge.pull(3).number == 3
    for bad in (
        "https://github.com/octo-org",
        "https://user:s3cr3t@github.com/a/b/pull/3",
        "recipes",
        "",
    ):
        with pytest.raises(
            ForgeError, match="cannot tell the owner and repository; expected"
        ) as caught:
            GitHubForge.from_url(bad)
        assert "s3cr3t" not in str(caught.value)
