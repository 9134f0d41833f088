"""Dagster resources: where the project lives, how sweeps launch, where results go.

Configurable in the UI's launchpad (``project``, ``launcher``, ``results``, ``evals``); the
registry and the watched recipe repository are plain objects handed in by
``definitions.build_definitions`` so that tests pass the package's fakes.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.evals.harness import Harness, LmEvalHarness
from inferx_pipeline.gitrepo import WatchedRepo
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import BackendSource
from inferx_pipeline.sweep.evaluate import EvalSetup, eval_setup
from inferx_pipeline.sweep.launchers import LauncherChoice


class ProjectResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # generic in what it yields; yields itself
    """The checkout (recipes, golden curves, catalog) and the local state directory."""

    root: str = Field(
        description="Project root holding recipes/, golden_al_distribution/, catalog/."
    )
    state_dir: str = Field(description="Artifacts, logs, site and local state.")

    def settings(self) -> Settings:
        """The package settings for this project (other fields from INFERX_* as usual)."""
        return Settings(root=Path(self.root), state_dir=Path(self.state_dir))

    def artifacts(self) -> ArtifactStore:
        """The content-addressed artifact store every sweep records into."""
        return ArtifactStore(self.settings().artifacts_dir)


class ResultsResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # generic in what it yields; yields itself
    """The results database (SQLite file by default, PostgreSQL by URL).

    A URL may hold a password: pass it as ``dg.EnvVar("INFERX_DATABASE_URL")`` so that
    run storage and snapshots record the variable's name, never its value.
    """

    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the results database; none: results.sqlite in the "
        "project's state directory.",
    )

    def url(self, project: ProjectResource) -> str:
        """The URL to open: the configured one, else the project's SQLite file."""
        return self.database_url or project.settings().results_url


class LauncherResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # generic in what it yields; yields itself
    """Where sweep servers start, for every run of the deployment: the launcher and its
    simulator settings. How big each point is (prompts, seed, reuse) is the sweep asset's
    run config, chosen per run."""

    kind: str = Field(
        default="sim",
        description="sim (child processes), docker (runner pools), local (engines on this "
        "host) or slurm (batch jobs on Slurm pools).",
    )
    pools_file: str | None = Field(
        default=None,
        description="Docker: runner-pools YAML; Slurm: a kind: slurm pools file (required).",
    )
    host_file: str | None = Field(
        default=None, description="Local: engine programs and model store of this host."
    )
    sim_image: str | None = Field(
        default=None, description="Docker, Slurm: run this simulator image, not the engines."
    )
    time_scale: float = Field(
        default=1.0, description="Simulator: multiplies simulated time (0.02: 50x faster)."
    )
    load_time_s: float | None = Field(
        default=None, description="Simulator: model-load wait, s (none: the simulator's)."
    )
    answer_key: str | None = Field(
        default=None,
        description="Simulator: answer evals from this answer-key file (none: filler, scoring 0).",
    )
    answer_share: float = Field(
        default=1.0, description="Simulator: share of the answer key answered right."
    )

    @classmethod
    def of(cls, choice: LauncherChoice) -> LauncherResource:
        """The resource for a launcher given as the library's model."""
        return cls(
            kind=choice.kind,
            pools_file=str(choice.pools_file) if choice.pools_file else None,
            host_file=str(choice.host_file) if choice.host_file else None,
            sim_image=choice.sim_image,
            time_scale=choice.sim.time_scale,
            load_time_s=choice.sim.load_time_s,
            answer_key=str(choice.sim.answer_key) if choice.sim.answer_key else None,
            answer_share=choice.sim.answer_share,
        )

    def run_config(self) -> dict[str, object]:
        """Run config setting every field of this resource on the ``launcher`` resource.

        How a command passes its launcher to a run: through run config (recorded with the
        run, shown in the launchpad), not through definitions built per process, whose job
        snapshots would then differ from the code location's and make the UI warn of a
        different job version on re-execution.
        """
        return {"resources": {"launcher": {"config": self.model_dump()}}}

    def choice(self) -> LauncherChoice:
        """The launcher these settings describe (validated)."""
        sim = SimOptions(
            time_scale=self.time_scale,
            load_time_s=self.load_time_s,
            answer_key=Path(self.answer_key) if self.answer_key else None,
            answer_share=self.answer_share,
        )
        return LauncherChoice.model_validate(
            {
                "kind": self.kind,
                "sim": sim,
                "sim_image": self.sim_image,
                "pools_file": self.pools_file,
                "host_file": self.host_file,
            }
        )

    def source(self, settings: Settings, *, run_id: str, skus: list[str]) -> BackendSource:
        """Where this run's servers start (secrets read from this process's environment)."""
        return self.choice().source(settings, run_id=run_id, skus=skus, environ=os.environ)


class EvalsResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # generic in what it yields; yields itself
    """How a sweep run scores its eval jobs: lm-eval, set up as ``inferx sweep`` sets it up.

    Used only by runs whose config asks for evals. Unset fields keep the project's
    settings: INFERX_LM_EVAL_PYTHON (else the venv scripts/lm-eval-env creates) and
    INFERX_HF_HOME (the Hugging Face cache the eval datasets are read from).
    """

    lm_eval_python: str | None = Field(
        default=None, description="Python of a venv holding lm-eval[api]; none: the settings'."
    )
    hf_home: str | None = Field(
        default=None, description="Hugging Face home whose datasets cache the evals read."
    )

    def harness(self) -> Harness:
        """The harness that scores each eval job: the real lm-eval."""
        return LmEvalHarness()

    def setup(self, settings: Settings) -> EvalSetup:
        """The ``EvalSetup`` of ``settings`` with this resource's choices applied."""
        chosen = {"lm_eval_python": self.lm_eval_python, "hf_home": self.hf_home}
        update = {name: Path(value) for name, value in chosen.items() if value is not None}
        return eval_setup(settings.model_copy(update=update), self.harness())


class RecipeRepoResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # generic in what it yields; yields itself
    """The git repository whose merged recipe changes the recipe sensor reruns."""

    source: str | None = Field(
        default=None, description="Local path or URL of the repository; none = not watched."
    )
    branch: str = Field(default="main", description="Branch to watch.")

    def watched(self, state: Path) -> WatchedRepo | None:
        """The repository, mirrored under ``state/git``; None when none is configured."""
        if self.source is None:
            return None
        return WatchedRepo(self.source, self.branch, mirror_dir=state / "git")
