"""Readable names of matrix rows: job-id layout labels and InferenceX ``exp-name`` spellings."""

from __future__ import annotations

from inferx_pipeline.recipes.scenarios import (
    AgenticCoding,
    Component,
    FixedSeqLen,
    MultinodeRow,
    SingleNodeRow,
    Worker,
)

# InferenceX's short names for its standard sequence lengths (others: "<isl>_<osl>").
SEQ_LEN_NAMES: dict[tuple[int, int], str] = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}


def seq_len_name(isl: int, osl: int) -> str:
    """``1k1k``, ``8k1k``, or ``<isl>_<osl>``."""
    return SEQ_LEN_NAMES.get((isl, osl), f"{isl}_{osl}")


def scenario_label(block: FixedSeqLen | AgenticCoding) -> str:
    """``fixed-seq-len-8192x1024`` or ``agentic-coding`` (the job-id scenario part)."""
    if isinstance(block, FixedSeqLen):
        return f"fixed-seq-len-{block.isl}x{block.osl}"
    return "agentic-coding"


def _layout(tp: int, ep: int, dp_attn: bool, pp: int, dcp: int, pcp: int) -> str:
    parts = [f"tp{tp}"]
    parts += [f"ep{ep}"] if ep != 1 else []
    parts += ["dpa"] if dp_attn else []
    parts += [f"pp{pp}"] if pp != 1 else []
    parts += [f"dcp{dcp}"] if dcp != 1 else []
    parts += [f"pcp{pcp}"] if pcp != 1 else []
    return "-".join(parts)


def _worker_label(worker: Worker, role: str) -> str:
    layout = _layout(
        worker.tp, worker.ep, worker.dp_attn, worker.pp, worker.dcp_size, worker.pcp_size
    )
    return f"{role}{worker.num_worker}x{layout}"


def row_label(row: SingleNodeRow | MultinodeRow, arm: str) -> str:
    """Layout part of a job id: ``tp8-ep8-dpa``, ``p1xtp4_d2xtp8``, plus spec and KV arms."""
    if isinstance(row, SingleNodeRow):
        label = _layout(row.tp, row.ep, row.dp_attn, row.pp, row.dcp_size, row.pcp_size)
    else:
        label = f"{_worker_label(row.prefill, 'p')}_{_worker_label(row.decode, 'd')}"
    if arm != "none":
        label += f"-{arm}"
    if row.kv_offloading == "dram" and row.kv_offload_backend is not None:
        label += f"-kvdram-{row.kv_offload_backend.name}"
    elif row.kv_offloading == "dram":
        label += "-kvdram"
    return label


def fixed_exp_name(prefix: str, isl: int, osl: int) -> str:
    """InferenceX fixed-seq-len exp-name: ``<prefix>_<1k1k|8k1k|isl_osl>``."""
    return f"{prefix}_{seq_len_name(isl, osl)}"


def _kv_suffix(kv_offloading: str, backend: Component | None) -> str:
    if kv_offloading == "none":
        return "kvnone"
    name = backend.name if backend is not None else "none"
    return f"kv{kv_offloading}-{name}"


def agentic_exp_name(
    prefix: str,
    row: SingleNodeRow | MultinodeRow,
    conc: int,
    kv_offloading: str,
    arm: str,
) -> str:
    """InferenceX agentic exp-name (single-node and multinode spellings differ)."""
    kv = _kv_suffix(kv_offloading, row.kv_offload_backend)
    if isinstance(row, SingleNodeRow):
        spec = f"_spec-{arm}" if arm != "none" else ""
        return f"{prefix}_tp{row.tp}_conc{conc}_{kv}{spec}"
    offload = "" if kv_offloading == "none" else f"_{kv}"
    return (
        f"{prefix}_{_worker_tag(row.prefill, 'p')}_{_worker_tag(row.decode, 'd')}"
        f"_conc{conc}{offload}"
    )


def _worker_tag(worker: Worker, role: str) -> str:
    tag = f"{role}{worker.num_worker}x{worker.tp}"
    tag += f"ep{worker.ep}" if worker.ep != 1 else ""
    return tag + ("dpa" if worker.dp_attn else "")
