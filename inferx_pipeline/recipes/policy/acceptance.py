"""Rule ``golden-al-only`` on the final server command of every job (``Served``).

Whichever path set it (typed field, ``engine.args``, ``engine.env``,
``speculative.options``, a fragment), the engine runs what its argv and env say:

- a synthetic acceptance length an engine reads (catalog/gate.yaml ``acceptance_knobs``:
  vLLM's speculative-config JSON, SGLang and TensorRT-LLM env, ATOM's flag) equals the
  job's golden AL, and eval jobs carry none; a throughput job of a scenario that requires
  synthetic acceptance (``synthetic_required``) has one;
- the draft length the engine runs (``draft_length_knobs``, the last flag wins) is
  ``speculative.draft-tokens``, which keys the golden AL;
- the draft method and checkpoint (``draft_identity_knobs``) are the ones the recipe's
  speculative block gives, and so the golden curve's: no later flag, JSON or method
  option swaps them.

Each finding names the recipe field that put the value there (``served.origin``) and is
reported once per recipe, not once per job.
"""

from __future__ import annotations

from collections.abc import Sequence

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import flags, last_value, mapping_items, norm
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.policy.served import Served, number, once, origin
from inferx_pipeline.recipes.policy.thinking import served_thinking


def _knobs(served: Served, ctx: RuleContext) -> list[tuple[str, str, float | None]]:
    """(where, display name, value) of every synthetic-AL setting the engine runs with.

    Only what takes effect counts: the environment, and the last of each flag (a later
    ``--speculative-config`` replaces the adapter's whole JSON, synthetic keys and all).
    """
    knobs = ctx.data.acceptance_knobs.get(served.framework)
    if knobs is None:
        return []
    found: list[tuple[str, str, float | None]] = []
    env_names = {n.upper() for n in knobs.env}
    for name, value in served.env.items():
        if name.upper() in env_names:
            found.append(("env", name, number(value)))
    for name in knobs.flags:
        flag = last_value(served.argv, [name])
        if flag is not None:
            found.append(("flag", flag.name, number(flag.value)))
    keys = {norm(k) for k in knobs.json_keys}
    carrier = last_value(served.argv, knobs.json_flags) if knobs.json_flags else None
    if carrier is not None:
        found += [
            ("flag", carrier.name, number(v)) for k, v in mapping_items(carrier.value) if k in keys
        ]
    return found


def _where(ctx: RuleContext, kind: str, name: str) -> tuple[str | int, ...]:
    path = origin(ctx.recipe, env=name) if kind == "env" else origin(ctx.recipe, flag=name)
    if path is not None:
        return path
    # A JSON flag the adapter builds carries the recipe's speculative options.
    options = ctx.recipe.speculative.options
    key = next((k for k in options if norm(k) in _json_keys(ctx)), None)
    return ("speculative", "options", key) if key is not None else ("speculative",)


def _json_keys(ctx: RuleContext) -> set[str]:
    return {norm(k) for knobs in ctx.data.acceptance_knobs.values() for k in knobs.json_keys}


