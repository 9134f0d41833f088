"""InferenceX's own master configurations through Dagster: the full sweep of
``benchmarks/full_sweep.py`` cut to two SKUs.

The single-node recipes of the RTX 6000 Pro and the H100 (67 jobs with their 7 evals)
are imported as InferenceX writes them and run as InferenceX runs them
(``INFERX_RECIPE_CHECKS=parity``), on the simulator compressed in time, by
``inferx materialize --evals``: one Dagster run per SKU x image, every job ends with a
status, every measured point is a results row and every eval a stored score from the
real lm-eval (the shipped GSM8K-format task, answered from its key: no Hub here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.evals.invocation import DATA_DIR
from inferx_pipeline.results.evals import read_evals
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import ArtifactStore
from tests.paths import ROOT
from tests.smoke import smoke_root

SKUS = ("rtx6000pro", "h100")
MASTERS = [ROOT / "third_party/inferencex/configs" / f"{v}-master.yaml" for v in ("amd", "nvidia")]
POINTS = ["--time-scale", "0.001", "--num-prompts", "1", "--max-turns", "1", "--load-time-s", "0"]


def _project(root: Path, lm_eval_python: Path) -> dict[str, str]:
    """The two SKUs' imported single-node recipes in a smoke root; the commands' env."""
    smoke_root(root, [])
    imported = root.parent / "imported"
    done = CliRunner().invoke(
        cli, ["import-inferencex", "masters", *map(str, MASTERS), "--out", str(imported)]
    )
    assert done.exit_code == 0, done.output
    for path in sorted(imported.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc["sku"] in SKUS and not doc.get("multinode"):
            (root / "recipes" / path.name).write_text(path.read_text())
    evals = root / "catalog" / "evals.yaml"
    catalog = yaml.safe_load(evals.read_text())
    catalog["tasks"]["gsm8k"] = catalog["tasks"]["gsm8k-inferx"]  # no Hub to fetch GSM8K
    evals.unlink()  # a link to the checkout's file
    evals.write_text(yaml.safe_dump(catalog, sort_keys=False))
    return {
        "INFERX_ROOT": str(root),
        "INFERX_STATE_DIR": str(root.parent / "state"),
        "DAGSTER_HOME": str(root.parent / "dagster"),
        "INFERX_RECIPE_CHECKS": "parity",
        "INFERX_LM_EVAL_PYTHON": str(lm_eval_python),
        "COLUMNS": "200",
    }


@pytest.fixture(scope="module")
def lm_eval_python() -> Path:
    from inferx_pipeline.evals.venv import lm_eval_python as cached

    return cached(ROOT, None)  # scripts/lm-eval-env's cached venv


def test_two_skus_of_inferencex_sweep_through_dagster_and_every_job_ends_with_a_status(
    tmp_path: Path, lm_eval_python: Path
) -> None:
    env = _project(tmp_path / "root", lm_eval_python)
    runner = CliRunner()
    selection = [arg for sku in SKUS for arg in ("--sku", sku)]
    listed = runner.invoke(cli, ["matrix", "--format", "json", "--evals", *selection], env=env)
    assert listed.exit_code == 0, listed.output
    jobs = {job["job_id"]: job for job in json.loads(listed.output)}
    evals = {job_id for job_id in jobs if job_id.endswith("/eval")}
    assert len(jobs) == 67 and len(evals) == 7  # InferenceX's rows for these SKUs

    answers = str(DATA_DIR / "gsm8k-inferx-test.jsonl")
    args = ["materialize", "--evals", *selection, *POINTS, "--sim-answer-key", answers]
    done = runner.invoke(cli, args, env=env)
    assert done.exit_code == 0, done.output

    state = Path(env["INFERX_STATE_DIR"])
    ended = {m.job_id: m.status for m in ArtifactStore(state / "artifacts").all_attempts()}
    assert ended.keys() == jobs.keys()
    assert set(ended.values()) == {"ok"}, {j: s for j, s in ended.items() if s != "ok"}
    results = ResultStore(f"sqlite:///{state / 'results.sqlite'}")
    try:
        rows, scores = results.read_frame(), read_evals(results)
    finally:
        results.close()
    assert sorted(rows["job_id"]) == sorted(jobs.keys() - evals)
    assert rows["valid"].all()
    assert sorted(scores["job_id"]) == sorted(evals)

    instance = local_instance(Path(env["DAGSTER_HOME"]))
    try:
        sweeps = [run for run in instance.get_runs() if run.job_name.startswith("sweep_")]
    finally:
        instance.dispose()
    images = {(job["sku"], job["engine"]["image"]) for job in jobs.values()}
    assert len(sweeps) == len(images)  # one run per SKU x image (each one concurrency range)
    assert {run.status.value for run in sweeps} == {"SUCCESS"}
