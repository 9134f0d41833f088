"""HTML rendering (Jinja2, autoescaped) and the few helpers templates share."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

import jinja2
import orjson

_NON_SLUG = re.compile(r"[^a-z0-9]+")


@functools.cache
def environment() -> jinja2.Environment:
    """The site's Jinja2 environment: package templates, autoescape on, undefined is an error."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("inferx_pipeline.leaderboard.site", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    # Page data runs to megabytes of numbers; orjson writes it an order faster than json.
    env.policies["json.dumps_function"] = _dumps
    return env


def _dumps(value: object, **_kwargs: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def render(template: str, **context: object) -> str:
    """Render ``templates/<template>`` with ``context``."""
    return environment().get_template(template).render(**context)


def format_number(value: object, digits: int = 3) -> str:
    """A number for a table cell: ``digits`` significant figures, ``-`` for missing/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if not isinstance(value, int | float):
        return str(value)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by ``-``: ``Qwen/Qwen3 1k/1k`` -> ``qwen-qwen3-1k-1k``."""
    return _NON_SLUG.sub("-", text.lower()).strip("-") or "x"


def unique_slugs(names: Iterable[str]) -> dict[str, str]:
    """A distinct file-name slug per name; later collisions get ``-2``, ``-3`` (sorted order)."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in sorted(set(names)):
        base = slugify(name)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        out[name] = slug
    return out
