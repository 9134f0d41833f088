"""An eval job's server context: raised to its eval's max-length (catalog/evals.yaml) in every
engine's argv, in the gate's view and in the job's identity; never lowered; refused where the
model's native context (catalog/models.yaml) is shorter."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.conformance.served import served_commands
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import MatrixError
from inferx_pipeline.golden import load_golden
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, cached_eval_catalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.recipes.loader import LoadedRecipe, load_recipes
from inferx_pipeline.recipes.policy import check_served
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.sweep.groups import group_jobs, twin_key
from tests.engines.jobs import recipe_jobs
from tests.paths import ROOT

CATALOG = cached_catalog(ROOT / "catalog")
EVALS = cached_eval_catalog(ROOT / "catalog")
GOLDEN = load_golden(ROOT / "golden_al_distribution")
RUNNERS = cached_runners(ROOT / "catalog")
# A shipped fixed-seq-len recipe per engine, and the flag its adapter gives the context.
ENGINES = {
    "vllm": ("qwen3.827b-fp8-h200-vllm-mtp", "--max-model-len"),
    "sglang": ("dsr1-fp8-mi300x-sglang", "--context-length"),
    "trt": ("dsr1-fp8-h200-trt", "--max_seq_len"),
    "atom": ("dsr1-fp8-mi355x-atom", "--max-model-len"),
}
VLLM_REAL = "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"
TINY = "tiny-qwen3-bf16-cpu-vllm-ngram"


def _context(job: BenchmarkJob, flag: str) -> str:
    argv = list(adapter_for(job).server_spec(job, sku=CATALOG.sku(job.sku)).argv)
    return argv[argv.index(flag) + 1]


def _with(evals: EvalCatalog, family: str | None = None, **protocol: int) -> EvalCatalog:
    """``evals`` with protocol fields (or, given ``family``, that family's entry) changed."""
    if family is None:
        return evals.model_copy(update={"protocol": evals.protocol.model_copy(update=protocol)})
    entry = evals.models[family].model_copy(update=protocol)
    return evals.model_copy(update={"models": {**evals.models, family: entry}})


def _loaded(path: str) -> LoadedRecipe:
    policy = cached_policy(ROOT / "catalog")
    return load_recipes([ROOT / path], catalog=CATALOG, golden=GOLDEN, policy=policy).parsed[0]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_an_eval_jobs_argv_carries_the_eval_max_length(engine: str) -> None:
    recipe, flag = ENGINES[engine]
    job = recipe_jobs(recipe)[-1]
    twin = eval_job(job, evals=EVALS, catalog=CATALOG)
    assert job.isl is not None and job.osl is not None
    assert _context(job, flag) == str(job.isl + job.osl + 256)  # throughput: unchanged
    assert _context(twin, flag) == "16384" == str(EVALS.protocol.max_length)


def test_the_context_is_raised_never_lowered_and_agentic_keeps_the_engines_own() -> None:
    job = recipe_jobs("dsr1-fp8-mi300x-sglang")[-1]
    short = eval_job(job, evals=_with(EVALS, max_length=1000), catalog=CATALOG)
    assert short.max_model_len == job.max_model_len == 9472
    agentic = recipe_jobs("minimaxm3-fp8-mi325x-vllm-agentic-mtp")[-1]
    assert eval_job(agentic, evals=EVALS, catalog=CATALOG).max_model_len is None


def test_a_raised_eval_gets_its_own_server_but_judges_its_twins_identity() -> None:
    job = recipe_jobs("qwen3.827b-fp8-h200-vllm-mtp")[
        -1
    ]  # real acceptance: only the context differs
    twin = eval_job(job, evals=EVALS, catalog=CATALOG)
    groups = group_jobs([job, twin])
    assert [len(group.jobs) for group in groups] == [1, 1]
    assert groups[1].spec_job.max_model_len == 16384
    assert twin_key(twin) == job.server_key != twin.evolve(run_eval=False).server_key
    # The tiny family's eval fits its recipe's context: the eval shares the server.
    tiny = recipe_jobs(TINY)[-1]
    tiny_twin = eval_job(tiny, evals=EVALS, catalog=CATALOG)
    assert tiny_twin.max_model_len == tiny.max_model_len == 448
    (shared,) = group_jobs([tiny, tiny_twin])
    assert shared.evals == (tiny_twin,) and twin_key(tiny_twin) == tiny.server_key


def test_a_model_shorter_than_the_eval_is_an_error_in_the_matrix_and_the_gate() -> None:
    job = recipe_jobs(TINY)[-1]
    long = _with(EVALS, "tiny-qwen3", max_length=9000)
    with pytest.raises(MatrixError) as err:
        eval_job(job, evals=long, catalog=CATALOG)
    assert str(err.value) == (
        f"{job.job_id}: an eval needs a context of 9000 tokens (catalog/evals.yaml "
        "models.tiny-qwen3.max-length), but tiny-qwen3 serves at most 8192 (catalog/models.yaml "
        "models.tiny-qwen3.max_context); set catalog/evals.yaml models.tiny-qwen3.max-length "
        "to at most 8192"
    )
    loaded = _loaded(f"recipes/tiny/{TINY}.yaml")
    _, refused = served_commands(
        loaded, golden=GOLDEN, catalog=CATALOG, runners=RUNNERS, evals=long
    )
    assert refused and all("an eval needs a context of 9000 tokens" in r for r in refused)


def test_the_gate_sizes_an_eval_server_with_its_raised_context() -> None:
    loaded = _loaded(VLLM_REAL)
    policy = cached_policy(ROOT / "catalog")
    served, refused = served_commands(
        loaded, golden=GOLDEN, catalog=CATALOG, runners=RUNNERS, evals=EVALS
    )
    assert refused == []
    evals = [s for s in served if s.is_eval]
    assert evals and {s.max_model_len for s in evals} == {16384}
    assert {s.max_model_len for s in served if not s.is_eval} == {2304}
    fits = check_served(loaded.recipe, served, catalog=CATALOG, golden=GOLDEN, data=policy)
    assert [f for f in fits if f.rule == "memory-fit"] == []
    huge = _with(EVALS, max_length=50_000_000)
    served, _ = served_commands(loaded, golden=GOLDEN, catalog=CATALOG, runners=RUNNERS, evals=huge)
    found = check_served(loaded.recipe, served, catalog=CATALOG, golden=GOLDEN, data=policy)
    messages = [f.message for f in found if f.rule == "memory-fit" and f.is_error]
    assert messages and messages[0].startswith("eval server of row ")
    assert "x 50,000,000 tokens" in messages[0] and "eval's max-length" in messages[0]


def test_inferx_matrix_shows_the_eval_context() -> None:
    result = CliRunner().invoke(cli, ["matrix", "--evals", "--recipe", "dsr1-fp8-mi300x-sglang"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    ids = {i + 1: line.split("  ")[0] for i, line in enumerate(lines) if "  sku=" in line}
    evals = [lines[i] for i, job_id in ids.items() if job_id.endswith("/eval")]
    points = [lines[i] for i, job_id in ids.items() if not job_id.endswith("/eval")]
    assert len(evals) == 2 and all("--context-length 16384" in line for line in evals)
    assert len(points) == 5 and all("--context-length 9472" in line for line in points)
