"""Rules on the model's thinking mode and the golden acceptance length.

- ``thinking-explicit``: a family with a switchable thinking mode names it; a family
  without one does not; an always-thinking family is never ``off`` (left unset it runs
  ``on``, see ``served_thinking``, which the matrix uses too); a synthetic run's mode
  was measured by its curve, and its client sends the chat-template kwargs the curve was
  measured with (each family spells the switch its own way: ``enable_thinking``,
  ``thinking``, ``thinking_mode``; the wrong key leaves the template's default mode on).
- ``golden-al-only``: a synthetic AL comes only from a golden curve that exists for
  this family, thinking mode and draft length; nobody sets the engines' AL knobs by
  hand; a curve measured at another precision is a warning naming both.
"""

from __future__ import annotations

from collections.abc import Mapping

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import GoldenCurveError
from inferx_pipeline.golden import GoldenCurve, ThinkingMode
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import norm
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.schema import Recipe


def served_thinking(recipe: Recipe, catalog: Catalog) -> ThinkingMode | None:
    """The thinking mode the server runs in, as the rules and the matrix both read it.

    The recipe's explicit mode wins; an always-thinking family left unset runs ``on``
    (it has no switch to state); otherwise None: a family without a mode, an unknown
    family, or a switchable family left unset (which ``thinking-explicit`` rejects and
    the matrix refuses to resolve a golden AL for).
    """
    if recipe.model.thinking is not None:
        return recipe.model.thinking
    arch = catalog.models.get(recipe.model.family)
    return "on" if arch is not None and arch.thinking == "always" else None


def _imported_hint(ctx: RuleContext) -> str:
    # InferenceX keeps the thinking mode in its bash scripts, so every imported entry of a
    # switchable family lacks it: say so, this is an "InferenceX accepts, we reject" case.
    origin = ctx.recipe.imported_from
    if origin is None:
        return ""
    return (
        f"; imported from InferenceX {origin.master}, which states no thinking mode (its "
        "launch scripts pick one): InferenceX accepts this entry, our checks do not"
    )


def thinking_explicit(ctx: RuleContext) -> list[Finding]:
    """Rule ``thinking-explicit`` (see the module doc)."""
    model = ctx.recipe.model
    arch = ctx.catalog.models.get(model.family)
    if arch is None:
        return []  # referential reports the unknown family
    out: list[Finding] = []
    path = ("model", "thinking")
    if arch.thinking == "switchable" and model.thinking is None:
        out.append(
            ctx.finding(
                "thinking-explicit",
                ("model",),
                (
                    f"model family {model.family} has a switchable thinking mode; set thinking: on "
                    "or thinking: off (the golden curves and the client depend on it)"
                    + _imported_hint(ctx)
                ),
            )
        )
    elif arch.thinking == "none" and model.thinking is not None:
        out.append(
            ctx.finding(
                "thinking-explicit",
                path,
                (
                    f"got {model.thinking!r}; model family {model.family} has no thinking mode: "
                    "remove thinking"
                ),
            )
        )
    elif arch.thinking == "always" and model.thinking == "off":
        out.append(
            ctx.finding(
                "thinking-explicit",
                path,
                (f"got 'off'; model family {model.family} always thinks: use thinking: on"),
            )
        )
    out.extend(_curve_mode(ctx))
    out.extend(_curve_kwargs(ctx))
    return out


def _curve_mode(ctx: RuleContext) -> list[Finding]:
    spec = ctx.recipe.speculative
    if spec.acceptance != "synthetic" or spec.curve is None or spec.curve not in ctx.golden.names():
        return []
    mode = served_thinking(ctx.recipe, ctx.catalog)
    curve = ctx.golden.curve(spec.curve)
    if mode is None or mode in curve.modes():
        return []
    measured = ", ".join(curve.modes()) or "none"
    return [
        ctx.finding(
            "thinking-explicit",
            ("model", "thinking"),
            (
                f"got thinking {mode}; golden curve {spec.curve!r} was measured with thinking "
                f"{measured} only: a synthetic run must use a measured mode"
            ),
        )
    ]


def client_chat_kwargs(recipe: Recipe) -> dict[str, str | int | float | bool]:
    """The chat-template kwargs the matrix gives the client for ``recipe``.

    The recipe's ``client.chat-template-kwargs`` when set; else ``enable_thinking`` from
    an explicit thinking mode; else none. The completions API sends no chat template.
    Keep in step with ``matrix.expand._chat_kwargs``.
    """
    if recipe.client.api == "completions":
        return {}
    if recipe.client.chat_template_kwargs is not None:
        return dict(recipe.client.chat_template_kwargs)
    if recipe.model.thinking is None:
        return {}
    return {"enable_thinking": recipe.model.thinking == "on"}


def _flow(kwargs: Mapping[str, str | int | float | bool]) -> str:
    # The YAML flow mapping a person would paste under client.chat-template-kwargs.
    def value(v: str | int | float | bool) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return "{" + ", ".join(f"{k}: {value(v)}" for k, v in kwargs.items()) + "}"


