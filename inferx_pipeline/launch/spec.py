"""What a launcher starts: the ServerSpec, built by an engine adapter, launched by any launcher."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.envnames import EnvName
from inferx_pipeline.strict import FrozenModel

GpuVendor = Literal["nvidia", "amd", "none"]
WorkerRole = Literal["prefill", "decode", "aggregated"]
# How a router drives its workers: SGLang's bootstrap handshake (prefill and decode at
# once), vLLM's kv_transfer_params (prefill, then decode), or plain load balancing.
RouterMode = Literal["pd-sglang", "pd-vllm", "regular"]


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


class WorkerSpec(FrozenModel):
    """One worker of a multinode deployment: its role, its nodes and its commands.

    Besides ``{port}`` and ``{model}``, the argv may hold ``{bootstrap_port}`` (where a
    prefill worker hands out its KV), and for a worker spanning several nodes ``{rank}``,
    ``{nnodes}``, ``{master}`` (the first node's host name) and ``{master_port}``.
    """

    role: WorkerRole
    index: int = Field(ge=0, description="Replica number within its role.")
    nodes: tuple[int, ...] = Field(min_length=1, description="Allocation node indexes, 0-based.")
    gpus: int = Field(ge=0, description="GPUs of this worker over all its nodes.")
    argv: tuple[str, ...] = Field(min_length=1, description="Rank 0's command: it serves HTTP.")
    follower_argv: tuple[str, ...] = Field(
        default=(), description="The command of ranks > 0 when it differs from argv."
    )

    @property
    def label(self) -> str:
        """``decode[0]``: how errors and logs name the worker."""
        return f"{self.role}[{self.index}]"


class RouterSpec(FrozenModel):
    """The released router in front of a deployment's workers, started by the launcher."""

    name: str = Field(description="The router that runs: sglang-router or vllm-router.")
    version: str = Field(description="Its pinned version (a project dependency).")
    module: str = Field(description="Its Python entry point: python -m <module>.")
    mode: RouterMode
    recipe_router: str | None = Field(
        default=None, description="The recipe's router when another one stands in for it."
    )


class DeploymentSpec(FrozenModel):
    """A multinode job's servers: workers on the nodes of one allocation, and a router."""

    nodes: int = Field(ge=1, description="Nodes of the allocation.")
    workers: tuple[WorkerSpec, ...] = Field(min_length=1)
    router: RouterSpec
    transfer: str | None = Field(description="KV transfer backend between prefill and decode.")

    @property
    def disaggregated(self) -> bool:
        """True when prefill and decode run on different workers."""
        return any(w.role == "prefill" for w in self.workers)


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
    deployment: DeploymentSpec | None = Field(
        default=None,
        description="Multinode jobs: the workers and router; argv is then the first worker's.",
    )
