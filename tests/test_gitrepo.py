"""WatchedRepo on real git repositories: mirror, new commits, merges, force-pushes, trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import GitRepoError
from inferx_pipeline.gitrepo import WatchedRepo, redact_url
from tests.gittools import Work, isolate_git


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Work:
    isolate_git(monkeypatch)
    return Work(tmp_path / "upstream")


@pytest.fixture
def watched(work: Work, tmp_path: Path) -> WatchedRepo:
    return WatchedRepo(str(work.path), "main", mirror_dir=tmp_path / "mirrors")


def test_fetch_creates_a_bare_mirror_and_follows_the_branch(
    work: Work, watched: WatchedRepo, tmp_path: Path
) -> None:
    first = work.commit({"a.txt": "1"})
    assert watched.fetch() == first
    assert watched.mirror.parent == tmp_path / "mirrors"
    assert watched.mirror.name.startswith("upstream-") and watched.mirror.suffix == ".git"
    assert (watched.mirror / "HEAD").is_file() and not (watched.mirror / ".git").exists()
    second = work.commit({"a.txt": "2"})
    assert watched.head() == first  # reads the mirror as of the last fetch
    assert watched.fetch() == second


def test_commits_since_linear_history(work: Work, watched: WatchedRepo) -> None:
    c1 = work.commit({"a.txt": "1"})
    c2 = work.commit({"a.txt": "2"})
    c3 = work.commit({"b.txt": "3"})
    watched.fetch()
    assert watched.commits_since(None) == []
    assert watched.commits_since(c3) == []
    assert watched.commits_since(c1) == [c2, c3]
    assert watched.commits_since(c2) == [c3]


def test_a_merge_counts_once(work: Work, watched: WatchedRepo) -> None:
    base = work.commit({"recipes/a.yaml": "a: 1\n", "README": "x\n"})
    work.git("checkout", "-q", "-b", "feature")
    work.commit({"recipes/b.yaml": "b: 1\n"})
    work.commit({"recipes/a.yaml": "a: 2\n"})
    work.git("checkout", "-q", "main")
    side = work.commit({"README": "y\n"})
    work.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = work.git("rev-parse", "HEAD")
    watched.fetch()
    assert watched.commits_since(base) == [side, merge]
    assert watched.changed_files(merge) == ["recipes/a.yaml", "recipes/b.yaml"]


def test_force_push_returns_only_the_new_head(work: Work, watched: WatchedRepo) -> None:
    c1 = work.commit({"a.txt": "1"})
    c2 = work.commit({"a.txt": "2"})
    assert watched.fetch() == c2
    work.git("reset", "-q", "--hard", c1)
    rewritten = work.commit({"a.txt": "2 again"}, "rewritten")
    assert watched.fetch() == rewritten
    # The cursor c2 is no longer on the branch: the base is unknown, so only the head.
    assert watched.commits_since(c2) == [rewritten]
    assert watched.commits_since("0" * 40) == [rewritten]
    assert watched.commits_since(c1) == [rewritten]


def test_changed_files(work: Work, watched: WatchedRepo) -> None:
    root = work.commit({"a.txt": "1", "dir/b.txt": "2", "dir/c.txt": "3"})
    edit = work.commit({"a.txt": "1b", "dir/b.txt": None, "new.txt": "4"})
    work.git("mv", "dir/c.txt", "dir/d.txt")
    work.git("commit", "-q", "-m", "rename")
    renamed = work.git("rev-parse", "HEAD")
    watched.fetch()
    assert watched.changed_files(root) == ["a.txt", "dir/b.txt", "dir/c.txt"]
    assert watched.changed_files(edit) == ["a.txt", "dir/b.txt", "new.txt"]
    assert watched.changed_files(renamed) == ["dir/c.txt", "dir/d.txt"]


def test_export_tree_is_whole_and_idempotent(
    work: Work, watched: WatchedRepo, tmp_path: Path
) -> None:
    c1 = work.commit({"recipes/a.yaml": "a: 1\n", "top.txt": "t"})
    c2 = work.commit({"recipes/a.yaml": "a: 2\n"})
    watched.fetch()
    dest = watched.export_tree(c1, tmp_path / "trees" / c1)
    assert dest == tmp_path / "trees" / c1
    assert (dest / "recipes/a.yaml").read_text() == "a: 1\n"
    assert (dest / "top.txt").read_text() == "t"
    (dest / "marker").write_text("kept")
    assert watched.export_tree(c1, dest) == dest
    assert (dest / "marker").read_text() == "kept"  # an existing tree is not rewritten
    assert (watched.export_tree(c2, tmp_path / "trees" / c2) / "recipes/a.yaml").read_text() == (
        "a: 2\n"
    )
    assert sorted(p.name for p in (tmp_path / "trees").iterdir()) == sorted([c1, c2])


def test_export_tree_refuses_a_link_out_of_the_tree(
    work: Work, watched: WatchedRepo, tmp_path: Path
) -> None:
    (work.path / "escape").symlink_to("/etc/hostname")
    sha = work.commit({"a.txt": "1"})
    watched.fetch()
    dest = tmp_path / "trees" / sha
    with pytest.raises(GitRepoError, match=r"cannot write the tree of .*symlinks are refused"):
        watched.export_tree(sha, dest)
    assert not dest.exists()  # nothing half-written is left to look complete
    assert list((tmp_path / "trees").iterdir()) == []


def test_errors_carry_git_stderr_and_advice(tmp_path: Path, work: Work) -> None:
    missing = WatchedRepo(str(tmp_path / "nowhere"), mirror_dir=tmp_path / "m")
    with pytest.raises(GitRepoError) as caught:
        missing.fetch()
    message = str(caught.value)
    assert "does not appear to be a git repository" in message
    assert f"check that {tmp_path / 'nowhere'} is reachable and has a branch main" in message

    work.commit({"a.txt": "1"})
    other = WatchedRepo(str(work.path), "release", mirror_dir=tmp_path / "m")
    with pytest.raises(GitRepoError, match="couldn't find remote ref refs/heads/release"):
        other.fetch()

    fresh = WatchedRepo(str(work.path), mirror_dir=tmp_path / "empty")
    with pytest.raises(GitRepoError, match=r"no mirror of .* yet; .*call fetch\(\) first"):
        fresh.commits_since("abc")


def test_credentials_in_a_url_never_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    url = "http://robot:hunter2@127.0.0.1:9/org/recipes.git"
    repo = WatchedRepo(url, mirror_dir=tmp_path / "m", timeout_s=30)
    assert "hunter2" not in repr(repo)
    with pytest.raises(GitRepoError) as caught:
        repo.fetch()
    assert "hunter2" not in str(caught.value)
    assert "http://127.0.0.1:9/org/recipes.git" in str(caught.value)
    assert redact_url("see https://u:p@h/x and http://h/y") == "see https://h/x and http://h/y"
