"""Image policy at sweep time: the recipe layer's image rules as predicates over ``ImageFacts``.

The data is the recipe layer's (``recipes.policy.data``: ``catalog/policy.yaml``,
``catalog/version-gates.yaml``, ``catalog/image-facts.yaml``); here it is checked
against what the image itself reports, before its server starts:

- ``image-facts``: an agentic-coding job's image runs the agentic client, so its Python
  must be in the client's range (``client_python``).
- ``engine-version-gate``: a gate of the job's engine applies when the job runs the
  gate's acceptance mode (eval jobs verify for real), or the server spec carries one of
  the gate's env names or args; the image's engine version must then reach the minimum.

A fact no probe could read falls back to what the catalog knows (the image's entry in
``image-facts.yaml``, then the tag pattern), the recipe layer's own source. A fact still
unknown breaks the rule: a gate is never passed on an unknown version.
"""

from __future__ import annotations

from inferx_pipeline.launch.preflight import (
    FactRule,
    ImageFacts,
    version_at_least,
    version_in_range,
)
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.policy.data import ClientPython, PolicyData, VersionGate
from inferx_pipeline.recipes.policy.images import engine_version

PYTHON = "python_version"
ENGINE_VERSION = "engine_version"
SIM_ENGINE = "sim"  # the simulator image standing in for an engine: no engine gates


def python_rule(need: ClientPython) -> FactRule:
    """Rule ``image-facts``: the image's Python within the agentic client's range."""
    return FactRule(
        name="image-facts",
        fact=PYTHON,
        label="python",
        check=lambda value: version_in_range(value, need.min, need.below),
        expected=f"agentic recipes need >= {need.min}, < {need.below}",
    )


def gate_rule(gate: VersionGate, why: str) -> FactRule:
    """Rule ``engine-version-gate`` for one applicable gate (``why`` it applies)."""
    return FactRule(
        name=f"engine-version-gate {gate.name}",
        fact=ENGINE_VERSION,
        label=gate.framework,
        check=lambda value: version_at_least(value, gate.min_version),
        expected=f"{why} needs >= {gate.min_version}: {gate.reason}",
    )


def effective_acceptance(job: BenchmarkJob) -> str:
    """The acceptance the server actually runs: eval jobs verify for real."""
    acceptance = job.spec.acceptance
    return "real" if job.run_eval and acceptance == "synthetic" else acceptance


def gate_applies(gate: VersionGate, job: BenchmarkJob, spec: ServerSpec, engine: str) -> str | None:
    """Why ``gate`` applies to ``job`` served by ``spec`` on ``engine`` (short), or None."""
    if gate.framework != engine:
        return None
    when = gate.when
    if when.acceptance is not None and effective_acceptance(job) == when.acceptance:
        return f"acceptance {when.acceptance}"
    env = next((name for name in when.env_any if name in spec.env), None)
    if env is not None:
        return f"env {env}"
    flag = next((f for f in when.args_any if f in spec.argv), None)
    return None if flag is None else f"arg {flag}"


def image_rules(
    job: BenchmarkJob, spec: ServerSpec, data: PolicyData, *, engine: str
) -> tuple[FactRule, ...]:
    """The rules ``spec``'s image must pass to serve ``job`` (pure; see the module doc)."""
    rules = [python_rule(data.client_python)] if job.scenario == "agentic-coding" else []
    for gate in data.gates:
        why = gate_applies(gate, job, spec, engine)
        if why is not None:
            rules.append(gate_rule(gate, why))
    return tuple(rules)


def with_catalog_facts(facts: ImageFacts, data: PolicyData, *, engine: str) -> ImageFacts:
    """``facts`` with unknown Python / engine version filled from the catalog (pure).

    The engine fallback (a catalog entry or the tag) describes the real engine, so the
    simulator standing in for it gets none.
    """
    known = data.images.get(facts.image)
    filled = dict(facts.facts)
    if filled.get(PYTHON) is None and known is not None and known.python is not None:
        filled[PYTHON] = known.python
    if filled.get(ENGINE_VERSION) is None and engine != SIM_ENGINE:
        filled[ENGINE_VERSION] = engine_version(data, facts.image)
    return facts.model_copy(update={"facts": filled})
