"""Settings read once at start-up (prefix ``INFERX_``) and passed down.

Nothing in the package reads the environment at import time; commands build one
``Settings`` and hand it (or the paths in it) to the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_root() -> Path:
    # The checkout that holds the package (editable install), else the working directory.
    here = Path(__file__).resolve().parent.parent
    return here if (here / "catalog").is_dir() else Path.cwd()


class Settings(BaseSettings):
    """Where the project's data and state live."""

    model_config = SettingsConfigDict(env_prefix="INFERX_", extra="ignore")

    root: Path = Field(default_factory=_default_root, description="Project checkout root.")
    state_dir: Path | None = Field(
        default=None,
        description="Local state (artifacts, site, Dagster home); default ROOT/.inferx.",
    )
    database_url: str | None = Field(
        default=None, description="Results database URL; default a SQLite file in the state dir."
    )
    launcher: Literal["sim", "docker", "local", "slurm"] = Field(
        default="sim",
        description="Where the Dagster launcher resource runs sweeps by "
        "default): simulator child processes, Docker hosts, this host, or Slurm (with "
        "runner_pools naming a kind: slurm pools file).",
    )
    sim_time_scale: float = Field(
        default=1.0,
        gt=0,
        description="Simulator: multiplies its simulated durations, for the launcher "
        "resource of every run a deployment starts and every command's --time-scale "
        "default (0.05: 20 times faster than real time).",
    )
    recipe_checks: Literal["enforce", "parity"] = Field(
        default="enforce",
        description="What the pipeline holds its recipes to: enforce (a recipe breaking a "
        "pre-GPU rule has no jobs; identical jobs are an error) or parity (InferenceX's own "
        "rules: every parsed recipe runs, identical jobs are kept, as `inferx matrix "
        "--no-policy --allow-duplicates`), for a project imported from InferenceX while "
        "its recipes are brought up to the rules.",
    )
    local_host: Path | None = Field(
        default=None,
        description="Local launcher: host file (engine programs, model store); "
        "default STATE/local-host.yaml.",
    )
    runner_pools: Path | None = Field(
        default=None,
        description="Runner-pools YAML: Docker hosts per SKU, or Slurm pools (kind: slurm, "
        "required by launcher slurm); default none.",
    )
    registries: Path | None = Field(
        default=None, description="Registry-config YAML for the image sensor; default Docker Hub."
    )
    recipes_repo: str | None = Field(
        default=None, description="Git repository (path or URL) the recipe-change sensor watches."
    )
    recipes_branch: str = Field(default="main", description="Branch of recipes_repo to watch.")
    forge_repo: str | None = Field(
        default=None,
        description="The recipe repository on its forge, OWNER/NAME, whose labeled pull requests "
        "are swept as unofficial runs; default none (no pull request is watched).",
    )
    forge_api: str = Field(
        default="https://api.github.com", description="The forge's REST API base URL."
    )
    forge_token_env: str = Field(
        default="GITHUB_TOKEN",
        description="Name of the environment variable holding the forge token (read at call "
        "time, never stored); without it PRs are read anonymously and reports not posted.",
    )
    site_url: str | None = Field(
        default=None,
        description="Public base URL of the leaderboard site, for links in PR reports; default "
        "the site directory's file URL.",
    )
    code_url: str | None = Field(
        default=None,
        description="Web URL of this repository (https://github.com/ORG/REPO): the Dagster UI "
        "links each asset's code there; default local file references only.",
    )
    code_branch: str = Field(default="main", description="Branch code_url links point into.")
    lm_eval_python: Path | None = Field(
        default=None,
        description="Accuracy evals: the python of a venv holding lm-eval; default the cached "
        "venv scripts/lm-eval-env builds.",
    )
    hf_home: Path = Field(
        default_factory=lambda: Path.home() / ".cache" / "huggingface",
        description="Accuracy evals: the Hugging Face home whose datasets cache holds the "
        "host's eval datasets (read offline).",
    )

    @property
    def recipes_dir(self) -> Path:
        return self.root / "recipes"

    @property
    def golden_dir(self) -> Path:
        return self.root / "golden_al_distribution"

    @property
    def catalog_dir(self) -> Path:
        return self.root / "catalog"

    @property
    def state(self) -> Path:
        return self.state_dir if self.state_dir is not None else self.root / ".inferx"

    @property
    def local_host_file(self) -> Path:
        return self.local_host if self.local_host is not None else self.state / "local-host.yaml"

    @property
    def artifacts_dir(self) -> Path:
        return self.state / "artifacts"

    @property
    def site_dir(self) -> Path:
        return self.state / "site"

    @property
    def dagster_home(self) -> Path:
        """The embedded Dagster instance's home (runs, event log, schedules)."""
        return self.state / "dagster"

    @property
    def results_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state / 'results.sqlite'}"
