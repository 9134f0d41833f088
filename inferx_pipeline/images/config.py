"""How to reach image registries: base URL per registry host, credential variable names.

::

    RegistryConfig(hosts={"docker.io": RegistryHost(url="http://127.0.0.1:5000")})

serves Docker Hub names (``vllm/vllm-openai:...``) from a local mirror. Credentials are
never written here: ``username_env`` and ``password_env`` name the environment variables
that hold them.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.images.refs import DOCKER_HUB
from inferx_pipeline.strict import StrictModel

DOCKER_HUB_URL = "https://registry-1.docker.io"


class RegistryHost(StrictModel):
    """How to reach one registry host."""

    url: str | None = Field(
        default=None,
        pattern=r"^https?://[^/\s]+(/\S*)?$",
        description=(
            "Base URL of the Registry API (scheme://host[:port]); none = https://HOST "
            "(http:// for localhost and 127.x; Docker Hub: https://registry-1.docker.io). "
            "A mirror: http://127.0.0.1:5000."
        ),
    )
    username_env: str | None = Field(
        default=None, min_length=1, description="Environment variable holding the user name."
    )
    password_env: str | None = Field(
        default=None,
        min_length=1,
        description="Environment variable holding the password or access token.",
    )

    @model_validator(mode="after")
    def _both_or_neither(self) -> RegistryHost:
        if (self.username_env is None) != (self.password_env is None):
            raise ValueError("set both username_env and password_env, or neither")
        return self


class RegistryConfig(StrictModel):
    """Registry hosts, their base URLs and credential variable names; request limits."""

    hosts: dict[str, RegistryHost] = Field(
        default_factory=dict,
        description="Registry host (as in image references, e.g. docker.io, nvcr.io) -> how "
        "to reach it; hosts not listed are reached without credentials at https://HOST "
        "(http:// for localhost and 127.x, as dockerd does).",
    )
    timeout_s: float = Field(default=30.0, gt=0, description="Per-request timeout, seconds.")
    page_size: int = Field(default=100, ge=1, description="Tags asked for per page (n).")
    max_pages: int = Field(
        default=1000, ge=1, description="Stop following Link pages after this many."
    )

    def host(self, registry: str) -> RegistryHost:
        """Settings for ``registry`` (the defaults when it is not listed)."""
        return self.hosts.get(registry, RegistryHost())

    def base_url(self, registry: str) -> str:
        """The API base URL for ``registry``."""
        url = self.host(registry).url
        if url is not None:
            return url.rstrip("/")
        if registry == DOCKER_HUB:
            return DOCKER_HUB_URL
        # dockerd talks plain HTTP to loopback registries by default; so do we.
        return f"{'http' if _loopback(registry) else 'https'}://{registry}"


def _loopback(registry: str) -> bool:
    name = registry.rsplit(":", 1)[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def load_registry_config(path: Path | None) -> RegistryConfig:
    """The registry config in ``path`` (INFERX_REGISTRIES); defaults when ``path`` is None.

    Raises CatalogError naming the file and the field when it is unreadable or malformed.
    """
    if path is None:
        return RegistryConfig()
    return read_model(path, RegistryConfig, "registry config (see deploy/registries.example.yaml)")
