"""What a launcher starts: the ServerSpec, built by an engine adapter, launched by any launcher."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.envnames import EnvName
from inferx_pipeline.strict import FrozenModel

GpuVendor = Literal["nvidia", "amd", "none"]


class GpuRequest(FrozenModel):
    """Which accelerators a server needs; the launcher turns this into the vendor's access block."""

    vendor: GpuVendor = Field(description="From the SKU's catalog entry, never from a recipe.")
    count: int = Field(ge=0, description="GPUs for this server (tp x pp x pcp, single node).")


class ClientSettings(FrozenModel):
    """How the load generator must talk to this engine."""

    api: Literal["chat", "completions"] = Field(
        description="chat = /v1/chat/completions with the chat template; completions = raw."
    )
    model_name: str = Field(description="The `model` field the server answers to.")
    chat_template_kwargs: dict[str, bool | str | int] = Field(
        default_factory=dict, description="e.g. {'enable_thinking': true}."
    )
    tokenizer: Path | None = Field(
        default=None,
        description="The model's tokenizer.json on the client's host, for ISL/OSL; None = the "
        "simulator's word tokenizer (simulated runs only: real runs must name one).",
    )


class ServerSpec(FrozenModel):
    """One engine server, fully resolved: everything a launcher needs and nothing else.

    ``argv`` is an exec list (never a shell string). An argument equal to ``{port}``
    (or containing it) is replaced by the launcher with the port it serves on: a
    free port it chose, or ``0`` for launchers that read the bound port back from
    the server's ``INFERX_SIM_LISTENING <url>`` line. ``env`` holds literal values;
    ``secret_env`` holds only *names* of variables the launcher copies from its own
    environment, so secrets never enter specs, logs or artifacts.
    """

    name: str = Field(description="Readable server identity, e.g. the job id without conc.")
    fingerprint: str = Field(description="Server identity hash (job fingerprint).")
    image: str = Field(description="Container image reference; ignored by the subprocess launcher.")
    argv: tuple[str, ...] = Field(min_length=1)
    env: dict[EnvName, str] = Field(default_factory=dict)
    secret_env: tuple[EnvName, ...] = Field(
        default=(), description="Names passed through, by name."
    )
    gpus: GpuRequest
    port: int = Field(ge=0, le=65535, description="0 = let the launcher choose.")
    health_path: str = "/health"
    startup_timeout_s: float = Field(gt=0, description="Deadline for health to turn 200.")
    client: ClientSettings
    labels: dict[str, str] = Field(default_factory=dict, description="Extra container labels.")
