"""The changelog extraction rule: each clause, then the real InferenceX perf-changelog.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import ImageHistoryError
from inferx_pipeline.images.changelog import ChangelogEntry, images_in_line, read_changelog
from inferx_pipeline.images.refs import ImageRef
from tests.paths import INFERENCEX

VLLM = ImageRef.parse("vllm/vllm-openai:v0.22.0")
TRT = ImageRef.parse("nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14")
SGLANG_ROCM = ImageRef.parse("lmsysorg/sglang:v0.5.12-rocm700-mi30x")


@pytest.mark.parametrize(
    ("line", "pinned", "framework", "expected"),
    [
        # Bare versions after from/to, with the pinned tag's v convention.
        ("Upgrade vLLM from 0.10.2 to 0.11.0 for GPT-OSS NVIDIA single-node configs", VLLM,
         "vllm", ["vllm/vllm-openai:v0.10.2", "vllm/vllm-openai:v0.11.0"]),
        ("Update vLLM image for NVIDIA configs from vLLM 0.11.0 to vLLM 0.11.2", VLLM, "vllm",
         ["vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.2"]),
        # Partial references name the last path component; a bare tag follows its anchor.
        ("Upgrade GPT-OSS TRT images from 'release:1.1.0rc2.post2' to '1.2.0rc0.post1'", TRT,
         "trt", ["nvcr.io#nvidia/tensorrt-llm/release:1.1.0rc2.post2",
                 "nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc0.post1"]),
        ("Update TensorRT-LLM image from v1.1.0rc2.post2 (154d/124d old) to v1.3.0rc14", TRT,
         "trt", ["nvcr.io#nvidia/tensorrt-llm/release:1.1.0rc2.post2",
                 "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"]),
        # Full references, in any spelling of the repository, respelled as the recipe does.
        ("Update TRT image from nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc0.post1 to "
         "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc2", TRT, "trt",
         ["nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc0.post1",
          "nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc2"]),
        # A tag right before "image tag"; one after "upstream".
        ("Consolidate H200 and B200 SGLang configurations to use unified v0.5.5-cu129-amd64 "
         "image tag", SGLANG_ROCM, "sglang", ["lmsysorg/sglang:v0.5.5-cu129-amd64"]),
        ("Update MI355x Deepseek-R1 FP4 SGLang Image to upstream v0.5.6.post1", SGLANG_ROCM,
         "sglang", ["lmsysorg/sglang:v0.5.6.post1"]),
        # "x / y" continues a counted tag; "->" introduces one.
        ("Update SGLang image from v0.5.10.post1-cu130 / v0.5.11-cu130 (30d old) to "
         "v0.5.12-cu130", SGLANG_ROCM, "sglang", ["lmsysorg/sglang:v0.5.10.post1-cu130",
                                                   "lmsysorg/sglang:v0.5.11-cu130",
                                                   "lmsysorg/sglang:v0.5.12-cu130"]),
        ("Image: vllm/vllm-openai:v0.21.0 -> v0.19.1-cu130", VLLM, "vllm",
         ["vllm/vllm-openai:v0.21.0", "vllm/vllm-openai:v0.19.1-cu130"]),
        # A bare tag after a full reference belongs to that reference's repository.
        ("Bump image from nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.1.0-dev.2 to "
         "1.3.0-dev.1-cuda13", TRT, "trt", []),
        # Another repository, another engine, or no image words: nothing.
        ("Image: vllm/vllm-openai-rocm:v0.15.1", VLLM, "vllm", []),
        ("Update SGLang image from v0.5.8 to v0.5.9", VLLM, "vllm", []),
        ("Update chunked-prefill-size and max-prefill-tokens from 196608 to 131072", VLLM,
         "vllm", []),
        ("Key changes: AITER v0.1.10.post3 with FP8 Prefill/Decode/KV Cache", SGLANG_ROCM,
         "sglang", []),
        ("Bump image to vllm/vllm-openai:nightly-4080263bb2c5 and dynamo to 1.3.0.dev20260710",
         VLLM, "vllm", ["vllm/vllm-openai:nightly-4080263bb2c5"]),
        # Words that only look like tags: B200, w4a4, abbreviations, versions in prose.
        ("Add DeepSeek-V4-Pro single-node B200 vLLM benchmark derived from B200 pareto sweep",
         VLLM, "vllm", []),
        ("Refresh DSV4 8k/1k vLLM GB300 recipes with new w4a4 container", VLLM, "vllm", []),
        ("Image lmsysorg/sglang:v0.5.16-cu130. SGLANG_SIMULATE_ACC_TOKEN_MODE is only read "
         "from v0.5.16", SGLANG_ROCM, "sglang", ["lmsysorg/sglang:v0.5.16-cu130"]),
        ("Image moves from lmsysorg/sglang:v0.5.12-cu130 to v0.5.16-cu130: SGLANG_X is only "
         "read from v0.5.16", SGLANG_ROCM, "sglang", ["lmsysorg/sglang:v0.5.12-cu130",
                                                      "lmsysorg/sglang:v0.5.16-cu130"]),
        # URLs are not references; digests are kept.
        ("Image includes upstream SGLang PRs: https://github.com/sgl-project/sglang/pull/21188",
         SGLANG_ROCM, "sglang", []),
        (f"Image pinned to lmsysorg/sglang:deepseek-v4-b300@sha256:{'2' * 64}", SGLANG_ROCM,
         "sglang", [f"lmsysorg/sglang:deepseek-v4-b300@sha256:{'2' * 64}"]),
    ],
)  # fmt: skip
def test_rule(line: str, pinned: ImageRef, framework: str, expected: list[str]) -> None:
    assert images_in_line(line, pinned, framework) == expected


def _named(key: str, image: str, framework: str) -> list[tuple[str, list[str]]]:
    """(pr number, images) of every entry of the real changelog that names one for ``key``."""
    pinned = ImageRef.parse(image)
    out: list[tuple[str, list[str]]] = []
    for entry in read_changelog(INFERENCEX / "perf-changelog.yaml"):
        if entry.applies_to([key]):
            images = [i for d in entry.description for i in images_in_line(d, pinned, framework)]
            if images:
                out.append((entry.pr_link.rsplit("/", 1)[-1], images))
    return out


def test_real_changelog_gptoss_vllm_upgrades() -> None:
    tags = [
        [i.split(":")[1] for i in images]
        for _, images in _named("gptoss-fp4-h200-vllm", "vllm/vllm-openai:v0.22.0", "vllm")
    ]
    assert tags == [
        ["v0.10.2", "v0.11.0"],
        ["v0.11.0", "v0.11.2"],
        ["v0.11.2", "v0.13.0"],
        ["v0.13.0", "v0.15.1"],
        ["v0.15.1", "v0.18.0"],
        ["v0.18.0", "v0.20.2"],
        ["v0.20.2", "v0.21.0"],
        ["v0.21.0", "v0.22.0"],
    ]


def test_real_changelog_trt_release_tags() -> None:
    image = "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"
    assert _named("gptoss-fp4-b200-trt", image, "trt") == [
        ("110", [f"{image[:-9]}1.1.0rc2.post2", f"{image[:-9]}1.2.0rc0.post1"]),
        ("1490", [f"{image[:-9]}1.2.0rc2.post2", image]),
    ]
    assert _named("dsr1-fp8-h200-trt", image, "trt") == [
        ("266", [f"{image[:-9]}1.2.0rc0.post1", f"{image[:-9]}1.2.0rc2"]),
        ("1487", [f"{image[:-9]}1.1.0rc2.post2", image]),
    ]


def test_real_changelog_sglang_rocm_keeps_only_its_repository() -> None:
    named = _named("qwen3.5-fp8-mi300x-sglang", "lmsysorg/sglang:v0.5.12-rocm720-mi30x", "sglang")
    assert named == [
        ("850", ["lmsysorg/sglang:v0.5.9-rocm720-mi30x"]),
        ("1063", ["lmsysorg/sglang:v0.5.10-rocm720-mi30x"]),
        (
            "1427",
            ["lmsysorg/sglang:v0.5.10-rocm720-mi30x", "lmsysorg/sglang:v0.5.12-rocm720-mi30x"],
        ),
    ]
    # The same config pinned on lmsysorg/sglang-rocm: the full lmsysorg/sglang references
    # are another repository; bare tags belong to the recipe's own.
    rocm = "lmsysorg/sglang-rocm:v0.5.12-rocm720-mi30x"
    assert _named("qwen3.5-fp8-mi300x-sglang", rocm, "sglang") == [
        ("1427", [
            "lmsysorg/sglang-rocm:v0.5.10-rocm720-mi30x",
            "lmsysorg/sglang-rocm:v0.5.12-rocm720-mi30x",
        ]),
    ]  # fmt: skip


def test_read_changelog_errors(tmp_path: Path) -> None:
    bad = tmp_path / "perf-changelog.yaml"
    bad.write_text("- config-keys: [a]\n  description: [x]\n")
    with pytest.raises(ImageHistoryError, match=r"entry 0\.pr-link: Field required"):
        read_changelog(bad)
    bad.write_text("- {config-keys: [a], description: [x], pr-link: y, colour: red}\n")
    with pytest.raises(ImageHistoryError, match=r"entry 0\.colour: Extra inputs"):
        read_changelog(bad)
    with pytest.raises(ImageHistoryError, match="cannot read the changelog"):
        read_changelog(tmp_path / "missing.yaml")


def test_entry_matches_globs() -> None:
    entry = ChangelogEntry.model_validate(
        {"config-keys": ["dsr1-fp8-*-sglang"], "description": [], "pr-link": "x"}
    )
    assert entry.applies_to(["other", "dsr1-fp8-h200-sglang"])
    assert not entry.applies_to(["dsr1-fp4-h200-sglang", "DSR1-fp8-h200-sglang"])
