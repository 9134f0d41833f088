"""A watched git repository: a bare mirror of one branch, its new commits, their files and trees.

::

    repo = WatchedRepo("https://github.com/org/recipes.git", "main", mirror_dir=state / "git")
    head = repo.fetch()                       # clone on first use, then fetch
    for sha in repo.commits_since(cursor):    # oldest first, first-parent: a merge counts once
        paths = repo.changed_files(sha)
        tree = repo.export_tree(sha, state / "trees" / sha)
    pr = repo.fetch_ref("refs/pull/12/head", "refs/inferx/pull/12/head")
    paths = repo.changed_between(head, pr)    # what the PR changes, as GitHub's diff shows it
    before = repo.file_at(head, "perf-changelog.yaml")   # bytes, or None when absent

The mirror lives at ``mirror_dir/<name>-<hash of source>.git`` and holds only the watched
branch and the refs ``fetch_ref`` put beside it (pull request heads). A force-push is
followed, a PR's as well as the branch's (the fetch refspecs are forced). When the cursor
is no longer an ancestor of the branch head (history rewritten, or a SHA the mirror never
had), ``commits_since`` cannot tell what is new and returns only the head commit: the
caller treats that as "everything may have changed" at the head rather than replaying
commits that are gone.

``run_git`` is the one way this package runs git: an argv list (no shell), a timeout,
no terminal prompts, and ``GitRepoError`` with git's stderr on failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from inferx_pipeline.errors import GitRepoError

DEFAULT_TIMEOUT_S = 300.0
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def redact_url(text: str) -> str:
    """``text`` with ``user:password@`` removed from every URL in it."""
    return _USERINFO.sub("", text)


def run_git(
    repo: Path, *args: str, timeout_s: float = DEFAULT_TIMEOUT_S, what_to_do: str = ""
) -> bytes:
    """stdout of ``git -C repo ARGS``; GitRepoError with git's stderr (URLs redacted).

    ``what_to_do`` ends the error message (the caller knows the likely fix).
    """
    argv = ["git", "-C", str(repo), *args]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    shown = redact_url(" ".join(args))
    advice = what_to_do or "check the repository and the arguments"
    try:
        done = subprocess.run(argv, capture_output=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as err:
        raise GitRepoError(
            f"{repo}: git {shown} did not finish within {timeout_s:.0f} s; {advice}"
        ) from err
    except OSError as err:
        raise GitRepoError(f"{repo}: cannot run git ({err}); install git") from err
    if done.returncode != 0:
        stderr = redact_url(done.stderr.decode(errors="replace").strip())
        raise GitRepoError(
            f"{repo}: git {shown} failed (exit {done.returncode}): {stderr or '(no stderr)'}; "
            f"{advice}"
        )
    return done.stdout


def _lines(out: bytes) -> list[str]:
    return [line for line in out.decode().splitlines() if line]


def commit_tree(state: Path, sha: str) -> Path:
    """Where the tree of commit ``sha`` of the watched repository is exported (one folder
    per commit, shared by the merged-recipe runs and the PR runs)."""
    return state / "trees" / sha


class WatchedRepo:
    """One branch of a git repository, mirrored bare under ``mirror_dir`` (see the module doc).

    ``source`` is a URL or a local path. Methods other than ``fetch`` read the mirror as
    of the last fetch and raise GitRepoError when there is none yet.
    """

    def __init__(
        self,
        source: str,
        branch: str = "main",
        *,
        mirror_dir: Path,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        local = Path(source)
        # git resolves a relative remote path against its own -C directory, not ours.
        self.source = str(local.resolve()) if "://" not in source and local.exists() else source
        self.branch = branch
        self.timeout_s = timeout_s
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", self.source.rstrip("/").rsplit("/", 1)[-1])
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:12]
        self.mirror = mirror_dir / f"{stem.removesuffix('.git') or 'repo'}-{digest}.git"
        self._ref = f"refs/heads/{branch}"

    def __repr__(self) -> str:
        return f"WatchedRepo({redact_url(self.source)!r}, {self.branch!r}, mirror={self.mirror})"

    def _git(self, *args: str, what_to_do: str = "") -> bytes:
        return run_git(self.mirror, *args, timeout_s=self.timeout_s, what_to_do=what_to_do)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # Two sensor ticks fetching one mirror at once would fight over git's ref locks.
        self.mirror.parent.mkdir(parents=True, exist_ok=True)
        with self.mirror.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def fetch(self) -> str:
        """Fetch the branch (cloning the mirror on first use); return the branch head SHA.

        GitRepoError when the source is unreachable or has no such branch.
        """
        with self._locked():
            if not (self.mirror / "HEAD").is_file():
                self._create()
            self._git(
                "fetch", "--quiet", "--no-tags", "--force", "origin",
                f"+{self._ref}:{self._ref}",
                what_to_do=(
                    f"check that {redact_url(self.source)} is reachable and has a branch "
                    f"{self.branch}"
                ),
            )  # fmt: skip
        return self.head()

    def _create(self) -> None:
        scratch = Path(tempfile.mkdtemp(prefix=".init-", dir=self.mirror.parent))
        try:
            run_git(scratch, "init", "--quiet", "--bare", timeout_s=self.timeout_s)
            run_git(scratch, "remote", "add", "origin", self.source, timeout_s=self.timeout_s)
            scratch.rename(self.mirror)  # whole or not at all
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def head(self) -> str:
        """The branch head SHA as of the last fetch."""
        self._require_mirror()
        out = self._git(
            "rev-parse", "--verify", "--quiet", f"{self._ref}^{{commit}}",
            what_to_do=f"fetch() first; check that branch {self.branch} exists",
        )  # fmt: skip
        return out.decode().strip()

    def _require_mirror(self) -> None:
        if not (self.mirror / "HEAD").is_file():
            raise GitRepoError(
                f"{self.mirror}: no mirror of {redact_url(self.source)} yet; expected a bare "
                "clone there; call fetch() first"
            )

    def _is_ancestor(self, sha: str, head: str) -> bool:
        argv = ["git", "-C", str(self.mirror), "merge-base", "--is-ancestor", sha, head]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=self.timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise GitRepoError(f"{self.mirror}: git merge-base failed: {err}") from err
        # 0 = ancestor, 1 = not; anything else (unknown object) also means "not on the branch".
        return done.returncode == 0

    def commits_since(self, sha: str | None) -> list[str]:
        """Commits on the branch after ``sha``, oldest first, following first parents.

        None -> [] (no cursor yet: nothing is "new"). ``sha`` == head -> []. ``sha`` not
        an ancestor of the head (a force-push dropped it, or it was never fetched) ->
        ``[head]``: the base is unknown, so only the head is reported.
        """
        if sha is None:
            return []
        head = self.head()
        if sha == head:
            return []
        if not self._is_ancestor(sha, head):
            return [head]
        out = self._git("rev-list", "--first-parent", "--reverse", f"{sha}..{head}")
        return _lines(out)

    def changed_files(self, sha: str) -> list[str]:
        """Paths changed by commit ``sha`` against its first parent (root commit: every file).

        Renames are reported as the old and the new path. Sorted, repository-relative.
        """
        self._require_mirror()
        parents = self._git("rev-list", "--parents", "-n", "1", sha).decode().split()[1:]
        if not parents:
            out = self._git("ls-tree", "-r", "--name-only", "-z", sha)
        else:
            out = self._git("diff", "--name-only", "--no-renames", "-z", parents[0], sha)
        return sorted(p for p in out.decode().split("\0") if p)

    def fetch_ref(self, ref: str, local: str) -> str:
        """Fetch the remote ``ref`` (a PR head: ``refs/pull/12/head``) into the mirror as ``local``.

        Returns its SHA. Forced, so a force-pushed PR is followed. ``local`` must be a
        full ref name other than the watched branch (``refs/inferx/pull/12/head``).
        GitRepoError naming ``ref`` when the source does not have it.
        """
        if not local.startswith("refs/") or local == self._ref:
            raise GitRepoError(
                f"{self.mirror}: cannot fetch {ref} into {local!r}; expected a full ref name "
                f"(refs/...) other than the watched branch {self._ref}"
            )
        with self._locked():
            if not (self.mirror / "HEAD").is_file():
                self._create()
            self._git(
                "fetch", "--quiet", "--no-tags", "--force", "origin", f"+{ref}:{local}",
                what_to_do=(
                    f"the pull request head {ref} could not be fetched from "
                    f"{redact_url(self.source)}; check that the ref exists there (a closed "
                    "PR's head may be gone)"
                ),
            )  # fmt: skip
        return self._git("rev-parse", "--verify", f"{local}^{{commit}}").decode().strip()

    def merge_base(self, a: str, b: str) -> str:
        """The best common ancestor of commits ``a`` and ``b``; GitRepoError when none."""
        self._require_mirror()
        out = self._git(
            "merge-base", a, b,
            what_to_do=(
                f"{a} and {b} share no history, or one is not in the mirror; fetch both first"
            ),
        )  # fmt: skip
        return out.decode().strip()

    def changed_between(self, base: str, head: str) -> list[str]:
        """Paths changed on ``head`` since its merge base with ``base`` (git's ``base...head``).

        What a pull request changes: commits on ``base`` after the branch point do not
        count. Renames are reported as the old and the new path. Sorted,
        repository-relative.
        """
        fork = self.merge_base(base, head)
        out = self._git("diff", "--name-only", "--no-renames", "-z", fork, head)
        return sorted(p for p in out.decode().split("\0") if p)

    def file_at(self, sha: str, path: str) -> bytes | None:
        """The content of file ``path`` (repository-relative) at commit ``sha``.

        None when the commit has no file there (absent, or a directory). GitRepoError when
        ``sha`` is not a commit in the mirror.
        """
        self._require_mirror()
        listed = self._git(
            "ls-tree", "-z", "--full-tree", sha, "--", path,
            what_to_do=f"check that commit {sha} was fetched",
        )  # fmt: skip
        entry = listed.decode().rstrip("\0")
        meta, _, name = entry.partition("\t")
        if name != path or meta.split(" ")[1:2] != ["blob"]:
            return None
        return self._git("cat-file", "blob", meta.split(" ")[2])

    def export_tree(self, sha: str, dest: Path) -> Path:
        """Write commit ``sha``'s tree to ``dest`` and return it; an existing ``dest`` is kept.

        The tree is extracted next to ``dest`` and renamed into place, so ``dest`` is
        either complete or absent. Files marked ``export-ignore`` in .gitattributes are
        left out (``git archive``).
        """
        if dest.is_dir():
            return dest
        self._require_mirror()
        archive = self._git("archive", "--format=tar", sha, what_to_do=f"check commit {sha}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
        try:
            try:
                with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                    tar.extractall(scratch, filter="data")
            except (tarfile.TarError, OSError) as err:
                raise GitRepoError(
                    f"{self.mirror}: cannot write the tree of {sha} to {dest}: {err}; expected "
                    "plain files and links inside the tree (absolute or escaping symlinks are "
                    "refused); check the commit and that the destination is writable"
                ) from err
            try:
                scratch.rename(dest)
            except OSError:
                if not dest.is_dir():  # not a concurrent export that won the race
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return dest
