"""catalog/evals.yaml: per-family task, threshold and answer budget, with sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import CatalogError
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, load_eval_catalog
from tests.paths import ROOT


def test_families_resolve_to_their_task_and_threshold(evals: EvalCatalog) -> None:
    qwen = evals.for_family("qwen3.5")
    assert (qwen.task_name, qwen.threshold, qwen.max_tokens) == ("gsm8k", 0.94, 12288)
    assert qwen.task.dataset == "host" and qwen.task.filters == ("strict-match", "flexible-extract")
    assert "thresholds.yaml models.qwen3.5" in qwen.source
    unlisted = evals.for_family("kimik3")  # no entry: InferenceX's default
    assert (unlisted.task_name, unlisted.threshold) == ("gsm8k", 0.90)
    tiny = evals.for_family("tiny-qwen3")
    assert (tiny.task_name, tiny.task.dataset, tiny.max_tokens) == ("gsm8k-inferx", "shipped", 32)


def test_every_entry_states_its_source(evals: EvalCatalog) -> None:
    sources = [evals.protocol.source, evals.default.source, evals.synthetic_acceptance.source]
    sources += [task.source for task in evals.tasks.values()]
    sources += [model.source for model in evals.models.values()]
    assert all(source.strip() for source in sources)


def test_an_unknown_task_is_a_catalog_error(tmp_path: Path) -> None:
    text = (ROOT / "catalog" / "evals.yaml").read_text().replace("task: gsm8k-inferx", "task: mmlu")
    (tmp_path / "evals.yaml").write_text(text)
    with pytest.raises(
        CatalogError, match=r"models\.tiny-qwen3\.task: got 'mmlu'; expected one of"
    ):
        load_eval_catalog(tmp_path)


def test_a_built_in_folder_on_a_shipped_task_is_a_catalog_error(tmp_path: Path) -> None:
    shipped = "    lm-eval-task: gsm8k_inferx\n    dataset: shipped\n"
    text = (ROOT / "catalog" / "evals.yaml").read_text()
    assert shipped in text
    (tmp_path / "evals.yaml").write_text(
        text.replace(shipped, shipped + "    lm-eval-folder: gsm8k\n")
    )
    with pytest.raises(
        CatalogError, match=r"(?s)tasks\.gsm8k-inferx.*lm-eval-folder: a shipped task"
    ):
        load_eval_catalog(tmp_path)


def test_banned_settings_are_the_gate_acceptance_knobs_plus_the_evals_own(
    evals: EvalCatalog,
) -> None:
    banned = evals.synthetic_acceptance
    assert set(banned.argv) == {
        "rejection_sample_method",  # evals.yaml
        "synthetic_acceptance_length",  # gate.yaml: vLLM JSON key
        "--spec-decode-acceptance-length",  # gate.yaml: ATOM flag
    }
    assert set(banned.env) == {
        "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE",  # evals.yaml
        "SGLANG_SIMULATE_ACC_LEN", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",  # gate.yaml
    }  # fmt: skip
    assert banned.source.endswith("and catalog/gate.yaml acceptance_knobs")
