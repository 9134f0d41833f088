"""Agentic traces: sessions of turns (new input, output, think time) in JSON Lines.

One session per line; see ``inferx_pipeline/bench/data/README.md`` for the format.
A trace is named (a file shipped in ``bench/data``) or given by path.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.errors import BenchError
from inferx_pipeline.strict import StrictModel

DATA_DIR = Path(__file__).parent / "data"


class TraceTurn(StrictModel):
    """One request of a session: tokens added to the context, tokens generated."""

    input_len: int = Field(gt=0, description="New tokens this turn (tool output, user text).")
    output_len: int = Field(gt=0, description="Tokens the model generates.")
    think_time_s: float = Field(
        default=0.0, ge=0, description="Pause after the previous turn ended (tool run, user)."
    )


class TraceSession(StrictModel):
    """A conversation replayed in order; sessions with one ``prefix_id`` share a prefix."""

    session_id: str
    prefix_id: str = Field(description="Sessions with the same id share the same prefix text.")
    prefix_len: int = Field(ge=0, description="Shared prefix tokens (system prompt, tools).")
    turns: list[TraceTurn] = Field(min_length=1)


def trace_path(trace: str) -> Path:
    """The file of a shipped trace name (``agentic-coding-small``) or of a path."""
    shipped = DATA_DIR / f"{trace}.jsonl"
    return shipped if shipped.is_file() else Path(trace)


def load_trace(trace: str) -> list[TraceSession]:
    """Sessions of a trace; raises BenchError naming file:line and the bad field."""
    path = trace_path(trace)
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        shipped = ", ".join(sorted(p.stem for p in DATA_DIR.glob("*.jsonl")))
        raise BenchError(
            f"{path}: cannot read agentic trace ({err.strerror}); "
            f"give a JSONL path or a shipped name: {shipped}"
        ) from err
    sessions = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            sessions.append(TraceSession.model_validate_json(line))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise BenchError(
                f"{path}:{number}: {where}: {first['msg']}; expected one session object "
                f"per line (see bench/data/README.md)"
            ) from err
    if not sessions:
        raise BenchError(f"{path}: no sessions; expected one JSON session per line")
    return sessions