def acceptance(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``golden-al-only`` on the final command (see the module doc)."""
    out: list[Finding] = []
    for job in served:
        knobs = _knobs(job, ctx)
        for kind, name, value in knobs:
            message = _judge_knob(ctx, job, name, value)
            if message is not None:
                out.append(ctx.finding("golden-al-only", _where(ctx, kind, name), message))
        out.extend(_required(ctx, job, bool(knobs)))
        out.extend(_draft_length(ctx, job))
        out.extend(_draft_identity(ctx, job))
    return once(out + _option_overrides(ctx))


def _judge_knob(ctx: RuleContext, job: Served, name: str, value: float | None) -> str | None:
    """What is wrong with synthetic-AL setting ``name`` = ``value`` in ``job``, or None."""
    shown = "unreadable" if value is None else f"{value:g}"
    if job.is_eval:
        return (
            f"got {name} {shown} on eval jobs; expected no synthetic acceptance (eval jobs "
            "verify for real); set it only through speculative.acceptance: synthetic and a curve"
        )
    spec = ctx.recipe.speculative
    if job.target_al is None:
        return (
            f"got {name} {shown} with speculative.acceptance {spec.acceptance}; expected a "
            "synthetic AL only from a golden curve; remove it and set acceptance: synthetic "
            "with a curve"
        )
    knobs = ctx.data.acceptance_knobs[job.framework]
    want = job.target_al + knobs.offset
    if value is not None and abs(value - want) <= 1e-6:
        return None
    mode = served_thinking(ctx.recipe, ctx.catalog) or "unset"
    return (
        f"got {name} {shown}; expected {want:g} (golden curve {spec.curve!r}, thinking {mode}, "
        f"{spec.draft_tokens} draft tokens); remove it, the matrix sets it from the curve"
    )


def _draft_lengths(ctx: RuleContext, job: Served) -> list[tuple[str, object, str]]:
    """(name, value, flag carrying it) of the draft length the engine runs (last flag wins)."""
    knobs = ctx.data.draft_length_knobs.get(job.framework)
    if knobs is None:
        return []
    keys = {norm(k) for k in knobs.keys}
    found: list[tuple[str, object, str]] = []
    flag = last_value(job.argv, knobs.flags) if knobs.flags else None
    if flag is not None:
        found.append((flag.name, flag.value, flag.name))
    if knobs.json_flags:
        carrier = last_value(job.argv, knobs.json_flags)
        texts = [(carrier.value, carrier.name)] if carrier is not None else []
    else:
        texts = [(word, "") for word in job.argv]
    for text, via in texts:
        found += [(k, v, via) for k, v in mapping_items(text) if k in keys]
    return found


def _draft_length(ctx: RuleContext, job: Served) -> list[Finding]:
    # The golden AL belongs to the recipe's draft length; another one in the final command
    # (a second --speculative-config, --speculative-num-steps in args) measures elsewhere.
    if job.target_al is None or job.draft_tokens is None:
        return []
    return [
        ctx.finding(
            "golden-al-only",
            _length_origin(ctx, name, via),
            f"got {name} {value} in the server command; expected {job.draft_tokens} "
            f"(speculative.draft-tokens, which keys the golden AL "
            f"{job.target_al:g}); set the draft length only in speculative.draft-tokens",
        )
        for name, value, via in _draft_lengths(ctx, job)
        if str(value) != str(job.draft_tokens)
    ]


def _draft_identity(ctx: RuleContext, job: Served) -> list[Finding]:
    # The adapter writes the recipe's method and draft first; a later flag or JSON from
    # engine.args that says otherwise wins in the engine and runs another curve's draft.
    knobs = ctx.data.draft_identity_knobs.get(job.framework)
    if knobs is None or not job.speculative:
        return []
    seen: list[tuple[str, list[object]]] = []
    wanted = {norm(f) for f in knobs.flags}
    for name in wanted:
        seen.append((name, [f.value for f in flags(job.argv) if f.name == name]))
    carriers = [f for f in flags(job.argv) if f.name in {norm(j) for j in knobs.json_flags}]
    for key in (norm(k) for k in knobs.keys):
        values = [dict(mapping_items(c.value)).get(key) for c in carriers]
        seen += [(key, values)] if carriers else []
    return [
        ctx.finding(
            "golden-al-only",
            _length_origin(ctx, name, carriers[-1].name if carriers else ""),
            f"got {name} {values[-1]} in the server command where the recipe's speculative "
            f"block gives {values[0]}; expected the draft the golden curve "
            f"{ctx.recipe.speculative.curve!r} measured; set method and draft-model only in "
            "speculative",
        )
        for name, values in seen
        if len(values) > 1 and values[-1] != values[0]
    ]


def _option_overrides(ctx: RuleContext) -> list[Finding]:
    # speculative.options merge into the adapter's config after the typed fields.
    keys = {norm(k) for knobs in ctx.data.draft_identity_knobs.values() for k in knobs.keys}
    return [
        ctx.finding(
            "golden-al-only",
            ("speculative", "options", key),
            f"got option {key} = {value}; expected the draft method and checkpoint only from "
            "speculative.method and speculative.draft-model (the golden curve's draft); "
            "remove the option",
        )
        for key, value in ctx.recipe.speculative.options.items()
        if norm(key) in keys
    ]


def _length_origin(ctx: RuleContext, name: str, via: str) -> tuple[str | int, ...]:
    found = origin(ctx.recipe, flag=via) if via else None
    found = found or origin(ctx.recipe, flag=name)
    return found or ("speculative", "draft-tokens")


def _required(ctx: RuleContext, job: Served, has_knob: bool) -> list[Finding]:
    required = ctx.data.synthetic_required
    knobs = ctx.data.acceptance_knobs.get(job.framework)
    if job.is_eval or not job.speculative or has_knob or knobs is None:
        return []  # an engine without knobs in data (the simulator) is not judged
    if job.target_al is None and job.scenario not in required.scenarios:
        return []
    if job.target_al is None:
        path: tuple[str | int, ...] = ("speculative", "acceptance")
        fix = "set acceptance: synthetic and a curve"
    else:
        # The recipe asks for synthetic acceptance; a flag in engine.args replaced the
        # adapter's setting, so the engine would verify for real.
        names = [*knobs.json_flags, *knobs.flags]
        path = next(
            (p for p in (origin(ctx.recipe, flag=n) for n in names) if p is not None),
            ("speculative", "acceptance"),
        )
        fix = "remove the flag that replaces the matrix's synthetic setting"
    return [
        ctx.finding(
            "golden-al-only",
            path,
            f"got real acceptance in the server command of {job.scenario} throughput jobs; "
            f"expected synthetic acceptance at the golden AL (the recipe's, or "
            f"{required.source}); {fix}",
        )
    ]
