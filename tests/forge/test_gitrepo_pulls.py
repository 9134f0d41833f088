"""WatchedRepo's pull request side over git's HTTP: PR heads, force-pushes, PR diffs, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import GitRepoError
from inferx_pipeline.gitrepo import WatchedRepo
from tests.gittools import isolate_git
from tests.services.git_http import ServedRepo

PR_REF = "refs/pull/12/head"
LOCAL = "refs/inferx/pull/12/head"


def _watch(served: ServedRepo, tmp_path: Path) -> WatchedRepo:
    return WatchedRepo(served.url, "main", mirror_dir=tmp_path / "mirrors", timeout_s=30)


def _pull_adding_a_recipe(served: ServedRepo) -> tuple[str, str]:
    """main: a recipe and a changelog; PR 12 adds a recipe and a changelog line. (base, head)"""
    base = served.commit({"recipes/a.yaml": "a: 1\n", "perf-changelog.yaml": "- a\n"})
    served.branch("add-b", start=base)
    head = served.commit(
        {"recipes/b.yaml": "b: 1\n", "perf-changelog.yaml": "- a\n- b\n"}, branch="add-b"
    )
    served.publish_pull(12, "add-b")
    return base, head


def test_fetch_ref_fetches_a_pull_head_over_smart_http(
    served_repo: ServedRepo, tmp_path: Path
) -> None:
    base, head = _pull_adding_a_recipe(served_repo)
    watched = _watch(served_repo, tmp_path)
    assert watched.fetch_ref(PR_REF, LOCAL) == head  # creates the mirror on first use
    assert watched.fetch() == base
    assert watched.head() == base  # the PR's ref is beside the branch, not on it
    assert served_repo.smart
    assert "POST /repo.git/git-upload-pack" in served_repo.seen  # over HTTP, not the disk


def test_a_force_pushed_pull_is_followed(served_repo: ServedRepo, tmp_path: Path) -> None:
    base, first = _pull_adding_a_recipe(served_repo)
    watched = _watch(served_repo, tmp_path)
    assert watched.fetch_ref(PR_REF, LOCAL) == first
    served_repo.branch("add-b", start=base)  # rewrite the PR: the first head is dropped
    rewritten = served_repo.commit({"recipes/b.yaml": "b: 2\n"}, "b, again", branch="add-b")
    assert served_repo.publish_pull(12, "add-b") == rewritten
    assert watched.fetch_ref(PR_REF, LOCAL) == rewritten
    assert watched.changed_between(base, rewritten) == ["recipes/b.yaml"]


def test_changed_between_is_what_the_pull_changes_after_main_moved_on(
    served_repo: ServedRepo, tmp_path: Path
) -> None:
    fork, head = _pull_adding_a_recipe(served_repo)
    served_repo.commit({"recipes/a.yaml": "a: 2\n", "recipes/c.yaml": "c: 1\n"}, branch="main")
    main = served_repo.commit({"README.md": "moved on\n"}, branch="main")
    watched = _watch(served_repo, tmp_path)
    assert watched.fetch() == main
    watched.fetch_ref(PR_REF, LOCAL)
    assert watched.merge_base(main, head) == fork
    assert watched.changed_between(main, head) == ["perf-changelog.yaml", "recipes/b.yaml"]
    # Against main directly (two dots), main's own later commits would show as changes.
    assert watched.changed_between(head, main) == ["README.md", "recipes/a.yaml", "recipes/c.yaml"]


def test_changed_between_reports_a_rename_as_both_paths(
    served_repo: ServedRepo, tmp_path: Path
) -> None:
    base = served_repo.commit({"recipes/a.yaml": "a: 1\n"})
    served_repo.branch("rename", start=base)
    served_repo.work.git("mv", "recipes/a.yaml", "recipes/a-fp8.yaml")
    head = served_repo.commit({}, "rename a", branch="rename")
    served_repo.publish_pull(12, "rename")
    watched = _watch(served_repo, tmp_path)
    watched.fetch()
    watched.fetch_ref(PR_REF, LOCAL)
    assert watched.changed_between(base, head) == ["recipes/a-fp8.yaml", "recipes/a.yaml"]


def test_file_at_reads_a_file_at_a_commit(served_repo: ServedRepo, tmp_path: Path) -> None:
    base, head = _pull_adding_a_recipe(served_repo)
    watched = _watch(served_repo, tmp_path)
    watched.fetch()
    watched.fetch_ref(PR_REF, LOCAL)
    assert watched.file_at(base, "perf-changelog.yaml") == b"- a\n"
    assert watched.file_at(head, "perf-changelog.yaml") == b"- a\n- b\n"
    assert watched.file_at(head, "recipes/b.yaml") == b"b: 1\n"
    assert watched.file_at(base, "recipes/b.yaml") is None  # the PR adds it
    assert watched.file_at(head, "recipes") is None  # a directory is no file
    assert watched.file_at(head, "recipes/*.yaml") is None  # a path, not a pattern
    with pytest.raises(GitRepoError, match=f"check that commit {'0' * 40} was fetched"):
        watched.file_at("0" * 40, "perf-changelog.yaml")


def test_a_missing_pull_head_names_the_ref(served_repo: ServedRepo, tmp_path: Path) -> None:
    _pull_adding_a_recipe(served_repo)
    watched = _watch(served_repo, tmp_path)
    with pytest.raises(GitRepoError) as caught:
        watched.fetch_ref("refs/pull/99/head", "refs/inferx/pull/99/head")
    message = str(caught.value)
    assert "couldn't find remote ref refs/pull/99/head" in message  # git's own words
    assert "the pull request head refs/pull/99/head could not be fetched from" in message
    assert served_repo.url in message


def test_fetch_ref_never_writes_over_the_watched_branch(
    served_repo: ServedRepo, tmp_path: Path
) -> None:
    base, _ = _pull_adding_a_recipe(served_repo)
    watched = _watch(served_repo, tmp_path)
    assert watched.fetch() == base
    for local in ("refs/heads/main", "inferx/pull/12"):
        with pytest.raises(GitRepoError, match=r"expected a full ref name .* other than"):
            watched.fetch_ref(PR_REF, local)
    assert watched.head() == base


def test_unrelated_histories_have_no_merge_base(served_repo: ServedRepo, tmp_path: Path) -> None:
    base = served_repo.commit({"a.txt": "1"})
    served_repo.work.git("checkout", "-q", "--orphan", "elsewhere")
    other = served_repo.commit({"b.txt": "2"}, branch="elsewhere")
    served_repo.publish_pull(12, "elsewhere")
    watched = _watch(served_repo, tmp_path)
    watched.fetch()
    watched.fetch_ref(PR_REF, LOCAL)
    with pytest.raises(GitRepoError, match="share no history"):
        watched.changed_between(base, other)


def test_dumb_http_serves_pull_heads_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch)
    with ServedRepo(tmp_path / "served", smart=False) as served:
        base, head = _pull_adding_a_recipe(served)
        watched = _watch(served, tmp_path)
        assert watched.fetch() == base
        assert watched.fetch_ref(PR_REF, LOCAL) == head
        assert not served.smart
        assert "GET /repo.git/info/refs" in served.seen
        assert not any("git-upload-pack" in line for line in served.seen)
