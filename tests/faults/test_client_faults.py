"""``inferx bench`` against a stub that breaks the stream: each shape is a counted failure.

Every malformed event, a silent server, a trickling one and an early close end each
request with a reason in the result's ``errors``; the run ends in bounded time and
exits 1 when no request completed (also when a deadline cut the run first).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from inferx_pipeline.cli import cli
from tests.faults.stub import Shape, StubServer

REQUESTS = 3
RUN_BOUND_S = 20.0  # the whole run, malformed or silent, ends well within this
GOOD = b'{"choices": [{"text": "a "}]}'
USAGE = b'{"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}'

MALFORMED: dict[str, tuple[bytes, str]] = {
    "not-json": (b"{not json", "expected a JSON object or [DONE]"),
    "not-an-object": (b"[1, 2]", "expected a JSON object"),
    "choices-not-a-list": (b'{"choices": {"text": "a"}}', "expected choices as a list"),
    "null-choices": (b'{"choices": null}', "expected choices as a list"),
    "choice-not-an-object": (b'{"choices": [null]}', "expected each choice as an object"),
    "usage-not-an-object": (b'{"choices": [], "usage": 7}', "expected usage as an object"),
    "usage-not-integer": (
        b'{"choices": [], "usage": {"completion_tokens": "two"}}',
        "token counts in usage as non-negative integers",
    ),
    "usage-fraction": (
        b'{"choices": [], "usage": {"completion_tokens": 1.5}}',
        "token counts in usage as non-negative integers",
    ),
    "error-event": (b'{"error": {"message": "boom"}}', "error event from"),
}


def _bench(url: str, out: Path, *flags: str) -> tuple[Result, float]:
    args = [
        "bench", "--endpoint", url, "--model", "m", "--input-len", "4", "--output-len", "2",
        "--num-prompts", str(REQUESTS), "--result", str(out), *flags,
    ]  # fmt: skip
    started = time.monotonic()
    got = CliRunner().invoke(cli, args)
    return got, time.monotonic() - started


def _failed_run(got: Result, out: Path, elapsed: float) -> dict[str, object]:
    assert got.exit_code == 1, got.output
    assert elapsed < RUN_BOUND_S
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exception
    data = json.loads(out.read_text())
    assert data["completed"] == 0
    return dict(data)


def test_a_well_formed_stream_completes(tmp_path: Path) -> None:
    with StubServer(Shape((GOOD, GOOD, USAGE))) as stub:
        got, _ = _bench(stub.url, tmp_path / "r.json")
    assert got.exit_code == 0, got.output
    assert json.loads((tmp_path / "r.json").read_text())["completed"] == REQUESTS


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_event_is_a_failed_request_with_its_reason(name: str, tmp_path: Path) -> None:
    event, reason = MALFORMED[name]
    out = tmp_path / "r.json"
    with StubServer(Shape((GOOD, event, USAGE))) as stub:
        got, elapsed = _bench(stub.url, out)
    data = _failed_run(got, out, elapsed)
    assert data["failed"] == REQUESTS
    errors = [str(e) for e in data["errors"]]  # type: ignore[attr-defined]  # a JSON list
    assert len(errors) == REQUESTS and all(reason in e for e in errors), errors
    assert (
        got.output.strip()
        .splitlines()[-1]
        .startswith(f"Error: all {REQUESTS} requests failed; first: ")
    )


@pytest.mark.parametrize(
    ("ending", "flags", "reason"),
    [
        ("silence", ("--idle-timeout-s", "0.3"), "no bytes for 0.3 s"),
        ("trickle", ("--idle-timeout-s", "5", "--total-timeout-s", "0.5"), "after 0.5 s"),
        ("close", (), "closed the stream after 1 chunks"),
    ],
)
def test_silence_trickle_and_early_close_fail_in_bounded_time(
    ending: str, flags: tuple[str, ...], reason: str, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    with StubServer(Shape((GOOD,), ending=ending)) as stub:  # type: ignore[arg-type]
        got, elapsed = _bench(stub.url, out, *flags)
    data = _failed_run(got, out, elapsed)
    assert data["failed"] == REQUESTS
    assert all(reason in str(e) for e in data["errors"]), data["errors"]  # type: ignore[attr-defined]


def test_a_deadline_before_any_answer_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with StubServer(Shape((), ending="silence")) as stub:
        got, elapsed = _bench(stub.url, out, "--deadline-s", "0.5", "--idle-timeout-s", "60")
    _failed_run(got, out, elapsed)
    assert "no request completed before the deadline" in got.output
