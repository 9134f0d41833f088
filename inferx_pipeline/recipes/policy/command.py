"""Rules on the final server command of every job (``Served``), whichever path set a value.

- ``golden-al-only``: a synthetic acceptance length an engine reads (catalog/gate.yaml
  ``acceptance_knobs``: vLLM's speculative-config JSON, SGLang and TensorRT-LLM env,
  ATOM's flag) equals the job's golden AL, and eval jobs carry none; a throughput job
  of a scenario that requires synthetic acceptance (``synthetic_required``) has one.
- ``memory-fit``: the HBM fraction the engine is given (any spelling, the last one
  wins) stays within the SKU vendor's headroom, lower with speculative decoding.
- ``vendor-kv-offload``: no flag, JSON value or env value names a KV-offload backend
  the SKU's vendor cannot run, in any case or spelling.
- ``secret-literal``: no env name or flag that names a secret carries a value (values
  are never printed).
- ``control-chars``: no argv item, env name or env value holds a control character.

Each finding names the recipe field that put the value there (``served.origin``) and is
reported once per recipe, not once per job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import flags, last_value, mapping_items, norm, squash
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.policy.served import Served, origin

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_UTILIZATION_FLAGS = ("gpu-memory-utilization", "mem-fraction-static")
_UTILIZATION_KEYS = ("free-gpu-memory-fraction",)


def _once(findings: list[Finding]) -> list[Finding]:
    return list({(f.field, f.message): f for f in findings}.values())


def _knobs(served: Served, ctx: RuleContext) -> list[tuple[str, str, float | None]]:
    """(where, display name, value) of every synthetic-AL setting in the final command."""
    knobs = ctx.data.acceptance_knobs.get(served.framework)
    if knobs is None:
        return []
    found: list[tuple[str, str, float | None]] = []
    env_names = {n.upper() for n in knobs.env}
    for name, value in served.env.items():
        if name.upper() in env_names:
            found.append(("env", name, _number(value)))
    wanted = {norm(f) for f in knobs.flags}
    json_flags = {norm(f) for f in knobs.json_flags}
    keys = {norm(k) for k in knobs.json_keys}
    for flag in flags(served.argv):
        if flag.name in wanted:
            found.append(("flag", flag.name, _number(flag.value)))
        elif flag.name in json_flags:
            found += [
                ("flag", flag.name, _number(v)) for k, v in mapping_items(flag.value) if k in keys
            ]
    return found


def _number(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


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
    offset = {f: k.offset for f, k in ctx.data.acceptance_knobs.items()}
    for job in served:
        knobs = _knobs(job, ctx)
        for kind, name, value in knobs:
            path = _where(ctx, kind, name)
            shown = "unreadable" if value is None else f"{value:g}"
            if job.is_eval:
                out.append(
                    ctx.finding(
                        "golden-al-only",
                        path,
                        f"got {name} {shown} on eval jobs; expected no synthetic acceptance "
                        "(eval jobs verify for real); set it only through "
                        "speculative.acceptance: synthetic and a curve",
                    )
                )
            elif job.target_al is None:
                out.append(
                    ctx.finding(
                        "golden-al-only",
                        path,
                        f"got {name} {shown} with speculative.acceptance "
                        f"{ctx.recipe.speculative.acceptance}; expected a synthetic AL only from "
                        "a golden curve; remove it and set acceptance: synthetic with a curve",
                    )
                )
            else:
                want = job.target_al + offset.get(job.framework, 0.0)
                if value is None or abs(value - want) > 1e-6:
                    out.append(
                        ctx.finding(
                            "golden-al-only",
                            path,
                            f"got {name} {shown}; expected {want:g} (golden curve "
                            f"{ctx.recipe.speculative.curve!r} for thinking "
                            f"{ctx.recipe.model.thinking or 'on'}, "
                            f"{ctx.recipe.speculative.draft_tokens} draft tokens); remove it, the "
                            "matrix sets it from the curve",
                        )
                    )
        out.extend(_required(ctx, job, bool(knobs)))
        out.extend(_draft_length(ctx, job))
        out.extend(_draft_identity(ctx, job))
    return _once(out + _option_overrides(ctx))


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
    if job.is_eval or not job.speculative or job.scenario not in required.scenarios:
        return []
    if job.target_al is not None and has_knob:
        return []
    return [
        ctx.finding(
            "golden-al-only",
            ("speculative", "acceptance"),
            f"got real acceptance on {job.scenario} throughput jobs; expected synthetic "
            f"acceptance at the golden AL for {job.scenario} ({required.source}); set "
            "acceptance: synthetic and a curve",
        )
    ]


def headroom(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``memory-fit`` on the final command: the HBM fraction within the headroom."""
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    if sku is None:
        return []
    room = ctx.data.headroom
    out: list[Finding] = []
    for job in served:
        value, name = _utilization(job)
        if value is None:
            continue
        limits = room.max_utilization_speculative if job.speculative else room.max_utilization
        limit = limits.get(sku.vendor, 1.0)
        if value <= limit + 1e-9:
            continue
        path = origin(ctx.recipe, flag=name) or ("engine", "gpu-memory-utilization")
        setup = " with speculative decoding" if job.speculative else ""
        out.append(
            ctx.finding(
                "memory-fit",
                path,
                f"got {name} {value:g}; expected at most {limit:g} on {sku.vendor.upper()} "
                f"{ctx.recipe.sku}{setup} (catalog/gate.yaml headroom); lower it",
            )
        )
    return _once(out)