def _curve_kwargs(ctx: RuleContext) -> list[Finding]:
    spec = ctx.recipe.speculative
    if spec.acceptance != "synthetic" or spec.curve is None or spec.curve not in ctx.golden.names():
        return []
    mode = served_thinking(ctx.recipe, ctx.catalog)
    wanted = ctx.golden.curve(spec.curve).chat_template_kwargs.get(mode or "")
    if not wanted:
        return []  # the curve does not record how it prompted: nothing to compare
    sent = client_chat_kwargs(ctx.recipe)
    if all(key in sent and sent[key] == value for key, value in wanted.items()):
        return []
    client = ctx.recipe.client
    fix = (
        f"set client.chat-template-kwargs to {_flow((client.chat_template_kwargs or {}) | wanted)}"
    )
    if client.api == "completions":
        how, fix = (
            "sends no chat template (client.api: completions)",
            f"use client.api: chat and {fix}",
        )
    else:
        how = f"would send chat-template kwargs {_flow(sent)}"
    return [
        ctx.finding(
            "thinking-explicit",
            ("client", "chat-template-kwargs"),
            (
                f"the client {how}; golden curve {spec.curve!r} was measured (thinking {mode}) "
                f"with {_flow(wanted)}: {fix}, so the server runs the measured mode"
            ),
        )
    ]


def golden_al_only(ctx: RuleContext) -> list[Finding]:
    """Rule ``golden-al-only`` (see the module doc)."""
    out = _hand_set_knobs(ctx)
    spec = ctx.recipe.speculative
    if spec.acceptance != "synthetic" or spec.curve is None or spec.draft_tokens is None:
        return out
    try:
        curve = ctx.golden.curve(spec.curve)
    except GoldenCurveError as err:
        return [*out, ctx.finding("golden-al-only", ("speculative", "curve"), str(err))]
    if curve.family != ctx.recipe.model.family:
        out.append(
            ctx.finding(
                "golden-al-only",
                ("speculative", "curve"),
                (
                    f"golden curve {spec.curve!r} was measured on family {curve.family}; this "
                    "recipe "
                    f"serves {ctx.recipe.model.family}: name a curve of its own family"
                ),
            )
        )
    out.extend(_curve_identity(ctx, curve))
    mode = served_thinking(ctx.recipe, ctx.catalog)
    if mode is not None and mode in curve.modes():
        try:
            ctx.golden.lookup(spec.curve, mode, spec.draft_tokens)
        except GoldenCurveError as err:
            out.append(ctx.finding("golden-al-only", ("speculative", "draft-tokens"), str(err)))
    warning = ctx.golden.precision_warning(spec.curve, ctx.recipe.model.precision)
    if warning is not None:
        out.append(ctx.finding("golden-al-only", ("speculative", "curve"), warning, "warning"))
    return out


def _curve_identity(ctx: RuleContext, curve: GoldenCurve) -> list[Finding]:
    # A curve belongs to one draft: its method (catalog/gate.yaml curve_methods says which
    # of ours measure the same draft) and, when it names one, its draft checkpoint.
    spec = ctx.recipe.speculative
    out: list[Finding] = []
    allowed = ctx.data.curve_methods.get(spec.method, (spec.method,))
    if curve.method not in allowed:
        out.append(
            ctx.finding(
                "golden-al-only",
                ("speculative", "curve"),
                f"got method {spec.method}; golden curve {curve.name!r} measured "
                f"{curve.method}: expected one of {', '.join(allowed)}; name a curve of this "
                "draft method",
            )
        )
    wanted, got = curve.draft_model, spec.draft_model
    if wanted is not None and (got is None or got.lower() != wanted.lower()):
        out.append(
            ctx.finding(
                "golden-al-only",
                ("speculative", "curve"),
                f"got draft-model {got or '(none)'}; golden curve {curve.name!r} was measured "
                f"with draft {wanted}: expected {wanted}; name the curve of this draft",
            )
        )
    return out


def _hand_set_knobs(ctx: RuleContext) -> list[Finding]:
    # Names compare as engines read them: env names in any case (a respelled name is a
    # hand-set attempt all the same), flags and option keys with '_' read as '-'.
    rule = ctx.data.golden_al_only
    engine = ctx.recipe.engine
    env_names = {name.upper() for name in rule.env}
    out = [
        ctx.finding(
            "golden-al-only",
            ("engine", "env", name),
            (
                f"{name} is set by the matrix from the golden curve; remove it and use "
                "speculative.acceptance: synthetic with a curve"
            ),
        )
        for name in engine.env
        if name.upper() in env_names
    ]
    words: list[tuple[str | int, str]] = (
        list(enumerate(engine.args))
        if isinstance(engine.args, list)
        else [(flag, f"{flag} {value}") for flag, value in engine.args.items()]
    )
    words += [(key, key) for key in ctx.recipe.speculative.options]
    for key, word in words:
        hit = next((s for s in rule.arg_substrings if norm(s) in norm(str(word))), None)
        if hit is None:
            continue
        where = isinstance(key, str) and key in ctx.recipe.speculative.options
        out.append(
            ctx.finding(
                "golden-al-only",
                ("speculative", "options", key) if where else ("engine", "args", key),
                (
                    f"a literal acceptance length ({hit}) is not allowed in server args or "
                    "speculative options; name a golden curve in speculative.curve"
                ),
            )
        )
    return out
