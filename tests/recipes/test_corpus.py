"""The broken-recipe corpus: each file fails with exactly the expected error lines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferx_pipeline.recipes.loader import LoadResult

from .conftest import ROOT

C = "tests/fixtures/recipes"
SEED_QWEN35 = "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml"

EXPECTED: dict[str, list[str]] = {
    # The text is libyaml's (PyYAML's wheels ship it; the loader uses it when present).
    "malformed-yaml.yaml": [
        f"{C}/malformed-yaml.yaml:3:4: malformed YAML: did not find expected ',' or '}}' [syntax]"
    ],
    "wrong-types.yaml": [
        f"{C}/wrong-types.yaml:6:12: scenarios.fixed-seq-len[0].osl: got 'many'; "
        "expected a valid integer [schema]"
    ],
    "unknown-key.yaml": [
        f"{C}/unknown-key.yaml:4:3: engine.colour: got an unknown key; expected one of: args, "
        "cudagraph-capture-sizes, env, framework, gpu-memory-utilization, image, max-num-seqs, "
        "track; remove or rename it [schema]"
    ],
    "fragment-error.yaml": [
        f"{C}/_fragments/bad-image.yaml:2:10: engine.image: got 'not an image'; expected a "
        rf"string matching ^\S+$ [schema] (via {C}/fragment-error.yaml -> "
        f"{C}/_fragments/bad-image.yaml)"
    ],
    "missing-fragment.yaml": [
        f"{C}/missing-fragment.yaml:1:10: extends: fragment {C}/_fragments/no-such-fragment.yaml"
        f" not found (chain {C}/missing-fragment.yaml -> {C}/_fragments/no-such-fragment.yaml);"
        " paths are relative to the file that names them [extends]"
    ],
    "extends-cycle.yaml": [
        f"{C}/_fragments/cycle-b.yaml:1:10: extends: cycle {C}/extends-cycle.yaml -> "
        f"{C}/_fragments/cycle-b.yaml -> {C}/extends-cycle.yaml; remove one of these extends "
        "entries [extends]"
    ],
    "literal-al.yaml": [
        f"{C}/literal-al.yaml:6:3: speculative.acceptance-length: a literal acceptance length "
        "is not allowed; set acceptance: synthetic and name a golden curve with curve: "
        "<file stem under golden_al_distribution/> [schema]"
    ],
    "thinking-missing.yaml": [
        f"{C}/thinking-missing.yaml:4:3: model: model family qwen3.8-27b has a switchable "
        "thinking mode; set thinking: on or thinking: off (the golden curves and the client "
        "depend on it) [thinking-explicit]"
    ],
    "thinking-off-curve.yaml": [
        f"{C}/thinking-off-curve.yaml:4:13: model.thinking: got thinking off; golden curve "
        "'qwen3.8-27b_mtp' was measured with thinking on only: a synthetic run must use a "
        "measured mode [thinking-explicit]"
    ],
    "thinking-kwargs.yaml": [
        f"{C}/thinking-kwargs.yaml:5:25: client.chat-template-kwargs: the client would send "
        "chat-template kwargs {thinking_mode: disabled}; golden curve 'minimaxm3_eagle3' was "
        "measured (thinking on) with {thinking_mode: enabled}: set client.chat-template-kwargs "
        "to {thinking_mode: enabled}, so the server runs the measured mode [thinking-explicit]"
    ],
    "golden-draft-length.yaml": [
        f"{C}/golden-draft-length.yaml:5:17: speculative.draft-tokens: golden curve "
        "'qwen3.8-27b_mtp' (thinking on) has no AL for 4 draft tokens; measured: 3 "
        "[golden-al-only]"
    ],
    "golden-missing-curve.yaml": [
        f"{C}/golden-missing-curve.yaml:8:10: speculative.curve: golden curve "
        f"'qwen3.8-27b_eagle3' not found in {ROOT}/golden_al_distribution; known curves: "
        "dsv4-pro-0813-dspark, dsv4_mtp, glm5.2_mtp, kimik2.5_eagle3, kimik3_dspark, "
        "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method, "
        "minimaxm3_eagle3, minimaxm3_eagle3_gqa, qwen3.5_mtp, qwen3.8-27b_mtp [golden-al-only]"
    ],
    "golden-hand-set.yaml": [
        f"{C}/golden-hand-set.yaml:7:30: engine.env.SGLANG_SIMULATE_ACC_LEN: "
        "SGLANG_SIMULATE_ACC_LEN is set by the matrix from the golden curve; remove it and use "
        "speculative.acceptance: synthetic with a curve [golden-al-only]"
    ],
    "image-python.yaml": [
        f"{C}/image-python.yaml:5:10: engine.image: got Python 3.10.12 in "
        "lmsysorg/sglang:v0.5.16-rocm720-mi30x; expected >= 3.11 and < 3.14 for the agentic "
        "client (AIPerf): use an image with a supported Python [image-facts]"
    ],
    "image-track.yaml": [
        f"{C}/image-track.yaml:5:10: engine.track: got a track rule on vllm/vllm-openai-rocm@"
        "sha256:5027e95bf6ec536856b1b52a91d1f35ff5c564ab83e8a94758a169ff09bb8df3, pinned by "
        "digest only; expected an image pinned by tag (repository:tag[@digest]) so new tags "
        "can be compared with it: add the tag the digest was published as, or remove track "
        "[image-track]"
    ],
    "vendor-kv-offload.yaml": [
        f"{C}/vendor-kv-offload.yaml:11:31: scenarios.agentic-coding[0].search-space[1]."
        "kv-offload-backend: row agentic-coding[0].search-space[1] (tp8, conc [8, 16]): "
        "mooncake KV offload (DRAM) is not supported on AMD SKUs (mi325x); use kv-offloading: "
        "none or another backend [vendor-kv-offload]"
    ],
    "agentic-spec-decoding.yaml": [
        f"{C}/agentic-spec-decoding.yaml:7:72: scenarios.agentic-coding[0].search-space[0]."
        "conc-list: got concurrency 24; agentic MTP on mi325x stops at 16 (catalog/policy.yaml)"
        " [agentic-spec-decoding]"
    ],
    "agentic-draft-steps.yaml": [
        # One line for the recipe's draft length, not one per arm (the seed has five).
        f"{C}/agentic-draft-steps.yaml:5:17: speculative.draft-tokens: got 1; agentic MTP on "
        "mi325x keeps >= 2 draft steps (catalog/policy.yaml) [agentic-spec-decoding]"
    ],
    "agentic-no-spec.yaml": [
        f"{C}/agentic-no-spec.yaml:6:11: scenarios.agentic-coding[0].search-space[0]: row "
        "agentic-coding[0].search-space[0] (tp8, conc [1, 4]): agentic-coding arms must use "
        "speculative decoding; set spec-decoding (and the recipe's speculative block) "
        "[agentic-spec-decoding]"
    ],
    "memory-fit.yaml": [
        f"{C}/memory-fit.yaml:13:17: scenarios.fixed-seq-len[0].search-space[0].tp: row "
        "fixed-seq-len[0].search-space[0] (tp4, conc [4]) needs 172.9 GB per GPU (weights "
        "172.8 GB + KV cache 0.2 GB for 1 seq x 2,304 tokens); h200 has 136.3 GB (141 GiB HBM"
        " x 0.90 gpu-memory-utilization): no sequence fits (the weights, per-slot state and one "
        "full context exceed it); raise tp, lower max-num-seqs or serve a smaller precision "
        "[memory-fit]"
    ],
    "referential.yaml": [
        f"{C}/referential.yaml:8:17: scenarios.fixed-seq-len[0].search-space[0].tp: got tp 16 "
        "x pp 1 x pcp 1 = 16 GPUs; expected at most 8 (mi325x GPUs per node) [referential]",
        f"{C}/referential.yaml:9:24: scenarios.fixed-seq-len[0].search-space[1].ep: got ep 3 "
        "with tp 4; expected ep dividing tp (1 or 4 on one node) [referential]",
        f"{C}/referential.yaml:10:30: scenarios.fixed-seq-len[0].search-space[2].dcp-size: got "
        "dcp-size 8 with tp 4; expected tp % dcp-size == 0 [referential]",
    ],
    "unknown-sku.yaml": [
        f"{C}/unknown-sku.yaml:3:6: sku: got 'h900'; expected a SKU of catalog/skus.yaml: b200,"
        " b300, cpu, gb200, gb300, h100, h200, mi300x, mi325x, mi355x, rtx6000pro [referential]"
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_fails_with_exact_lines(name: str, load: Callable[..., LoadResult]) -> None:
    result = load(f"{C}/{name}")
    assert [str(e) for e in result.errors] == EXPECTED[name]
    assert result.recipes == []


def test_valid_corpus_recipe_loads(load: Callable[..., LoadResult]) -> None:
    result = load(f"{C}/valid.yaml")
    assert result.errors == []
    assert [r.recipe.id for r in result.recipes] == ["corpus-valid"]


def test_version_gate_on_v0512_seed(load: Callable[..., LoadResult]) -> None:
    result = load(f"{C}/version-gate.yaml")
    lines = [str(e) for e in result.errors]
    assert (
        f"{C}/version-gate.yaml:5:10: engine.image: got sglang 0.5.12 "
        "(lmsysorg/sglang:v0.5.12-rocm720-mi30x); expected >= 0.5.16: "
        "SGLANG_SIMULATE_ACC_TOKEN_MODE (synthetic acceptance with real draft tokens) needs "
        "SGLang >= 0.5.16; older images silently ignore it and run real acceptance; use a "
        "newer image [engine-version-gate]"
    ) in lines
    assert {e.rule for e in result.errors} == {"engine-version-gate", "image-facts"}


def test_bad_recipe_does_not_stop_the_others(load: Callable[..., LoadResult]) -> None:
    result = load(C)
    # The one valid file that comes first still loads; every broken file is reported.
    assert [str(r.source) for r in result.recipes] == [f"{C}/duplicate-id.yaml"]
    names = {str(e).split(":", 1)[0] for e in result.errors}
    assert f"{C}/wrong-types.yaml" in names and f"{C}/unknown-sku.yaml" in names
    dup = [str(e) for e in result.errors if "duplicate recipe id" in str(e)]
    assert dup == [
        f"{C}/valid.yaml:2:5: id: duplicate recipe id 'corpus-valid' (also in "
        f"{C}/duplicate-id.yaml); recipe ids are unique [schema]"
    ]


def test_directory_never_loads_fragments(load: Callable[..., LoadResult]) -> None:
    result = load(C)
    assert not any("_fragments/base.yaml:1" in str(e) for e in result.errors)
    assert not any(str(e).startswith(f"{C}/_fragments/base.yaml") for e in result.errors)
