"""The sweep's image preflight: probe a group's image once per digest, then check its rules.

::

    hook = ImagePreflight(DockerProbeRunner(client), FactCache.under(settings.state),
                          cached_policy(settings.catalog_dir), simulated=False)
    facts = hook(job, spec)      # PreflightError naming the fact when a rule is broken

Probes come from ``launch/probes.yaml`` for the job's engine (``sim`` for the simulator
image standing in for one); facts are cached by image digest, so a second sweep on the
same image starts no probe container. The rules are ``image_policy.image_rules``.
"""

from __future__ import annotations

from collections.abc import Callable

from inferx_pipeline.launch.preflight import (
    FactCache,
    ImageFacts,
    ProbeRunner,
    ProbeTable,
    check_facts,
    default_probes,
    preflight,
)
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.sweep.image_policy import SIM_ENGINE, image_rules, with_catalog_facts

# Checks a group's image before its server starts: the facts read (None when the backend
# has no image to read), or PreflightError naming the broken fact.
Preflight = Callable[[BenchmarkJob, ServerSpec], ImageFacts | None]


def no_preflight(job: BenchmarkJob, spec: ServerSpec) -> None:
    """The preflight of launchers without images (the subprocess simulator)."""


class ImagePreflight:
    """A ``Preflight`` reading facts with ``runner`` (cached in ``cache``) and checking ``data``.

    ``simulated``: the image is the simulator standing in for each job's engine, so the
    sim probes run and no engine gate applies (the image's Python rule still does).
    """

    def __init__(
        self,
        runner: ProbeRunner,
        cache: FactCache,
        data: PolicyData,
        *,
        simulated: bool,
        probes: ProbeTable | None = None,
    ) -> None:
        self.runner = runner
        self.cache = cache
        self.data = data
        self.simulated = simulated
        self.probes = probes or default_probes()

    def __call__(self, job: BenchmarkJob, spec: ServerSpec) -> ImageFacts:
        """The image's facts; PreflightError for a broken rule, LaunchError if it cannot run."""
        engine = SIM_ENGINE if self.simulated else job.engine.framework
        read = preflight(spec.image, self.probes.for_engine(engine), self.runner, self.cache)
        facts = with_catalog_facts(read, self.data, engine=engine)
        check_facts(facts, image_rules(job, spec, self.data, engine=engine))
        return facts
