"""Rules on the search-space rows.

- ``vendor-kv-offload``: a KV-offload backend the SKU's vendor cannot run (Mooncake on
  AMD) is a hard error naming the row; a DRAM arm names its backend.
- ``agentic-spec-decoding``: agentic-coding arms use speculative decoding; on SKUs with
  an agentic MTP policy the draft length and the concurrency grid stay inside it.
- ``referential``: the SKU and model family exist in the catalog; a row's GPUs fit the
  SKU's node; ep and dp-attn are consistent with tp; tp % dcp == 0; a speculative row
  has a speculative block.
"""

from __future__ import annotations

import itertools

from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import squash
from inferx_pipeline.recipes.policy.base import RowRef, RuleContext, rows
from inferx_pipeline.recipes.policy.data import AgenticMtp
from inferx_pipeline.recipes.scenarios import MultinodeRow, SingleNodeRow, Worker


def vendor_kv_offload(ctx: RuleContext) -> list[Finding]:
    """Rule ``vendor-kv-offload`` (see the module doc)."""
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    vendor_rule = ctx.data.vendor_kv_offload.get(sku.vendor) if sku is not None else None
    out: list[Finding] = []
    for ref in rows(ctx.recipe):
        row = ref.row
        if row.kv_offloading != "dram":
            continue
        backend = row.kv_offload_backend
        if backend is None:
            out.append(
                ctx.finding(
                    "vendor-kv-offload",
                    (*ref.path, "kv-offloading"),
                    (
                        f"row {ref.describe()}: kv-offloading dram needs kv-offload-backend "
                        "{name: ...} (hicache, lmcache, vllm-simple, native, ...)"
                    ),
                )
            )
        elif vendor_rule is not None and any(
            squash(b) in squash(backend.name) for b in vendor_rule.forbidden_backends
        ):
            assert sku is not None  # vendor_rule comes from the SKU
            out.append(
                ctx.finding(
                    "vendor-kv-offload",
                    (*ref.path, "kv-offload-backend"),
                    (
                        f"row {ref.describe()}: {backend.name} KV offload (DRAM) is not supported "
                        "on "
                        f"{sku.vendor.upper()} SKUs ({ctx.recipe.sku}); use kv-offloading: none or "
                        f"another backend"
                    ),
                )
            )
        elif (
            engine := ctx.data.engine_kv_offload.get(ctx.recipe.engine.framework)
        ) is not None and (backend.name.lower() not in engine.backends):
            out.append(
                ctx.finding(
                    "vendor-kv-offload",
                    (*ref.path, "kv-offload-backend", "name"),
                    (
                        f"got {backend.name!r}; expected a backend the "
                        f"{ctx.recipe.engine.framework} adapter runs: "
                        f"{', '.join(engine.backends)} ({engine.source}); another name would "
                        "run a different backend under this label"
                    ),
                )
            )
    return out


def agentic_spec_decoding(ctx: RuleContext) -> list[Finding]:
    """Rule ``agentic-spec-decoding`` (see the module doc)."""
    grid = ctx.data.agentic_mtp.get(ctx.recipe.sku)
    out: list[Finding] = []
    speculating = False
    for ref in rows(ctx.recipe):
        if ref.kind != "agentic-coding":
            continue
        if ref.row.spec_decoding == "none":
            out.append(
                ctx.finding(
                    "agentic-spec-decoding",
                    (*ref.path,),
                    (
                        f"row {ref.describe()}: agentic-coding arms must use speculative decoding; "
                        "set spec-decoding (and the recipe's speculative block)"
                        + _inferencex_runs_it(ctx)
                    ),
                )
            )
            continue
        speculating = True
        if grid is None:
            continue
        over = [c for c in ref.row.concurrencies() if c > grid.max_conc]
        if over:
            out.append(
                ctx.finding(
                    "agentic-spec-decoding",
                    _conc_path(ref),
                    (
                        f"got concurrency {', '.join(map(str, over))}; agentic MTP on "
                        f"{ctx.recipe.sku} stops at {grid.max_conc} (catalog/policy.yaml)"
                        + _inferencex_runs_it(ctx)
                    ),
                )
            )
        steps = _tight_steps(ref.row.concurrencies(), grid.min_conc_step)
        if steps:
            out.append(
                ctx.finding(
                    "agentic-spec-decoding",
                    _conc_path(ref),
                    (
                        f"got consecutive concurrencies {', '.join(steps)}; expected steps of at "
                        f"least {grid.min_conc_step} on {ctx.recipe.sku} (catalog/policy.yaml "
                        "agentic_mtp); drop the in-between points" + _inferencex_runs_it(ctx)
                    ),
                )
            )
    if speculating and grid is not None:
        out.extend(_draft_length(ctx, grid))
    return out


def _tight_steps(concs: tuple[int, ...], step: int) -> list[str]:
    ordered = sorted(concs)
    return [f"{a}->{b}" for a, b in itertools.pairwise(ordered) if b - a < step]


