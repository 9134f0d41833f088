"""Rules on the engine image: version gates and image facts.

- ``engine-version-gate``: a feature the recipe uses needs a minimum engine version; the
  version comes from catalog/image-facts.yaml or the tag (per-repository patterns in
  catalog/version-gates.yaml). An unknown version where a gate applies is an error, and
  so is a version only the tag vouches for: a tag may prove an image too old, only a
  fact proves it new enough.
- ``image-facts``: an agentic-coding recipe's image runs the client, so its Python must
  be in the client's range (catalog/policy.yaml); an image without that fact fails.
- ``image-ref``: the image reference parses with the project's one parser
  (``images/refs.py``: registry, repository, tag, digest); anything else is an error.
- ``image-track``: a recipe that follows new tags (``engine.track``) pins its image by a
  tag, since the rule compares tags with the pinned one (a digest-only pin has none);
  ``newer-than-pinned`` needs a pinned tag with a version to compare against.
"""

from __future__ import annotations

import re

from inferx_pipeline.errors import ImageRefError
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.tracking import tag_version
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.base import RuleContext
from inferx_pipeline.recipes.policy.data import PolicyData, VersionGate

_IMAGE = ("engine", "image")
_TRACK = ("engine", "track")


def version_tuple(text: str) -> tuple[int, ...]:
    """``'0.5.16.post1'`` -> ``(0, 5, 16)``: the leading dotted numbers, for comparison."""
    numbers: list[int] = []
    for part in text.split("."):
        match = re.match(r"\d+", part)
        if match is None:
            break
        numbers.append(int(match.group()))
        if match.end() != len(part):
            break
    return tuple(numbers)


def split_image(image: str) -> tuple[str, str]:
    """``repo/name:tag@sha256:...`` -> ``('repo/name', 'tag')``; tag '' when absent."""
    ref = image.split("@", 1)[0]
    repository, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, ""
    return repository, tag


def engine_version(data: PolicyData, image: str) -> str | None:
    """The engine version inside ``image``: the image fact, else the tag pattern, else None."""
    fact = data.images.get(image)
    if fact is not None and fact.engine_version is not None:
        return fact.engine_version
    repository, tag = split_image(image)
    for pattern in data.tag_patterns:
        if pattern.repository == repository:
            match = re.search(pattern.pattern, tag)
            if match is not None:
                return match.group("version")
    return None


def _applies(ctx: RuleContext, gate: VersionGate) -> str | None:
    """Why ``gate`` applies to the recipe (a short reason), or None."""
    recipe = ctx.recipe
    if gate.framework != recipe.engine.framework:
        return None
    when = gate.when
    if when.acceptance is not None and recipe.speculative.acceptance == when.acceptance:
        return f"acceptance {when.acceptance}"
    env = next((name for name in when.env_any if name in recipe.engine.env), None)
    if env is not None:
        return f"env {env}"
    args = recipe.engine.args
    flags = args if isinstance(args, list) else list(args)
    flag = next((f for f in when.args_any if f in flags), None)
    return None if flag is None else f"arg {flag}"


def engine_version_gate(ctx: RuleContext) -> list[Finding]:
    """Rule ``engine-version-gate`` (see the module doc)."""
    image = ctx.recipe.engine.image
    out: list[Finding] = []
    for gate in ctx.data.gates:
        why = _applies(ctx, gate)
        if why is None:
            continue
        version = engine_version(ctx.data, image)
        if version is None:
            out.append(
                ctx.finding(
                    "engine-version-gate",
                    _IMAGE,
                    (
                        f"cannot tell the {gate.framework} version of {image} ({why} needs >= "
                        f"{gate.min_version}): its tag matches no pattern in "
                        "catalog/version-gates.yaml "
                        "and catalog/image-facts.yaml lists no engine_version; add one"
                    ),
                )
            )
        elif version_tuple(version) < version_tuple(gate.min_version):
            out.append(
                ctx.finding(
                    "engine-version-gate",
                    _IMAGE,
                    (
                        f"got {gate.framework} {version} ({image}); expected >= "
                        f"{gate.min_version}: "
                        f"{gate.reason}; use a newer image"
                    ),
                )
            )
        elif not _fact_says(ctx.data, image):
            out.append(
                ctx.finding(
                    "engine-version-gate",
                    _IMAGE,
                    (
                        f"got {image}, whose {gate.framework} version {version} comes from its "
                        f"tag alone ({why} needs >= {gate.min_version}); expected an "
                        "engine_version fact in catalog/image-facts.yaml, since a tag is a "
                        "name, not a measurement; add it from the image (its /version, as the "
                        "preflight reads it) with its source"
                    ),
                )
            )
    return out


def _fact_says(data: PolicyData, image: str) -> bool:
    # A tag can say "too old" (a reason to refuse), never "new enough" (a reason to run).
    fact = data.images.get(image)
    return fact is not None and fact.engine_version is not None


def image_facts(ctx: RuleContext) -> list[Finding]:
    """Rule ``image-facts`` (see the module doc)."""
    if not ctx.recipe.scenarios.agentic_coding:
        return []
    image = ctx.recipe.engine.image
    need = ctx.data.client_python
    fact = ctx.data.images.get(image)
    if fact is None or fact.python is None:
        return [
            ctx.finding(
                "image-facts",
                _IMAGE,
                (
                    f"no Python fact for {image} in catalog/image-facts.yaml; the agentic client "
                    "needs "
                    f"Python >= {need.min} and < {need.below}: add python (docker run --rm "
                    f"--entrypoint python3 {image} --version) with its source"
                ),
            )
        ]
    version = version_tuple(fact.python)
    if version_tuple(need.min) <= version < version_tuple(need.below):
        return []
    return [
        ctx.finding(
            "image-facts",
            _IMAGE,
            (
                f"got Python {fact.python} in {image}; expected >= {need.min} and < {need.below} "
                "for "
                "the agentic client (AIPerf): use an image with a supported Python"
            ),
        )
    ]


def image_ref(ctx: RuleContext) -> list[Finding]:
    """Rule ``image-ref`` (see the module doc)."""
    try:
        ImageRef.parse(ctx.recipe.engine.image)
    except ImageRefError as err:
        return [ctx.finding("image-ref", _IMAGE, f"got {err}; fix the reference")]
    return []


def image_track(ctx: RuleContext) -> list[Finding]:
    """Rule ``image-track`` (see the module doc)."""
    track = ctx.recipe.engine.track
    if track is None:
        return []
    image = ctx.recipe.engine.image
    try:
        pinned = ImageRef.parse(image)
    except ImageRefError as err:
        return [ctx.finding("image-track", _IMAGE, f"{err}; track needs a parsable image")]
    if pinned.tag is None:
        return [
            ctx.finding(
                "image-track",
                _TRACK,
                (
                    f"got a track rule on {image}, pinned by digest only; expected an image "
                    "pinned by tag (repository:tag[@digest]) so new tags can be compared with "
                    "it: add the tag the digest was published as, or remove track"
                ),
            )
        ]
    if track.newer_than_pinned and tag_version(pinned.tag) is None:
        return [
            ctx.finding(
                "image-track",
                (*_TRACK, "newer-than-pinned"),
                (
                    f"got newer-than-pinned with pinned tag {pinned.tag!r}, which has no "
                    "version (e.g. v0.5.16-...), so no tag is ever newer; pin a versioned tag "
                    "or drop newer-than-pinned and follow tags by glob"
                ),
            )
        ]
    return []