def _utilization(job: Served) -> tuple[float | None, str]:
    flag = last_value(job.argv, _UTILIZATION_FLAGS)
    if flag is not None:
        return _number(flag.value), flag.name
    for word in job.argv:
        for key, value in mapping_items(word):
            if key in _UTILIZATION_KEYS:
                return _number(value), key
    return None, ""


def kv_offload(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``vendor-kv-offload`` on the final command (see the module doc)."""
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    rule = ctx.data.vendor_kv_offload.get(sku.vendor) if sku is not None else None
    if sku is None or rule is None or not rule.forbidden_backends:
        return []
    forbidden = {squash(b): b for b in rule.forbidden_backends}
    spots = ctx.data.kv_offload_flags
    names = {norm(f) for f in spots.flags}
    json_names = {norm(f) for f in spots.json_flags}
    out: list[Finding] = []
    for job in served:
        out += _kv_env(ctx, job, forbidden)
        for flag in flags(job.argv):
            if flag.name in names:
                values: list[object] = [flag.value]
            elif flag.name in json_names:
                values = [v for _, v in mapping_items(flag.value)]
            else:
                continue
            for item in values:
                hit = next((b for key, b in forbidden.items() if key in squash(item)), None)
                if hit is not None:
                    out.append(
                        ctx.finding(
                            "vendor-kv-offload",
                            origin(ctx.recipe, flag=flag.name) or _row_path(job),
                            f"got --{flag.name} naming {hit} ({item!s:.60}); expected no {hit} "
                            f"KV offload on {sku.vendor.upper()} SKUs ({ctx.recipe.sku}; "
                            "catalog/policy.yaml vendor_kv_offload); use kv-offloading: none or "
                            "another backend",
                        )
                    )
    return _once(out)


def _kv_env(ctx: RuleContext, job: Served, forbidden: dict[str, str]) -> list[Finding]:
    # A backend's own variables (MOONCAKE_CONFIG_PATH=...) name it as surely as a flag.
    vendor = ctx.catalog.skus[ctx.recipe.sku].vendor.upper()
    out: list[Finding] = []
    for name, value in job.env.items():
        hit = next((b for key, b in forbidden.items() if key in squash(f"{name}={value}")), None)
        if hit is not None:
            out.append(
                ctx.finding(
                    "vendor-kv-offload",
                    origin(ctx.recipe, env=name) or ("engine", "env"),
                    f"got env {name} naming {hit}; expected no {hit} KV offload on {vendor} "
                    f"SKUs ({ctx.recipe.sku}; catalog/policy.yaml vendor_kv_offload); remove it",
                )
            )
    return out


def _row_path(job: Served) -> tuple[str | int, ...]:
    return (*job.row, "kv-offload-backend") if job.row else ("engine",)


def secrets(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``secret-literal``: secret names carry no value in the final command."""
    rule = ctx.data.secrets
    out: list[Finding] = []
    for job in served:
        for name in job.env:
            if rule.is_secret(name):
                path = origin(ctx.recipe, env=name) or ("engine", "env")
                out.append(_secret(ctx, path, f"env {name}"))
        for flag in flags(job.argv):
            if rule.is_secret(flag.name) and flag.value is not None:
                path = origin(ctx.recipe, flag=flag.name) or ("engine",)
                out.append(_secret(ctx, path, f"--{flag.name}"))
    return _once(out)


def _secret(ctx: RuleContext, path: tuple[str | int, ...], what: str) -> Finding:
    return ctx.finding(
        "secret-literal",
        path,
        f"got a literal value for secret {what} (value not shown); expected secrets by name "
        "only (catalog/gate.yaml secrets); remove it from the recipe and pass it to the "
        "launcher by name (secret_env)",
    )


def control_chars(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``control-chars``: no control character in argv items, env names or values.

    A value the adapter made from a typed field is the recipe rule's (it names the field).
    """
    out: list[Finding] = []
    for job in served:
        for name, value in job.env.items():
            for text, what in ((name, "name"), (value, "value")):
                match = _CONTROL.search(text)
                if match is not None:
                    path = origin(ctx.recipe, env=name) or ("engine", "env")
                    out.append(_control(ctx, path, f"env {name!r} {what}", match))
        current: str | None = None
        for word in job.argv:
            current = norm(word.partition("=")[0]) if word.startswith("--") else current
            match = _CONTROL.search(word)
            if match is None or _program(job, word):
                continue
            where = origin(ctx.recipe, flag=current) if current else None
            if where is not None:
                out.append(_control(ctx, where, f"argv item after --{current}", match))
    return _once(out)


def _program(job: Served, word: str) -> bool:
    # TensorRT-LLM's argv carries a fixed Python program and its options YAML, both
    # multi-line by design (engines/trt.py); only their own lines are judged elsewhere.
    return job.framework == "trt" and job.argv.index(word) in (2, 3)


def _control(
    ctx: RuleContext, path: tuple[str | int, ...], what: str, match: re.Match[str]
) -> Finding:
    return ctx.finding(
        "control-chars",
        path,
        f"got control character {match.group()!r} at offset {match.start()} in {what}; "
        "expected printable text (a newline or NUL splits or cuts the server command); "
        "remove it",
    )