def _draft_length(ctx: RuleContext, grid: AgenticMtp) -> list[Finding]:
    # The draft length is the recipe's, not a row's: one finding however many arms use it.
    # None (the engine's default draft length) is not judged.
    draft_tokens = ctx.recipe.speculative.draft_tokens
    if draft_tokens is None or draft_tokens >= grid.min_draft_tokens:
        return []
    return [
        ctx.finding(
            "agentic-spec-decoding",
            ("speculative", "draft-tokens"),
            (
                f"got {draft_tokens}; agentic MTP on {ctx.recipe.sku} keeps >= "
                f"{grid.min_draft_tokens} draft steps (catalog/policy.yaml)"
                + _inferencex_runs_it(ctx)
            ),
        )
    ]


def _inferencex_runs_it(ctx: RuleContext) -> str:
    origin = ctx.recipe.imported_from
    return f"; InferenceX runs it ({origin.master})" if origin is not None else ""


def _conc_path(ref: RowRef) -> tuple[str | int, ...]:
    key = "conc-list" if ref.row.conc_list is not None else "conc-end"
    return (*ref.path, key)


def referential(ctx: RuleContext) -> list[Finding]:
    """Rule ``referential`` (see the module doc)."""
    recipe = ctx.recipe
    out: list[Finding] = []
    if recipe.sku not in ctx.catalog.skus:
        out.append(
            ctx.finding(
                "referential",
                ("sku",),
                (
                    f"got {recipe.sku!r}; expected a SKU of catalog/skus.yaml: "
                    f"{', '.join(sorted(ctx.catalog.skus))}"
                ),
            )
        )
    arch = ctx.catalog.models.get(recipe.model.family)
    if arch is None:
        out.append(
            ctx.finding(
                "referential",
                ("model", "model-prefix"),
                (
                    f"got {recipe.model.family!r}; expected a family of catalog/models.yaml: "
                    f"{', '.join(sorted(ctx.catalog.models))}"
                ),
            )
        )
    elif recipe.model.hf_id not in arch.hf_ids:
        out.append(
            ctx.finding(
                "referential",
                ("model", "hf-id"),
                (
                    f"{recipe.model.hf_id} is not listed in catalog/models.yaml "
                    f"{recipe.model.family}"
                    ".hf_ids; add it there if it is this family's checkpoint"
                ),
                "warning",
            )
        )
    for ref in rows(recipe):
        out.extend(_row_refs(ctx, ref))
    return out


def _row_refs(ctx: RuleContext, ref: RowRef) -> list[Finding]:
    out: list[Finding] = []
    row = ref.row
    if row.spec_decoding != "none" and ctx.recipe.speculative.method == "none":
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "spec-decoding"),
                (
                    f"got {row.spec_decoding}; the recipe's speculative block has method none: set "
                    "speculative.method, draft-tokens and acceptance"
                ),
            )
        )
    if row.kv_offload_backend is not None and row.kv_offloading != "dram":
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "kv-offload-backend"),
                ("kv-offload-backend is only used with kv-offloading: dram"),
            )
        )
    if isinstance(row, SingleNodeRow):
        out.extend(_single_node(ctx, ref, row))
    elif isinstance(row, MultinodeRow):
        for pool in ("prefill", "decode"):
            out.extend(_worker(ctx, (*ref.path, pool), getattr(row, pool)))
    return out


def _single_node(ctx: RuleContext, ref: RowRef, row: SingleNodeRow) -> list[Finding]:
    out: list[Finding] = []
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    if sku is not None and row.gpus > sku.gpus_per_node:
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "tp"),
                (
                    f"got tp {row.tp} x pp {row.pp} x pcp {row.pcp_size} = {row.gpus} GPUs; "
                    "expected "
                    f"at most {sku.gpus_per_node} ({ctx.recipe.sku} GPUs per node)"
                ),
            )
        )
    if row.tp % row.ep != 0:
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "ep"),
                (
                    f"got ep {row.ep} with tp {row.tp}; expected ep dividing tp (1 or {row.tp} on "
                    "one node)"
                ),
            )
        )
    if row.dp_attn and row.tp == 1:
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "dp-attn"),
                ("got dp-attn true with tp 1; data-parallel attention needs tp > 1"),
            )
        )
    if row.tp % row.dcp_size != 0:
        out.append(
            ctx.finding(
                "referential",
                (*ref.path, "dcp-size"),
                (f"got dcp-size {row.dcp_size} with tp {row.tp}; expected tp % dcp-size == 0"),
            )
        )
    return out


def _worker(ctx: RuleContext, path: tuple[str | int, ...], worker: Worker) -> list[Finding]:
    out: list[Finding] = []
    if worker.tp % worker.dcp_size != 0:
        out.append(
            ctx.finding(
                "referential",
                (*path, "dcp-size"),
                (
                    f"got dcp-size {worker.dcp_size} with tp {worker.tp}; expected tp % dcp-size "
                    "== 0"
                ),
            )
        )
    ep_ok = worker.tp % worker.ep == 0 or (worker.dp_attn and worker.ep % worker.tp == 0)
    if not ep_ok:
        out.append(
            ctx.finding(
                "referential",
                (*path, "ep"),
                (
                    f"got ep {worker.ep} with tp {worker.tp}; expected ep dividing tp, or a "
                    "multiple "
                    "of tp with dp-attn"
                ),
            )
        )
    return out
