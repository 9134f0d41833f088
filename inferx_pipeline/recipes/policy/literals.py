"""Rules on the literal text of a recipe, whatever field holds it.

- ``secret-literal``: no env name, ``engine.args`` flag or ``speculative.options`` key
  that names a secret (catalog/gate.yaml ``secrets``: ``HF_TOKEN``, ``*_TOKEN``,
  ``*_KEY``...) carries a value: secrets reach servers by name only, from the launcher's
  environment. The value is never printed.
- ``control-chars``: no text value (``notes`` aside) holds a control character; a
  newline or NUL in an argv item or env value splits or cuts what the server receives.

``secret_values(env, args, options, secrets)`` lists the literal secret values of one
engine setup, and ``redacted(text, values)`` blanks them in any printed text (plain,
JSON-escaped or shell-quoted), for commands that print jobs (``inferx matrix``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import flags, mapping_items
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.policy.data import Secrets
from inferx_pipeline.recipes.yamlsource import FieldPath

CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Free text for people, never passed to a server: a block scalar's newlines are fine.
_PROSE = frozenset({"notes"})


def _secret_entries(
    env: Mapping[str, str],
    args: Mapping[str, object] | Sequence[str],
    options: Mapping[str, object],
    secrets: Secrets,
) -> Iterator[tuple[FieldPath, str, object]]:
    """(field path, what, value) of every secret-named entry of one engine setup."""
    for name, value in env.items():
        if secrets.is_secret(name):
            yield ("engine", "env", name), f"env {name}", value
    if isinstance(args, Mapping):
        for key, given in args.items():
            flag, eq, inline = key.partition("=")
            passed = inline if eq else given
            if secrets.is_secret(flag) and (eq or not isinstance(given, bool | None)):
                yield ("engine", "args", key), flag, passed
            yield from _in_json(("engine", "args", key), flag, passed, secrets)
    else:
        for found in flags(list(args)):
            if secrets.is_secret(found.name) and found.value is not None:
                yield ("engine", "args", found.index), f"--{found.name}", found.value
            yield from _in_json(("engine", "args", found.index), found.name, found.value, secrets)
    for key, option in options.items():
        if secrets.is_secret(key):
            yield ("speculative", "options", key), f"option {key}", option


def _in_json(
    path: FieldPath, flag: str, value: object, secrets: Secrets
) -> Iterator[tuple[FieldPath, str, object]]:
    # A connector config carries its own credentials ({"kv_connector_extra_config":
    # {"api_key": ...}}): a secret-named key inside a flag's JSON is a literal secret too.
    if not isinstance(value, str):
        return
    for key, item in mapping_items(value):
        if secrets.is_secret(key) and isinstance(item, str | int | float):
            yield path, f"{key} inside {flag}", item


def secret_values(
    env: Mapping[str, str],
    args: Mapping[str, object] | Sequence[str],
    options: Mapping[str, object],
    secrets: Secrets,
) -> set[str]:
    """The literal values under secret names in one engine setup (to redact when printing)."""
    found: set[str] = set()
    for _, _, value in _secret_entries(env, args, options, secrets):
        items = value if isinstance(value, list) else [value]
        found.update(str(item) for item in items if str(item))
    return found


REDACTED = "<redacted>"


def redacted(text: str, values: set[str]) -> str:
    """``text`` with every spelling of each of ``values`` replaced by ``<redacted>``."""
    # Longest first, so a secret containing another is blanked whole.
    for value in sorted(values, key=len, reverse=True):
        for spelling in {shlex.quote(value), json.dumps(value)[1:-1], value}:
            text = text.replace(spelling, REDACTED)
    return text


def secret_literal(ctx: RuleContext) -> list[Finding]:
    """Rule ``secret-literal`` (see the module doc)."""
    recipe = ctx.recipe
    entries = _secret_entries(
        recipe.engine.env, recipe.engine.args, recipe.speculative.options, ctx.data.secrets
    )
    return [
        ctx.finding(
            "secret-literal",
            path,
            f"got a literal value for secret {what} (value not shown); expected secrets by "
            "name only (catalog/gate.yaml secrets); remove it from the recipe and pass it to "
            "the launcher by name (secret_env)",
        )
        for path, what, _ in entries
    ]


def _strings(value: object, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key) in _PROSE and not path:
                continue
            yield (*path, str(key)), str(key)
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))
    elif isinstance(value, str):
        yield path, value


def control_chars(ctx: RuleContext) -> list[Finding]:
    """Rule ``control-chars`` (see the module doc)."""
    doc = ctx.recipe.model_dump(by_alias=True, mode="json", exclude_none=True)
    out: list[Finding] = []
    for path, text in _strings(doc, ()):
        match = CONTROL.search(text)
        if match is None:
            continue
        secret = ctx.data.secrets.is_secret(str(path[-1])) if path else False
        shown = "(value not shown)" if secret else f"{text[:40]!r}"
        out.append(
            ctx.finding(
                "control-chars",
                path,
                f"got control character {match.group()!r} at offset {match.start()} in "
                f"{shown}; expected printable text (a newline or NUL splits or cuts what the "
                "server receives); remove it",
            )
        )
    return list({f.field: f for f in out}.values())
