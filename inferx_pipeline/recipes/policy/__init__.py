"""Pre-GPU policy rules: named checks on a loaded recipe, before any GPU starts.

Public API: ``check(recipe, *, catalog, golden, data, where=None, rules=None) ->
list[Finding]`` runs the rules of ``RULES`` (or the named subset) and returns their
findings in rule order. Each rule is a pure function of the recipe and the data it
reads (catalog, golden curves, ``PolicyData`` from catalog/*.yaml); ``where`` (a
``LoadedRecipe``) places each finding at ``file:line:col`` of the offending node.

Rules: ``thinking-explicit``, ``golden-al-only``, ``engine-version-gate``,
``image-ref``, ``image-facts``, ``image-track``, ``vendor-kv-offload``, ``agentic-spec-decoding``,
``memory-fit``, ``referential``, ``secret-literal``, ``control-chars`` (see each
module's docstring).

``check_served(recipe, served, ...)`` runs ``SERVED_RULES`` on the final server command
of every job (``policy/acceptance.py``, ``policy/command.py``): the same rule ids,
judged on what will run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy import acceptance, command
from inferx_pipeline.recipes.policy.base import Rule, RuleContext, Where
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.policy.images import (
    engine_version_gate,
    image_facts,
    image_ref,
    image_track,
)
from inferx_pipeline.recipes.policy.literals import control_chars, secret_literal
from inferx_pipeline.recipes.policy.memory import eval_context_fit, memory_fit
from inferx_pipeline.recipes.policy.rows import (
    agentic_spec_decoding,
    referential,
    vendor_kv_offload,
)
from inferx_pipeline.recipes.policy.served import Served
from inferx_pipeline.recipes.policy.thinking import golden_al_only, thinking_explicit
from inferx_pipeline.recipes.schema import Recipe

RULES: dict[str, Rule] = {
    "thinking-explicit": thinking_explicit,
    "golden-al-only": golden_al_only,
    "engine-version-gate": engine_version_gate,
    "image-ref": image_ref,
    "image-facts": image_facts,
    "image-track": image_track,
    "vendor-kv-offload": vendor_kv_offload,
    "agentic-spec-decoding": agentic_spec_decoding,
    "memory-fit": memory_fit,
    "referential": referential,
    "secret-literal": secret_literal,
    "control-chars": control_chars,
}

ServedRule = Callable[[RuleContext, Sequence[Served]], list[Finding]]

SERVED_RULES: dict[str, tuple[ServedRule, ...]] = {
    "golden-al-only": (acceptance.acceptance,),
    "memory-fit": (command.headroom, eval_context_fit),
    "vendor-kv-offload": (command.kv_offload,),
    "secret-literal": (command.secrets,),
    "control-chars": (command.control_chars,),
}


def check(
    recipe: Recipe,
    *,
    catalog: Catalog,
    golden: GoldenRegistry,
    data: PolicyData,
    where: Where | None = None,
    rules: Iterable[str] | None = None,
) -> list[Finding]:
    """Findings of every rule (or of ``rules``, by name) on ``recipe``; never raises for them.

    An unknown rule name raises KeyError listing the valid names.
    """
    ctx = RuleContext(recipe=recipe, catalog=catalog, golden=golden, data=data, where=where)
    names = list(RULES) if rules is None else list(rules)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise KeyError(f"unknown policy rule(s) {unknown}; valid: {', '.join(RULES)}")
    return [finding for name in names for finding in RULES[name](ctx)]


def check_served(
    recipe: Recipe,
    served: Sequence[Served],
    *,
    catalog: Catalog,
    golden: GoldenRegistry,
    data: PolicyData,
    where: Where | None = None,
) -> list[Finding]:
    """Findings of ``SERVED_RULES`` on the final commands ``served`` of ``recipe``'s jobs."""
    ctx = RuleContext(recipe=recipe, catalog=catalog, golden=golden, data=data, where=where)
    rules = [rule for each in SERVED_RULES.values() for rule in each]
    return [finding for rule in rules for finding in rule(ctx, served)]
