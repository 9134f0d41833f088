"""Read a server command line the way the engines read it.

Engines' argument parsers (argparse; vLLM's FlexibleArgumentParser, SGLang's and
TensorRT-LLM's click) accept ``--flag value`` and ``--flag=value``, treat ``_`` and ``-``
in a flag name alike, and let the last occurrence win. Rules compare names here, so a
value spelled another way (``--GPU_memory_utilization=0.99``) is judged like the typed
field. JSON and YAML mappings passed as one argument (``--speculative-config '{...}'``,
TensorRT-LLM's options text) are read into ``(key, value)`` pairs, keys normalized too.

Public API: ``norm``, ``squash``, ``Flag``, ``flags``, ``last_value``, ``mapping_items``,
``recipe_flag``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import yaml

from inferx_pipeline.recipes.schema import ArgValue

_NUMBER = re.compile(r"^-\d")


def norm(name: str) -> str:
    """A flag, env or JSON key name as engines compare it: no dashes in front, lower case,
    ``_`` read as ``-`` (``--GPU_Memory-utilization`` -> ``gpu-memory-utilization``)."""
    return name.lstrip("-").lower().replace("_", "-")


def squash(value: object) -> str:
    """Lower-case letters and digits only, for names inside values: ``Moon_Cake``,
    ``MooncakeConnectorV1`` and ``mooncake`` all contain ``mooncake``."""
    return re.sub(r"[^a-z0-9]", "", str(value).lower())


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag of an argv: normalized name, its value (None for a bare flag), position."""

    name: str
    value: str | None
    index: int


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and _NUMBER.match(word) is None


def flags(argv: Sequence[str]) -> list[Flag]:
    """Every flag of ``argv`` in order (``--a=b`` and ``--a b`` alike)."""
    return list(_flags(tuple(argv)))


@functools.lru_cache(maxsize=4096)
def _flags(argv: tuple[str, ...]) -> tuple[Flag, ...]:
    # Every rule reads the same few commands (one per job): parse each once.
    out: list[Flag] = []
    for index, word in enumerate(argv):
        if not _is_flag(word):
            continue
        name, eq, value = word.partition("=")
        if eq:
            out.append(Flag(norm(name), value, index))
            continue
        following = argv[index + 1] if index + 1 < len(argv) else None
        takes = following is not None and not _is_flag(following)
        out.append(Flag(norm(name), following if takes else None, index))
    return tuple(out)


def last_value(argv: Sequence[str], names: Sequence[str]) -> Flag | None:
    """The last occurrence of any of ``names`` (normalized) in ``argv``: the one that wins."""
    wanted = {norm(n) for n in names}
    found = [f for f in flags(argv) if f.name in wanted]
    return found[-1] if found else None


def _parsed(text: str) -> object:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    if "\n" in stripped and ":" in stripped:
        try:
            return yaml.safe_load(stripped)
        except yaml.YAMLError:
            return None
    return None


def _walk(value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield norm(str(key)), item
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


@functools.lru_cache(maxsize=4096)
def _items(text: str) -> tuple[tuple[str, object], ...]:
    try:
        return tuple(_walk(_parsed(text)))
    except RecursionError:
        # Nesting no engine config has: the engine's own parser refuses it (engine-argv).
        return ()


def mapping_items(text: str | None) -> list[tuple[str, object]]:
    """Every (normalized key, value) pair, at any depth, of a JSON or YAML mapping ``text``;
    [] when ``text`` is not one (or nests past Python's recursion limit)."""
    return list(_items(text)) if text is not None else []


def recipe_flag(
    args: Mapping[str, ArgValue | None] | Sequence[str], names: Sequence[str]
) -> str | None:
    """The value a recipe's ``engine.args`` gives the last of ``names`` (any spelling), as
    the engine reads it; None when unset. Adapters append the recipe's args last, so this
    value wins over the typed field's."""
    if isinstance(args, Mapping):
        argv: list[str] = []
        for key, value in args.items():
            if value is None or value is False:
                continue
            items = value if isinstance(value, list) else [value]
            for item in items:
                argv += [key] if item is True else [key, str(item)]
        args = argv
    found = last_value(list(args), names)
    return found.value if found is not None else None
