"""Track rules: tag versions, what a rule admits, engine.track in schema, matrix and policy."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version
from pydantic import ValidationError

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.tracking import TrackRule, follows, runs_at, tag_version
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.recipes import policy
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import ROOT

SGLANG = "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260730"
NIGHTLY = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("v0.5.16", "0.5.16"),
        ("v0.5.16-rocm720-mi30x-20260730", "0.5.16"),
        ("0.11.0", "0.11.0"),
        ("1.2.0rc0.post1", "1.2.0rc0.post1"),
        ("1.1.0rc2.post2", "1.1.0rc2.post2"),
        ("v0.5.10rc0-rocm720-mi35x-20260413", "0.5.10rc0"),
        ("v0.20.1_ubuntu2404", "0.20.1"),
        ("nightly-a8d1aa9c", None),
        ("latest", None),
        ("rocm7.2.3_ubuntu24.04_py3.12", None),
        ("v1.x", None),
    ],
)
def test_tag_version(tag: str, version: str | None) -> None:
    assert tag_version(tag) == (Version(version) if version is not None else None)


def test_rule_yaml_spelling_and_validation() -> None:
    rule = TrackRule.model_validate({"tags": ["nightly-*"], "newer-than-pinned": True})
    assert rule.tags == ("nightly-*",) and rule.newer_than_pinned
    with pytest.raises(ValidationError, match="track needs tags"):
        TrackRule.model_validate({})
    with pytest.raises(ValidationError, match="track needs tags"):
        TrackRule.model_validate({"tags": [], "newer-than-pinned": False})
    with pytest.raises(ValidationError, match="should match pattern"):
        TrackRule.model_validate({"tags": ["nightly-*, v*"]})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TrackRule.model_validate({"tags": ["x"], "newer_than": True})


def _follows(rule: dict[str, Any] | None, pinned: str, candidate: str) -> bool:
    track = TrackRule.model_validate(rule) if rule is not None else None
    return follows(track, ImageRef.parse(pinned), ImageRef.parse(candidate))


@pytest.mark.parametrize(
    ("rule", "pinned", "candidate", "expected"),
    [
        # No rule: the pinned image only.
        (None, NIGHTLY, NIGHTLY, True),
        (None, NIGHTLY, "vllm/vllm-openai:nightly-ffff", False),
        # Globs on the tag; another repository never.
        ({"tags": ["nightly-*"]}, NIGHTLY, "vllm/vllm-openai:nightly-ffff", True),
        ({"tags": ["nightly-*"]}, NIGHTLY, "docker.io/vllm/vllm-openai:nightly-ffff", True),
        ({"tags": ["nightly-*"]}, NIGHTLY, "vllm/vllm-openai:v0.11.0", False),
        ({"tags": ["nightly-*"]}, NIGHTLY, "vllm/vllm-openai-rocm:nightly-ffff", False),
        ({"tags": ["Nightly-*"]}, NIGHTLY, "vllm/vllm-openai:nightly-ffff", False),
        # The pinned tag itself whatever the rule.
        ({"tags": ["v*"]}, NIGHTLY, NIGHTLY, True),
        # newer-than-pinned: strictly greater version, same flavour by glob.
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True}, SGLANG,
         "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi30x-20260815", True),
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True}, SGLANG,
         "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260801", False),
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True}, SGLANG,
         "lmsysorg/sglang-rocm:v0.5.15-rocm720-mi30x-20260901", False),
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True}, SGLANG,
         "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi35x-20260815", False),
        ({"newer-than-pinned": True}, "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14",
         "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc24", True),
        ({"newer-than-pinned": True}, "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14",
         "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc2", False),
        ({"newer-than-pinned": True}, "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14",
         "nvcr.io/nvidia/tensorrt-llm/release:latest", False),
        # A pinned tag without a version: nothing is newer.
        ({"newer-than-pinned": True}, NIGHTLY, "vllm/vllm-openai:v9.9.9", False),
        # Pinned by digest only: that digest, and globs, but never "newer".
        (None, f"vllm/vllm-openai@sha256:{'a' * 64}", f"vllm/vllm-openai@sha256:{'a' * 64}", True),
        ({"tags": ["nightly-*"]}, f"vllm/vllm-openai@sha256:{'a' * 64}",
         "vllm/vllm-openai:nightly-ffff", True),
        ({"tags": ["*"], "newer-than-pinned": True}, f"vllm/vllm-openai@sha256:{'a' * 64}",
         "vllm/vllm-openai:v1.0.0", False),
    ],
)  # fmt: skip
def test_follows(rule: dict[str, Any] | None, pinned: str, candidate: str, expected: bool) -> None:
    assert _follows(rule, pinned, candidate) is expected


@pytest.mark.parametrize(
    ("rule", "candidate", "runs", "follows_it"),
    [
        # An older build of the tracked flavour: replayable (backfill), never followed.
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True},
         "lmsysorg/sglang-rocm:v0.5.15-rocm720-mi30x-20260901", True, False),
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True},
         "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi30x-20260815", True, True),
        # Another flavour: neither.
        ({"tags": ["v*-rocm720-mi30x-*"], "newer-than-pinned": True},
         "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi35x-20260815", False, False),
        (None, "lmsysorg/sglang-rocm:v0.5.15-rocm720-mi30x-20260901", False, False),
        (None, SGLANG, True, True),
    ],
)  # fmt: skip
def test_runs_at_replays_history_that_follows_would_not_measure_unasked(
    rule: dict[str, Any] | None, candidate: str, runs: bool, follows_it: bool
) -> None:
    track = TrackRule.model_validate(rule) if rule is not None else None
    assert runs_at(track, ImageRef.parse(SGLANG), ImageRef.parse(candidate)) is runs
    assert _follows(rule, SGLANG, candidate) is follows_it


def _recipe(**engine: Any) -> Recipe:
    return Recipe.model_validate(
        {
            "id": "r1",
            "model": {"hf-id": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1",
                      "precision": "fp8"},
            "sku": "h200",
            "engine": {"framework": "vllm", "image": "vllm/vllm-openai:v0.11.0", **engine},
            "scenarios": {"fixed-seq-len": [
                {"isl": 1024, "osl": 1024, "search-space": [{"tp": 8, "conc-list": [4, 8]}]}
            ]},
        }
    )  # fmt: skip


def test_recipe_track_reaches_the_job_but_not_its_fingerprint() -> None:
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    plain = expand([_recipe()], golden=golden, catalog=catalog)
    tracked = expand(
        [_recipe(track={"tags": ["v*"], "newer-than-pinned": True})],
        golden=golden,
        catalog=catalog,
    )
    assert [j.fingerprint for j in tracked] == [j.fingerprint for j in plain]
    assert {j.image_track for j in plain} == {None}
    assert {j.image_track for j in tracked} == {TrackRule(tags=("v*",), newer_than_pinned=True)}
    assert tracked[0].model_dump(mode="json")["image_track"] == {
        "tags": ["v*"],
        "newer_than_pinned": True,
    }


def _policy_lines(recipe: Recipe) -> list[str]:
    data = cached_policy(ROOT / "catalog")
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    findings = policy.check(
        recipe, catalog=catalog, golden=golden, data=data, rules=["image-track"]
    )
    return [str(f) for f in findings]


def test_policy_image_track() -> None:
    assert _policy_lines(_recipe(track={"tags": ["v*"]})) == []
    assert _policy_lines(_recipe(image=NIGHTLY, track={"tags": ["nightly-*"]})) == []
    digest_only = _recipe(image=f"vllm/vllm-openai@sha256:{'c' * 64}", track={"tags": ["v*"]})
    assert _policy_lines(digest_only) == [
        f"engine.track: got a track rule on vllm/vllm-openai@sha256:{'c' * 64}, pinned by "
        "digest only; expected an image pinned by tag (repository:tag[@digest]) so new tags "
        "can be compared with it: add the tag the digest was published as, or remove track "
        "[image-track]"
    ]
    unversioned = _recipe(image=NIGHTLY, track={"newer-than-pinned": True})
    assert _policy_lines(unversioned) == [
        "engine.track.newer-than-pinned: got newer-than-pinned with pinned tag "
        "'nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3', which has no version (e.g. "
        "v0.5.16-...), so no tag is ever newer; pin a versioned tag or drop newer-than-pinned "
        "and follow tags by glob [image-track]"
    ]
    bad = _recipe(image="Vllm/x:1", track={"tags": ["*"]})
    assert _policy_lines(bad) == [
        "engine.image: image reference 'Vllm/x:1': path component 'Vllm' is not lower-case "
        "letters and digits joined by '.', '_', '__' or '-'; expected "
        "[REGISTRY/]REPOSITORY[:TAG][@DIGEST], e.g. vllm/vllm-openai:v0.11.0 or "
        "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14; track needs a parsable image "
        "[image-track]"
    ]
