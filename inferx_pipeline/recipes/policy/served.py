"""What the launcher would run for each job: the view the final-command rules judge.

A value reaches an engine by more than one path (typed fields, ``engine.args``,
``engine.env``, ``speculative.options``, fragments); the engine sees only the final
argv and environment. ``Served`` is one job's final command with the few job facts the
rules compare it with; ``conformance/served.py`` builds them (every throughput job and the
eval twin of each) through the engine adapters. ``origin`` maps a flag, env or option
name back to the recipe field that put it there, so a finding points at the author's
line. ``once`` and ``number`` are what the final-command rules share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import flags, norm
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.recipes.yamlsource import FieldPath


@dataclass(frozen=True, slots=True)
class Served:
    """One job's final server command (argv, env, image) and the facts rules compare it to.

    ``target_al`` is the golden AL the matrix resolved (None for real acceptance and
    eval jobs); ``max_model_len`` the context the server is given (an eval twin's: raised
    to its eval's max-length; None = the engine's own); ``row`` is the search-space row's
    field path in the recipe; ``speculative`` whether the job drafts at all,
    ``draft_tokens`` its draft length.
    """

    job_id: str
    framework: str
    scenario: str
    is_eval: bool
    target_al: float | None
    image: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    max_model_len: int | None = None
    row: FieldPath = ()
    speculative: bool = False
    draft_tokens: int | None = None


def origin(recipe: Recipe, *, flag: str | None = None, env: str | None = None) -> FieldPath | None:
    """The recipe field that sets ``flag`` (any spelling) or env ``env``; None when the
    adapter made it from typed fields (whose own rules judge them)."""
    if env is not None:
        for name in recipe.engine.env:
            if name == env or name.upper() == env.upper():
                return ("engine", "env", name)
        return None
    if flag is None:
        return None
    wanted = norm(flag)
    args = recipe.engine.args
    if isinstance(args, dict):
        for key in args:
            if norm(key.partition("=")[0]) == wanted:
                return ("engine", "args", key)
    else:
        for found in flags(args):
            if found.name == wanted:
                return ("engine", "args", found.index)
    for key in recipe.speculative.options:
        if norm(key) == wanted:
            return ("speculative", "options", key)
    return None


def once(findings: list[Finding]) -> list[Finding]:
    """``findings`` without repeats: every job of a recipe repeats its recipe's problems."""
    return list({(f.field, f.message): f for f in findings}.values())


def number(value: object) -> float | None:
    """``value`` as a float, or None when the engine would not read one from it."""
    try:
        return float(str(value))
    except ValueError:
        return None
