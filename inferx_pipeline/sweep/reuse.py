"""Reuse instead of rerun: a point whose identity already has a good result is skipped.

A point's identity is everything that can change its result: the job fingerprint and
concurrency (the same server and load), the image digest (the same bytes), the client
version (the same measuring code), the dataset the requests are built from with its
seed, the sweep options that shape the measurement (request count, warmup, deadlines)
and the validity policy version (the rules that judged the result good). Options that
cannot change a result (``force``, ``fail_fast``) stay out, and so do the agentic
options for fixed-length jobs, whose dataset ignores them.

``ReuseIndex`` finds the latest ``ok`` attempt with that identity in the artifact
store; the runner reports such a point as ``reused`` (unless forced), so a sensor or
backfill that asks again costs no GPU time. Only ``ok`` attempts carry an identity
(``recording``), so an invalid point is never reused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from importlib.metadata import version
from typing import Any, Protocol

import docker
import orjson
from docker.errors import DockerException, ImageNotFound
from pydantic import JsonValue

from inferx_pipeline.bench.validity import ValidityRules
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.launch.docker import image_digest
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.artifacts import ArtifactStore, AttemptManifest
from inferx_pipeline.sweep.measure import dataset_for
from inferx_pipeline.sweep.report import SweepOptions
from inferx_pipeline.sweep.status import SweepPolicy

# The sweep options that shape a measurement (the dataset's own options aside).
MEASUREMENT_OPTIONS = frozenset(
    {"prompts_per_conc", "num_prompts", "warmup_prompts", "point_deadline_s", "request_timeout_s"}
)
# Simulator options that cannot change a simulated result.
SIM_UNSHAPING = frozenset({"image", "load_time_s", "startup_timeout_s"})
# Policy fields that document rather than judge.
UNJUDGED = frozenset({"source", "rationale"})


def client_version() -> str:
    """The measuring client's version (the installed inferx-pipeline), as RawResult records it."""
    return version("inferx-pipeline")


class PointIdentity(FrozenModel):
    """What makes two measurements of a point interchangeable."""

    fingerprint: str
    conc: int
    image_digest: str
    client_version: str
    dataset: dict[str, JsonValue]
    dataset_seed: int
    measurement: dict[str, JsonValue]
    policy_version: str

    @property
    def key(self) -> str:
        """sha256 hex of the identity's canonical JSON."""
        doc = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(doc).hexdigest()


def policy_version(policy: SweepPolicy, rules: ValidityRules) -> str:
    """A short content hash of the rules that judge a point good (sweep policy + validity).

    Changes with any threshold; not with the ``source`` and ``rationale`` texts.
    """
    doc = {
        "sweep": policy.model_dump(mode="json", exclude=set(UNJUDGED)),
        "validity": rules.model_dump(mode="json", exclude=set(UNJUDGED)),
    }
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def point_identity(
    job: BenchmarkJob,
    *,
    image_digest: str,
    client: str,
    options: SweepOptions,
    policy: str,
) -> PointIdentity:
    """The identity of ``job`` measured on ``image_digest`` by client ``client`` with
    ``options``, judged under policy version ``policy`` (``policy_version``)."""
    return PointIdentity(
        fingerprint=job.fingerprint,
        conc=job.conc,
        image_digest=image_digest,
        client_version=client,
        dataset=dataset_for(job, options).model_dump(mode="json"),
        dataset_seed=options.seed,
        measurement=options.model_dump(mode="json", include=set(MEASUREMENT_OPTIONS)),
        policy_version=policy,
    )


class DigestSource(Protocol):
    """Resolves an image reference to the digest a run would use; None when unknown."""

    def digest(self, image: str) -> str | None: ...


class FixedDigests:
    """Every image resolves through ``mapping``, else to ``default`` (simulated runs, tests)."""

    def __init__(self, default: str | None, mapping: Mapping[str, str] | None = None) -> None:
        self.default = default
        self.mapping = dict(mapping or {})

    def digest(self, image: str) -> str | None:
        return self.mapping.get(image, self.default)


def simulated_digest(options: SimOptions | None = None) -> str:
    """The stand-in digest of simulator runs: the simulator's version and its options.

    It never equals a real image digest, so simulated results never stand in for real
    ones. The options that shape the simulated numbers (time scale, injected errors and
    crashes, seeds) are part of it; those that only wait or locate (load time, startup
    deadline, image) are not.
    """
    shaping = (options or SimOptions()).model_dump(mode="json", exclude=set(SIM_UNSHAPING))
    sha = hashlib.sha256(orjson.dumps(shaping, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"simulated:inferx-pipeline-{client_version()}:{sha[:12]}"


class DockerDigests:
    """Digests of images already on a Docker host (None when absent: it will be pulled)."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client

    def digest(self, image: str) -> str | None:
        try:
            found: Any = self.client.images.get(image)
        except (ImageNotFound, DockerException):
            return None
        return image_digest(found.attrs)


class ReuseIndex:
    """Identity key -> the latest ``ok`` attempt with that identity, from an artifact store."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self._good: dict[str, AttemptManifest] = {}
        for manifest in store.all_attempts():
            if manifest.status == "ok" and manifest.identity is not None:
                best = self._good.get(manifest.identity)
                if best is None or manifest.finished_at >= best.finished_at:
                    self._good[manifest.identity] = manifest

    def lookup(self, identity: PointIdentity) -> AttemptManifest | None:
        """The attempt to reuse for ``identity``, None when it must be measured."""
        return self._good.get(identity.key)

    def add(self, manifest: AttemptManifest) -> None:
        """Remember a new good attempt (the runner calls this as it records results)."""
        if manifest.status == "ok" and manifest.identity is not None:
            self._good[manifest.identity] = manifest
