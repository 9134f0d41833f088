"""Recipes -> ``BenchmarkJob`` rows: one per recipe x scenario x block x row x concurrency.

Order is deterministic: recipes in the order given, then scenario blocks (fixed-seq-len,
then agentic-coding) in document order, rows in document order, concurrencies in the
row's order. Semantics follow InferenceX's generator (``third_party/inferencex/README.md``):
doubling concurrency ranges, ``max-model-len = isl + osl + 256``, the agentic DRAM
budget, and its ``exp-name`` spelling.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import GoldenCurveError, MatrixError
from inferx_pipeline.golden import GoldenRegistry, ThinkingMode
from inferx_pipeline.matrix import naming
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.evals import EvalMode, EvalPolicies, with_evals
from inferx_pipeline.matrix.job import (
    BenchmarkJob,
    JobClient,
    JobEngine,
    JobModel,
    JobParallel,
    JobSpec,
    JobWorkers,
    MaxNumSeqsRuleJob,
    resolve_max_num_seqs,
    throughput_max_model_len,
)
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes.policy.thinking import served_thinking
from inferx_pipeline.recipes.scenarios import (
    AgenticCoding,
    FixedSeqLen,
    MultinodeRow,
    SingleNodeRow,
)
from inferx_pipeline.recipes.schema import MaxNumSeqsRule, Recipe

Duplicates = Literal["error", "keep"]


class SourcedRecipe(Protocol):
    """A loaded recipe together with the file it came from."""

    @property
    def recipe(self) -> Recipe: ...

    @property
    def source(self) -> Path: ...


@dataclass(frozen=True, slots=True)
class _Context:
    """What expansion needs besides the recipe: shared across all recipes of one call."""

    golden: GoldenRegistry
    catalog: Catalog
    runners: RunnerCatalog | None


def expand(
    recipes: Iterable[Recipe | SourcedRecipe],
    *,
    golden: GoldenRegistry,
    catalog: Catalog,
    evals: EvalMode = "none",
    runners: RunnerCatalog | None = None,
    eval_policies: EvalPolicies | None = None,
    eval_catalog: EvalCatalog | None = None,
    duplicates: Duplicates = "error",
) -> list[BenchmarkJob]:
    """Every benchmark job of ``recipes`` (plus the eval jobs of mode ``evals``), in order.

    ``runners`` supplies runner-label facts for agentic ``kv-offloading: dram`` arms;
    ``eval_policies`` the eval selection and ``eval_catalog`` each eval's context (both
    required unless ``evals`` is ``none``). Identical
    jobs (same fingerprint and concurrency) are a MatrixError naming both jobs' recipes, unless
    ``duplicates="keep"`` (InferenceX parity: its configs hold a few such rows).
    Raises GoldenCurveError for an unresolvable synthetic AL, MatrixError otherwise.
    """
    ctx = _Context(golden=golden, catalog=catalog, runners=runners)
    recipes = list(recipes)
    jobs: list[BenchmarkJob] = []
    for item in recipes:
        recipe, path = (item, "") if isinstance(item, Recipe) else (item.recipe, str(item.source))
        jobs.extend(_recipe_jobs(recipe, path, ctx))
    if evals != "none":
        if eval_policies is None or eval_catalog is None:
            raise MatrixError(
                f"expand(evals={evals!r}) needs eval_policies (catalog/eval-policy.yaml) "
                "and eval_catalog (catalog/evals.yaml)"
            )
        jobs = with_evals(
            jobs, eval_policies, _eval_policies(recipes), evals, evals=eval_catalog, catalog=catalog
        )
    if duplicates == "error":
        check_unique(jobs)
    return jobs


def duplicates_of(jobs: Sequence[BenchmarkJob]) -> list[tuple[BenchmarkJob, BenchmarkJob]]:
    """(first, repeat) pairs of jobs with the same fingerprint and concurrency, in order."""
    seen: dict[tuple[str, int], BenchmarkJob] = {}
    pairs: list[tuple[BenchmarkJob, BenchmarkJob]] = []
    for job in jobs:
        first = seen.setdefault((job.fingerprint, job.conc), job)
        if first is not job:
            pairs.append((first, job))
    return pairs


def check_unique(jobs: Sequence[BenchmarkJob]) -> None:
    """MatrixError naming both recipes when two jobs share fingerprint and concurrency."""
    for first, job in duplicates_of(jobs)[:1]:
        raise MatrixError(
            f"identical jobs: {first.job_id} (recipe {first.recipe_id} "
            f"{first.recipe_path or '<memory>'}) and {job.job_id} (recipe {job.recipe_id} "
            f"{job.recipe_path or '<memory>'}); remove one of the rows or make them differ"
        )


def _eval_policies(recipes: Iterable[Recipe | SourcedRecipe]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in recipes:
        recipe = item if isinstance(item, Recipe) else item.recipe
        out[recipe.id] = None if recipe.eval.mode == "never" else recipe.eval.policy
    return out


def _recipe_jobs(recipe: Recipe, path: str, ctx: _Context) -> list[BenchmarkJob]:
    parts = _RecipeParts.of(recipe, ctx.catalog)
    jobs: list[BenchmarkJob] = []
    labels: set[tuple[str, str]] = set()
    blocks: tuple[FixedSeqLen | AgenticCoding, ...] = (
        *recipe.scenarios.fixed_seq_len,
        *recipe.scenarios.agentic_coding,
    )
    for block in blocks:
        scenario_label = naming.scenario_label(block)
        for index, row in enumerate(block.search_space, start=1):
            spec = _spec(recipe, row, parts.model.thinking, ctx.golden)
            label = naming.row_label(row, spec.arm)
            if (scenario_label, label) in labels:
                label = f"{label}-row{index}"  # same layout twice in one block: keep ids unique
            labels.add((scenario_label, label))
            row_parts = _RowParts(recipe=recipe, path=path, block=block, row=row, spec=spec)
            jobs.extend(_row_jobs(parts, row_parts, label, ctx))
    return jobs


@dataclass(frozen=True, slots=True)
class _RecipeParts:
    """Job parts shared by every row of one recipe (built once per recipe)."""

    model: JobModel
    engine: JobEngine
    client: JobClient

    @classmethod
    def of(cls, recipe: Recipe, catalog: Catalog) -> _RecipeParts:
        engine = recipe.engine
        sizes = engine.cudagraph_capture_sizes
        return cls(
            model=JobModel(
                hf_id=recipe.model.hf_id,
                family=recipe.model.family,
                precision=recipe.model.precision,
                kv_cache_dtype=recipe.model.kv_cache_dtype,
                thinking=served_thinking(recipe, catalog),
            ),
            engine=JobEngine(
                framework=engine.framework,
                image=engine.image,
                args=engine.args if isinstance(engine.args, dict) else tuple(engine.args),
                env=engine.env,
                max_num_seqs_rule=_rule(engine.max_num_seqs),
                gpu_memory_utilization=engine.gpu_memory_utilization,
                cudagraph_capture_sizes=tuple(sizes) if isinstance(sizes, list) else sizes,
            ),
            client=JobClient(api=recipe.client.api, chat_template_kwargs=_chat_kwargs(recipe)),
        )


@dataclass(frozen=True, slots=True)
class _RowParts:
    recipe: Recipe
    path: str
    block: FixedSeqLen | AgenticCoding
    row: SingleNodeRow | MultinodeRow
    spec: JobSpec


def _row_jobs(parts: _RecipeParts, rp: _RowParts, label: str, ctx: _Context) -> list[BenchmarkJob]:
    recipe, row, block = rp.recipe, rp.row, rp.block
    workload = _workload(rp, ctx)
    topology = _topology(row)
    common: dict[str, object] = {
        "recipe_id": recipe.id,
        "recipe_path": rp.path,
        "label": label,
        "sku": recipe.sku,
        "runner": recipe.runner_label,
        "model": parts.model,
        "engine": parts.engine,
        "image_track": recipe.engine.track,
        "spec": rp.spec,
        "scenario": "fixed-seq-len" if isinstance(block, FixedSeqLen) else "agentic-coding",
        "multinode": isinstance(row, MultinodeRow),
        "disagg": recipe.disagg,
        "router": row.router if row.router is not None else recipe.router,
        "kv_p2p_transfer": row.kv_p2p_transfer or recipe.kv_p2p_transfer,
        "client": parts.client,
        "run_eval": False,
        **workload,
        **topology,
    }
    rule = parts.engine.max_num_seqs_rule
    per_conc = [
        {
            "conc": conc,
            "max_num_seqs": resolve_max_num_seqs(rule, conc),
            "exp_name": _exp_name(recipe, rp, conc),
        }
        for conc in row.concurrencies()
    ]
    first = BenchmarkJob(**common, **per_conc[0])
    # The other concurrencies differ only in fields the fingerprint leaves out (and are
    # valid by construction: conc > 0 from the validated row), so copies of the first job
    # skip validating the shared fields again and carry its cached fingerprint, computed
    # here once per row instead of once per job.
    _ = first.fingerprint
    return [first, *(first.model_copy(update=varying) for varying in per_conc[1:])]


def _workload(rp: _RowParts, ctx: _Context) -> dict[str, object]:
    block, row = rp.block, rp.row
    if isinstance(block, FixedSeqLen):
        return {
            "isl": block.isl,
            "osl": block.osl,
            "max_model_len": throughput_max_model_len(block.isl, block.osl),
            "trace": None,
            "duration_s": None,
            "kv_offloading": None,
            "kv_offload_backend": None,
            "dram_utilization": None,
            "total_cpu_dram_gb": None,
        }
    kv = row.kv_offloading or "none"
    return {
        "isl": None,
        "osl": None,
        "max_model_len": None,
        "trace": block.trace,
        "duration_s": block.duration,
        "kv_offloading": kv,
        "kv_offload_backend": row.kv_offload_backend,
        "dram_utilization": block.dram_utilization,
        "total_cpu_dram_gb": _dram_budget(rp, block, kv, ctx),
    }


def _dram_budget(rp: _RowParts, block: AgenticCoding, kv: str, ctx: _Context) -> int:
    if kv != "dram":
        return 0
    where = f"recipe {rp.recipe.id} ({rp.path or '<memory>'})"
    if block.dram_utilization is None:
        raise MatrixError(
            f"{where}: scenarios.agentic-coding: a kv-offloading: dram row needs "
            "dram-utilization on its block (fraction of node CPU DRAM, e.g. 0.8)"
        )
    if ctx.runners is None:
        raise MatrixError(f"{where}: a kv-offloading: dram row needs runner facts (runners=)")
    row = rp.row
    # Multinode: only the prefill pool offloads KV to DRAM today (InferenceX).
    # InferenceX's budget counts a multinode row's prefill tp (not a DP-attention worker's ranks).
    gpus = (
        row.gpus
        if isinstance(row, SingleNodeRow)
        else row.prefill.tp * row.prefill.pp * row.prefill.pcp_size
    )
    return ctx.runners.dram_budget_gb(
        rp.recipe.runner_label, utilization=block.dram_utilization, gpus=gpus
    )


def _topology(row: SingleNodeRow | MultinodeRow) -> dict[str, object]:
    if isinstance(row, SingleNodeRow):
        parallel = JobParallel(
            tp=row.tp,
            ep=row.ep,
            dp_attn=row.dp_attn,
            pp=row.pp,
            dcp_size=row.dcp_size,
            pcp_size=row.pcp_size,
        )
        return {"parallel": parallel, "workers": None, "gpus": row.gpus}
    pools = (row.prefill, row.decode)
    gpus = sum(w.num_worker * w.gpus_per_replica for w in pools)
    workers = JobWorkers(prefill=row.prefill, decode=row.decode)
    return {"parallel": None, "workers": workers, "gpus": gpus}


def _exp_name(recipe: Recipe, rp: _RowParts, conc: int) -> str:
    prefix = recipe.model.family
    if isinstance(rp.block, FixedSeqLen):
        return naming.fixed_exp_name(prefix, rp.block.isl, rp.block.osl)
    kv = rp.row.kv_offloading or "none"
    return naming.agentic_exp_name(prefix, rp.row, conc, kv, rp.spec.arm)


_NO_SPEC = JobSpec(
    arm="none",
    method="none",
    draft_model=None,
    draft_tokens=None,
    topk=None,
    verify_tokens=None,
    acceptance="none",
    curve=None,
    target_al=None,
    options={},
)


def _spec(
    recipe: Recipe,
    row: SingleNodeRow | MultinodeRow,
    thinking: ThinkingMode | None,
    golden: GoldenRegistry,
) -> JobSpec:
    """Speculative decoding of ``row``: the recipe's block, switched on/off by the row's arm.

    A row that does not say ``spec-decoding`` inherits the recipe's method; a row saying
    ``none`` turns it off. A row naming an arm under a recipe without a speculative block
    (rejected by the ``referential`` rule, so only seen with the rules off) runs that arm
    with real acceptance and engine-default draft settings.
    """
    sp = recipe.speculative
    arm = row.spec_decoding if "spec_decoding" in row.model_fields_set else sp.method
    if arm == "none":
        return _NO_SPEC
    if sp.method == "none":
        return _NO_SPEC.model_copy(update={"arm": arm, "method": arm, "acceptance": "real"})
    target_al = None
    if sp.acceptance == "synthetic":
        target_al = _golden_al(recipe, thinking, golden)
    return JobSpec(
        arm=arm,
        method=sp.method,
        draft_model=sp.draft_model,
        draft_tokens=sp.draft_tokens,
        topk=sp.topk,
        verify_tokens=sp.verify_tokens,
        acceptance=sp.acceptance,
        curve=sp.curve,
        target_al=target_al,
        options=dict(sp.options),
    )


def _golden_al(recipe: Recipe, thinking: ThinkingMode | None, golden: GoldenRegistry) -> float:
    sp = recipe.speculative
    # Schema guarantees curve and draft tokens for synthetic acceptance.
    assert sp.curve is not None and sp.draft_tokens is not None
    if thinking is None:
        # Same reading as the thinking-explicit rule (served_thinking): only an
        # always-thinking family may leave the mode unset.
        raise GoldenCurveError(
            f"recipe {recipe.id}: model.thinking: synthetic acceptance needs a thinking mode "
            f"to pick the golden curve's map; family {recipe.model.family} has no fixed mode: "
            "set thinking: on or thinking: off"
        )
    return golden.lookup(sp.curve, thinking, sp.draft_tokens).al


def _rule(rule: int | MaxNumSeqsRule | None) -> int | MaxNumSeqsRuleJob | None:
    if isinstance(rule, MaxNumSeqsRule):
        return MaxNumSeqsRuleJob(per_conc=rule.per_conc, floor=rule.floor, eval=rule.eval)
    return rule


def _chat_kwargs(recipe: Recipe) -> dict[str, str | int | float | bool]:
    if recipe.client.chat_template_kwargs is not None:
        return dict(recipe.client.chat_template_kwargs)
    if recipe.model.thinking is None:
        return {}
    return {"enable_thinking": recipe.model.thinking == "on"}
