"""ServerSpec builders shared by the launcher tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from inferx_pipeline.launch.spec import ClientSettings, GpuRequest, ServerSpec

STANDIN = Path(__file__).with_name("standin_server.py")


def make_spec(argv: tuple[str, ...], **overrides: Any) -> ServerSpec:
    """A CPU-only spec around ``argv`` with test-friendly defaults."""
    fields: dict[str, Any] = {
        "name": "test-server",
        "fingerprint": "f" * 64,
        "image": "unused",
        "argv": argv,
        "gpus": GpuRequest(vendor="none", count=0),
        "port": 0,
        "startup_timeout_s": 20.0,
        "client": ClientSettings(api="completions", model_name="sim"),
    }
    return ServerSpec(**{**fields, **overrides})


def standin_spec(*args: str, **overrides: Any) -> ServerSpec:
    """A spec running the stand-in server script with this interpreter."""
    return make_spec((sys.executable, str(STANDIN), "--port", "{port}", *args), **overrides)


SIM_ARGS = ("--sku", "h200", "--model-family", "qwen3.8-27b")


def sim_spec(*args: str, program: tuple[str, ...] = ("inferx",), **overrides: Any) -> ServerSpec:
    """A spec running the real simulator (``inferx sim serve``) on ``{port}``."""
    argv = (*program, "sim", "serve", "--host", "127.0.0.1", "--port", "{port}", *SIM_ARGS, *args)
    return make_spec(argv, **{"name": "sim-h200", **overrides})
