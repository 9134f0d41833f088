"""lm-eval through ``inferx sweep --evals-only`` against a real engine: the tiny model on
vLLM for CPU (local launcher), then ``inferx publish``.

One server start (about 25-70 s on 2 cores) and one harness run (about a minute). The
tiny model's threshold is raised above what it scores (0.0): the score is stored as
failing, with its provenance, and the server's command as started verifies for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.conformance.verification import synthetic_settings
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import SyntheticAcceptance, load_eval_catalog
from inferx_pipeline.results.evals import read_evals
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import EVAL_RESULT, EVAL_SAMPLES, SERVER_SPEC, ArtifactStore
from tests.services.vllm import TINY_RECIPE, CpuHost
from tests.smoke import smoke_root

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1200)]  # a CPU engine start + lm-eval
RAISED_THRESHOLD = 0.5


def _raise_threshold(root: Path) -> SyntheticAcceptance:
    path = root / "catalog" / "evals.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["models"]["tiny-qwen3"]["threshold"] = RAISED_THRESHOLD
    path.unlink()  # a link to the checkout's file
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_eval_catalog(root / "catalog").synthetic_acceptance


def test_inferx_sweep_scores_the_tiny_model_on_vllm_and_publishes_the_score(
    tmp_path: Path, cpu_host: CpuHost, lm_eval_python: Path
) -> None:
    root = smoke_root(tmp_path / "root", [f"tiny/{TINY_RECIPE}.yaml"], saturation=True)
    banned = _raise_threshold(root)
    env = {
        "INFERX_ROOT": str(root),
        "INFERX_STATE_DIR": str(tmp_path / "state"),
        "INFERX_LM_EVAL_PYTHON": str(lm_eval_python),
        "COLUMNS": "200",
    }
    art = tmp_path / "art"
    sweep = ["sweep", "--launcher", "local", "--host-file", str(cpu_host.path), "--evals-only"]
    result = CliRunner().invoke(cli, [*sweep, "--artifacts-dir", str(art)], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("1 jobs: 1 ok"), result.output

    store = ArtifactStore(art)
    [manifest] = store.all_attempts()
    assert manifest.job_id.endswith("/c4/eval")
    recorded = json.loads(store.read(manifest.artifacts[SERVER_SPEC]))
    recorded["secret_env"] = list(recorded["secret_env"])  # stored as names -> redacted
    spec = ServerSpec.model_validate(recorded)
    assert "--speculative-config" in spec.argv and synthetic_settings(spec, banned) == []
    doc = EvalResult.model_validate_json(store.read(manifest.artifacts[EVAL_RESULT]))
    assert (doc.task, doc.dataset, doc.n_original, doc.n_effective) == (
        "gsm8k-inferx", "shipped", 30, 30,
    )  # fmt: skip
    assert (doc.threshold, doc.passed) == (RAISED_THRESHOLD, False)  # the random model: 0.0
    meta = doc.metadata
    assert (meta["simulated"], meta["image_digest"]) == (False, "local:vllm==0.32.0+cpu")
    assert (meta["engine_version"], doc.lm_eval_version) == ("0.32.0", "0.4.13")
    samples = store.read(manifest.artifacts[EVAL_SAMPLES]).decode().splitlines()
    answers = [json.loads(line)["resps"][0][0] for line in samples]
    assert len(answers) == 60 and any(answers)  # the engine answered (wrongly, by design)

    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    out = ["--artifacts-dir", str(art), "--db", db, "--out", str(tmp_path / "site")]
    published = CliRunner().invoke(cli, ["publish", *out], env=env)
    assert published.exit_code == 0, published.output
    assert "ingested 1 eval scores (0 already stored)" in published.output
    results = ResultStore(db)
    try:
        [row] = read_evals(results).to_dict("records")
    finally:
        results.close()
    assert (row["passed"], row["exact_match"], row["lm_eval_version"]) == (False, 0.0, "0.4.13")
