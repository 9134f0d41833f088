"""Our RawResult JSON: identity and run context read from metadata, hints win."""

from __future__ import annotations

from inferx_pipeline.results.importers import IMPORTERS, IdentityHints, ImportContext, importer_for
from tests.results.samples import raw_result_payload, sha

METADATA = {
    "recipe_id": "r1", "fingerprint": "f" * 64, "job_id": "r1/c16", "model_family": "dsr1",
    "precision": "fp8", "sku": "h200", "vendor": "nvidia", "framework": "sim",
    "image": "inferx/sim:1", "tp": 8, "run_id": "dagster-run", "attempt": 2,
    "simulated": True, "image_digest": "sha256:abc",
}  # fmt: skip


def test_raw_result_identity_and_run_from_metadata() -> None:
    payload = raw_result_payload(metadata=METADATA)
    assert importer_for(payload, None).kind == "inferx"
    rec = IMPORTERS["inferx"].to_record(payload, artifact_sha256=sha("x"), context=ImportContext())
    assert (rec.recipe_id, rec.framework, rec.run_id, rec.attempt, rec.simulated) == (
        "r1",
        "sim",
        "dagster-run",
        2,
        True,
    )
    assert (rec.isl, rec.osl, rec.scenario, rec.image_digest) == (
        1024,
        512,
        "fixed-seq-len",
        "sha256:abc",
    )


def test_hints_win_over_metadata() -> None:
    hints = IdentityHints(identity={"sku": "b200"}, run_id="manual", simulated=False)
    rec = IMPORTERS["inferx"].to_record(
        raw_result_payload(metadata=METADATA),
        artifact_sha256=sha("x"),
        context=ImportContext(hints=hints),
    )
    assert (rec.sku, rec.run_id, rec.simulated) == ("b200", "manual", False)


def test_agentic_dataset_is_agentic_scenario_without_lengths() -> None:
    payload = raw_result_payload(metadata=METADATA)
    payload["dataset"] = {**payload["dataset"], "kind": "agentic", "trace": "t.jsonl"}
    rec = IMPORTERS["inferx"].to_record(payload, artifact_sha256=sha("x"), context=ImportContext())
    assert (rec.scenario, rec.isl, rec.osl) == ("agentic-coding", None, None)


def test_slurm_job_and_cluster_come_from_metadata_and_are_none_off_slurm() -> None:
    on_slurm = {**METADATA, "slurm_job_id": "42", "slurm_cluster": "dgxc", "slurm_nodes": "n1"}
    rec = IMPORTERS["inferx"].to_record(
        raw_result_payload(metadata=on_slurm), artifact_sha256=sha("x"), context=ImportContext()
    )
    assert (rec.slurm_job_id, rec.slurm_cluster) == ("42", "dgxc")
    local = IMPORTERS["inferx"].to_record(
        raw_result_payload(metadata=METADATA), artifact_sha256=sha("y"), context=ImportContext()
    )
    assert (local.slurm_job_id, local.slurm_cluster) == (None, None)
