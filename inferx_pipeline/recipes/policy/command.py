"""Rules on the final server command of every job (``Served``), whichever path set a value.

- ``memory-fit``: the HBM fraction the engine is given (any spelling, the last one
  wins) stays within the SKU vendor's headroom, lower with speculative decoding.
- ``vendor-kv-offload``: no flag, JSON value or env value names a KV-offload backend
  the SKU's vendor cannot run, in any case or spelling.
- ``secret-literal``: no env name or flag that names a secret carries a value (values
  are never printed).
- ``control-chars``: no argv item, env name or env value holds a control character.

``golden-al-only`` on the final command is ``policy/acceptance.py``. Each finding names
the recipe field that put the value there (``served.origin``) and is reported once per
recipe, not once per job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import flags, last_value, mapping_items, norm, squash
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.policy.served import Served, number, once, origin

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_UTILIZATION_FLAGS = ("gpu-memory-utilization", "mem-fraction-static")
_UTILIZATION_KEYS = ("free-gpu-memory-fraction",)


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
        limit = limits.get(ctx.recipe.sku, limits.get(sku.vendor, 1.0))  # a SKU over its vendor
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
    return once(out)


def _utilization(job: Served) -> tuple[float | None, str]:
    flag = last_value(job.argv, _UTILIZATION_FLAGS)
    if flag is not None:
        return number(flag.value), flag.name
    for word in job.argv:
        for key, value in mapping_items(word):
            if key in _UTILIZATION_KEYS:
                return number(value), key
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
    return once(out)


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
            path = origin(ctx.recipe, flag=flag.name) or ("engine",)
            if rule.is_secret(flag.name) and flag.value is not None:
                out.append(_secret(ctx, path, f"--{flag.name}"))
            keys = [k for k, _ in mapping_items(flag.value) if rule.is_secret(k)]
            out += [_secret(ctx, path, f"{key} inside --{flag.name}") for key in keys]
    return once(out)


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
    return once(out)


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
