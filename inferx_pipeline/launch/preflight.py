"""Image preflight: read the facts recipes depend on from an image, before any GPU starts.

Each ``FactProbe`` (data: ``probes.yaml``, per engine) is a command run in the image
with its entrypoint overridden; the fact is the first version-like token it prints.
Facts are cached by image digest in a JSON file, so an image is probed once; a
supplied ``FactRule`` that fails raises ``PreflightError`` naming the fact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

import yaml
from pydantic import Field, ValidationError

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.errors import CatalogError, PreflightError
from inferx_pipeline.strict import FrozenModel, StrictModel

PROBES_FILE = Path(__file__).with_name("probes.yaml")
VERSION_PATTERN = r"(\d+(?:\.\d+)+\S*)"
PROBE_TIMEOUT_S = 120.0
FACTS_FILE = "image-facts.json"


class FactProbe(FrozenModel):
    """One fact and the command that prints it."""

    name: str = Field(description="Fact name, e.g. python_version, engine_version.")
    argv: tuple[str, ...] = Field(
        min_length=1, description="Run in the image, entrypoint overridden."
    )
    pattern: str = Field(default=VERSION_PATTERN, description="Regex; group 1 is the fact.")


class ProbeTable(StrictModel):
    """``probes.yaml``: probes every image gets plus per-engine ones."""

    source: str
    common: tuple[FactProbe, ...]
    engines: dict[str, tuple[FactProbe, ...]]

    def for_engine(self, engine: str) -> tuple[FactProbe, ...]:
        """The common probes plus ``engine``'s (none extra for an unknown engine)."""
        return (*self.common, *self.engines.get(engine, ()))


@cache
def default_probes() -> ProbeTable:
    """The probe table shipped with the package."""
    try:
        return ProbeTable.model_validate(yaml.safe_load(PROBES_FILE.read_text()))
    except (ValidationError, yaml.YAMLError) as err:
        raise CatalogError(f"{PROBES_FILE}: {err}") from err


class ImageFacts(FrozenModel):
    """What an image told us; a fact is None when its probe failed (unknown)."""

    image: str
    digest: str
    facts: dict[str, str | None]

    @property
    def python_version(self) -> str | None:
        return self.facts.get("python_version")

    @property
    def engine_version(self) -> str | None:
        return self.facts.get("engine_version")


def version_tuple(value: str | None) -> tuple[int, ...] | None:
    """``"3.11.2"`` -> ``(3, 11, 2)``; the leading numeric release only (pure)."""
    match = re.match(r"\d+(?:\.\d+)*", value or "")
    return tuple(int(p) for p in match.group(0).split(".")) if match else None


def version_at_least(value: str | None, minimum: str) -> bool:
    """Whether version ``value`` >= ``minimum`` by release numbers; unknown is False (pure)."""
    have, need = version_tuple(value), version_tuple(minimum)
    return have is not None and need is not None and have >= need


def version_in_range(value: str | None, minimum: str, below: str) -> bool:
    """Whether ``minimum`` <= ``value`` < ``below`` by release numbers; unknown is False (pure)."""
    have, stop = version_tuple(value), version_tuple(below)
    return (
        have is not None and stop is not None and version_at_least(value, minimum) and (have < stop)
    )


@dataclass(frozen=True)
class FactRule:
    """A named rule on one fact; ``check`` gets the fact (None = unknown).

    ``label`` names the fact in messages (``python``, ``sglang``); ``expected`` says
    what the rule asks for, e.g. ``agentic recipes need >= 3.11, < 3.14``.
    """

    name: str
    fact: str
    check: Callable[[str | None], bool]
    expected: str
    label: str = ""


def check_facts(facts: ImageFacts, rules: Sequence[FactRule]) -> None:
    """Raise ``PreflightError`` for the first rule ``facts`` break (pure).

    The message reads ``image IMG: python 3.10.12; agentic recipes need >= 3.11, < 3.14
    (rule image-facts); ...``: the fact as found, what the rule needs, the rule's name.
    """
    for rule in rules:
        value = facts.facts.get(rule.fact)
        if not rule.check(value):
            raise PreflightError(
                f"image {facts.image}: {rule.label or rule.fact} "
                f"{value if value is not None else 'unknown'}; {rule.expected} "
                f"(rule {rule.name}); image digest {facts.digest}: use an image that "
                "satisfies it or change the recipe"
            )


class ProbeRunner(Protocol):
    """Runs commands in an image (the Docker one is ``DockerProbeRunner``)."""

    def digest(self, image: str) -> str:
        """The image's content digest (pulling it first if the runner's policy says so)."""
        ...

    def run(self, image: str, argv: tuple[str, ...], timeout_s: float) -> tuple[int, str]:
        """Exit code and output of ``argv`` in ``image``; a timeout reads as non-zero."""
        ...


class FactCache:
    """Facts by image digest in one JSON file; a fact is reused only for the same argv."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def under(cls, state_dir: Path) -> FactCache:
        """The cache file in a state dir (``Settings().state``): ``image-facts.json``."""
        return cls(state_dir / FACTS_FILE)

    def load(self) -> dict[str, dict[str, dict[str, object]]]:
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text())
        except json.JSONDecodeError:
            return {}  # a torn or hand-broken cache is rebuilt, not fatal
        return data if isinstance(data, dict) else {}

    def lookup(self, digest: str, probe: FactProbe) -> tuple[bool, str | None]:
        entry = self.load().get(digest, {}).get(probe.name)
        if entry is None or entry.get("argv") != list(probe.argv):
            return False, None
        value = entry.get("value")
        return True, value if isinstance(value, str) else None

    def store(self, digest: str, found: dict[FactProbe, str | None]) -> None:
        data = self.load()
        entry = data.setdefault(digest, {})
        for probe, value in found.items():
            entry[probe.name] = {"argv": list(probe.argv), "value": value}
        # A concurrent reader sees the old or the new file, even after a crash.
        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True).encode())


def read_fact(runner: ProbeRunner, image: str, probe: FactProbe) -> str | None:
    """Run one probe; None when it fails or prints nothing matching its pattern."""
    code, output = runner.run(image, probe.argv, PROBE_TIMEOUT_S)
    match = re.search(probe.pattern, output) if code == 0 else None
    return match.group(1) if match else None


def preflight(
    image: str,
    probes: Sequence[FactProbe],
    runner: ProbeRunner,
    cache: FactCache,
    rules: Sequence[FactRule] = (),
) -> ImageFacts:
    """Facts of ``image`` for ``probes`` (cached by digest), checked against ``rules``.

    Only probes missing from the cache run. Raises ``PreflightError`` when a rule
    fails, ``LaunchError`` when the image cannot be found or pulled.
    """
    digest = runner.digest(image)
    facts: dict[str, str | None] = {}
    fresh: dict[FactProbe, str | None] = {}
    for probe in probes:
        hit, value = cache.lookup(digest, probe)
        if not hit:
            value = fresh[probe] = read_fact(runner, image, probe)
        facts[probe.name] = value
    if fresh:
        cache.store(digest, fresh)
    result = ImageFacts(image=image, digest=digest, facts=facts)
    check_facts(result, rules)
    return result
