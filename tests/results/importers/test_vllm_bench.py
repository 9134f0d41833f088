"""vllm bench serve --save-result JSON -> record, identity from hints and the catalog."""

from __future__ import annotations

import pytest

from inferx_pipeline.catalog import load_catalog
from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.importers import IMPORTERS, IdentityHints, ImportContext, importer_for
from inferx_pipeline.settings import Settings
from tests.results.samples import sha, vllm_payload

HINTS = IdentityHints(
    identity={
        "sku": "h200",
        "precision": "fp8",
        "framework": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "tp": 8,
        "isl": 1024,
        "osl": 512,
    }
)


def test_vllm_bench_json_to_record_with_catalog_lookups() -> None:
    context = ImportContext.from_catalog(load_catalog(Settings().catalog_dir), HINTS)
    rec = IMPORTERS["vllm-bench"].to_record(
        vllm_payload(), artifact_sha256=sha("v"), context=context
    )
    assert (rec.model, rec.model_family, rec.vendor, rec.conc, rec.gpus) == (
        "deepseek-ai/DeepSeek-R1-0528",
        "dsr1",
        "nvidia",
        16,
        8,
    )
    assert rec.tput_per_gpu == pytest.approx(1920.0) and rec.intvty_p99 == pytest.approx(20.0)
    assert (rec.source, rec.simulated, rec.official) == ("vllm-bench", False, False)
    assert rec.run_id == f"import-{sha('v')[:16]}"
    assert len(rec.fingerprint) == 64 and rec.job_id.startswith("dsr1-fp8-h200-vllm/")


def test_derived_ids_are_deterministic_and_exclude_conc() -> None:
    context = ImportContext(
        vendors={"h200": "nvidia"}, families={"deepseek-ai/DeepSeek-R1-0528": "dsr1"}, hints=HINTS
    )
    importer = IMPORTERS["vllm-bench"]
    a = importer.to_record(vllm_payload(), artifact_sha256=sha("1"), context=context)
    b = importer.to_record(
        vllm_payload(max_concurrency=32, output_throughput=5120.0),
        artifact_sha256=sha("2"),
        context=context,
    )
    assert a.fingerprint == b.fingerprint and a.job_id != b.job_id


def test_rate_limited_run_needs_conc() -> None:
    context = ImportContext(
        vendors={"h200": "nvidia"}, families={"deepseek-ai/DeepSeek-R1-0528": "dsr1"}, hints=HINTS
    )
    with pytest.raises(MalformedArtifactError, match="identity lacks conc; pass --conc"):
        IMPORTERS["vllm-bench"].to_record(
            vllm_payload(max_concurrency=None), artifact_sha256=sha("v"), context=context
        )


def test_detected_by_keys_and_unknown_format_named() -> None:
    assert importer_for(vllm_payload(), None).kind == "vllm-bench"
    with pytest.raises(
        MalformedArtifactError, match=r"pass --source inferx\|inferencex\|vllm-bench"
    ):
        importer_for({"a": 1}, None)
