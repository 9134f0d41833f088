"""README.md's commands as a user types them: extracted from its bash blocks, run in a shell.

``readme_commands`` reads every line of every fenced ``bash`` block (indented ones too),
without its trailing ``# comment``. ``Shell`` runs one of them with ``bash -c`` in a checkout
copy (symlinks to the repository's entries, so files a command writes, like
``recipe.schema.json``, land in the copy), its placeholders filled, and either waits for
its exit or, for a command the README says Ctrl-C stops, waits until it answers, then
sends SIGINT to its process group as a terminal's Ctrl-C does.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import ROOT

README = ROOT / "README.md"
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S+$")
# The entries a checkout copy leaves out: state and caches a command must not share.
_NOT_COPIED = {".git", ".inferx", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
STOP_GRACE_S = 90.0


@dataclass(frozen=True)
class Command:
    """One line of a README bash block: its text without the comment, and where it is."""

    text: str
    line: int
    block: int


def _strip_comment(line: str) -> str:
    """``line`` without a ``# comment`` that starts outside quotes after whitespace."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def readme_commands(text: str) -> list[Command]:
    """Every command line of ``text``'s ``bash`` blocks, in order (blank and comment-only
    lines left out)."""
    commands: list[Command] = []
    indent: str | None = None
    block = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        fence = _FENCE.match(raw)
        if fence and indent is None:
            if fence.group(2) == "bash":
                indent, block = fence.group(1), block + 1
            continue
        if fence and indent is not None:
            indent = None
            continue
        if indent is None:
            continue
        line = _strip_comment(raw.strip())
        if line:
            commands.append(Command(line, number, block))
    return commands


def is_assignment(command: Command) -> bool:
    """A ``NAME=value`` line: it sets a shell variable for the later lines of its block."""
    return bool(_ASSIGNMENT.match(command.text))


def checkout_copy(path: Path, *, min_duration_s: float) -> Path:
    """A folder of symlinks to the repository's top-level entries (state and caches left
    out), whose validity rules ask ``min_duration_s`` of a point: the README's stated test
    variant, so each point lasts about that long instead of the shipped 10 s."""
    path.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in {*_NOT_COPIED, "catalog"}:
            (path / entry.name).symlink_to(entry)
    (path / "catalog").mkdir()
    for entry in (ROOT / "catalog").iterdir():
        (path / "catalog" / entry.name).symlink_to(entry)
    rules = path / "catalog" / "bench-validity.yaml"
    shipped = (ROOT / "catalog" / "bench-validity.yaml").read_text()
    rules.unlink()
    rules.write_text(
        re.sub(r"(?m)^min_duration_s: .*$", f"min_duration_s: {min_duration_s}", shipped)
    )
    return path


def fill(text: str, values: dict[str, str]) -> str:
    """``text`` with each placeholder word of ``values`` replaced (whole words only)."""
    for word, value in values.items():
        text = re.sub(rf"(?<![\w$.-]){re.escape(word)}(?![\w-])", value, text)
    return text


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Shell:
    """Runs README commands in ``cwd`` with ``env``, recording which ran (by README text)."""

    commands: list[Command]
    cwd: Path
    env: dict[str, str]
    logs: Path
    ran: set[str] = field(default_factory=set)

    def _script(self, text: str, values: dict[str, str], extra: str) -> str:
        matches = [c for c in self.commands if c.text == text and not is_assignment(c)]
        assert matches, f"README.md has no command {text!r} any more"
        command = matches[0]
        prelude = [
            c.text
            for c in self.commands
            if c.block == command.block and c.line < command.line and is_assignment(c)
        ]
        self.ran.update([text, *prelude])
        return "\n".join([*prelude, fill(text, values) + extra])

    def run(
        self, text: str, values: dict[str, str] | None = None, timeout_s: float = 600.0,
        extra: str = "", env: dict[str, str] | None = None,
    ) -> str:  # fmt: skip
        """Run README command ``text`` to its end; its stdout. Fails unless it exits 0."""
        script = self._script(text, values or {}, extra)
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        self._timed(text, time.monotonic() - started)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{script!r} exited {done.returncode}:\n{output[-4000:]}"
        return done.stdout

    def _timed(self, text: str, seconds: float) -> None:
        # Where the test's time goes, one line per command, under the test's output.
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / "timings.tsv").open("a") as out:
            out.write(f"{seconds:.1f}\t{text}\n")

    @contextmanager
    def serving(
        self, text: str, ready: Callable[[str], str | None], values: dict[str, str] | None = None,
        extra: str = "", deadline_s: float = 240.0, env: dict[str, str] | None = None,
    ) -> Iterator[str]:  # fmt: skip
        """Start README command ``text``; yield what ``ready(output)`` returns once it is not
        None; then Ctrl-C (SIGINT to its group): it must exit 0."""
        script = self._script(text, values or {}, extra)
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"serve-{len(self.ran)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", script],
                cwd=self.cwd,
                env={**self.env, **(env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + deadline_s
            while (value := ready(log.read_text(errors="replace"))) is None:
                assert proc.poll() is None, f"{script!r} exited:\n{log.read_text()[-4000:]}"
                assert time.monotonic() < deadline, f"{script!r} not ready:\n{log.read_text()}"
                time.sleep(0.5)  # polling the command's output and port, under a deadline
            yield value
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(STOP_GRACE_S)
            assert code == 0, f"{script!r} exited {code} on Ctrl-C:\n{log.read_text()[-4000:]}"
        finally:
            if proc.poll() is None:  # a failed check: Ctrl-C first, so it stops what it started
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
