"""InferenceX ``agg_*.json`` rows, as its ``utils/process_result.py`` writes them.

Keys of a single-node row (reconstructed from InferenceX's ``process_result.py``):

- identity: ``hw`` (its RUNNER_TYPE, e.g. ``h200`` or ``b200-dsv4``: the SKU is the part
  before the first ``-``), ``model`` (HF id), ``infmax_model_prefix`` (family, e.g.
  ``dsr1``), ``framework``, ``precision``, ``spec_decoding`` (``none`` | ``mtp`` ...),
  ``image`` (``/`` may be written ``#``), ``isl``, ``osl``, ``conc``, ``tp``, ``ep``,
  ``dp_attention`` (the string ``"true"``/``"false"``), ``disagg``, ``is_multinode``.
- throughput: ``tput_per_gpu``, ``output_tput_per_gpu``, ``input_tput_per_gpu``
  (tok/s/GPU over ``tp`` GPUs; older rows lack the input one: total - output).
- latency: every ``<stat>_<metric>_ms`` key of the vLLM result, renamed without ``_ms``
  and divided by 1000 (seconds): ``mean_ttft``, ``median_tpot``, ``p99_e2el`` ...;
  ``std_*`` are read but not kept.
- interactivity: ``<stat>_intvty`` = 1000 / ``<stat>_tpot_ms`` (``std_intvty`` is
  meaningless and ignored); we recompute it and reject a row whose value disagrees.

Multinode/disaggregated rows (``prefill_*``/``decode_*`` pools) are rejected as
``unsupported``: our GPU count is single-node tp x pp x pcp. Rows carry no request
counts, duration or dates: those columns stay null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from inferx_pipeline.results import checks
from inferx_pipeline.results.e2e_interactivity import E2E_INTVTY_COLUMNS
from inferx_pipeline.results.importers.identity import ImportContext, resolve_identity, resolve_run
from inferx_pipeline.results.normalize import METRICS, STATS, sampled_tpot
from inferx_pipeline.results.record import ResultRecord, Source, image_tag, result_id

REQUIRED_KEYS: tuple[str, ...] = ("hw", "conc", "model", "framework", "precision", "tp")
REQUIRED_KEYS += ("tput_per_gpu", "output_tput_per_gpu", "mean_ttft", "mean_tpot")
THROUGHPUT_KEYS = ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu")
# record column -> agg key, e.g. ttft_p99_s <- p99_ttft (seconds)
LATENCY_KEYS: dict[str, str] = {
    f"{metric}_{stat}_s": f"{raw_stat}_{metric}"
    for metric in METRICS
    for stat, raw_stat in STATS.items()
}
INTVTY_KEYS = tuple(f"{raw_stat}_intvty" for raw_stat in STATS.values())
_TRUE = ("true", "1", "yes")


class InferencexImporter:
    """InferenceX's aggregated per-point rows."""

    kind: Source = "inferencex"

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return "tput_per_gpu" in payload and "hw" in payload

    def to_record(
        self, payload: Mapping[str, Any], *, artifact_sha256: str, context: ImportContext
    ) -> ResultRecord:
        check_row(payload)
        identity = resolve_identity(identity_fields(payload), context)
        run = resolve_run({}, context, artifact_sha256=artifact_sha256, default_official=True)
        latencies = sampled_tpot(
            {col: checks.number(payload, key) for col, key in LATENCY_KEYS.items()}
        )
        total = _num(payload, "tput_per_gpu")
        output = _num(payload, "output_tput_per_gpu")
        given_input = checks.number(payload, "input_tput_per_gpu")
        fields: dict[str, Any] = {
            **identity.model_dump(),
            "result_id": result_id(identity, run),
            "image_tag": image_tag(identity.image),
            "realized_al": None,
            "gpus": identity.gpus,
            "tput_per_gpu": total,
            "output_tput_per_gpu": output,
            "input_tput_per_gpu": given_input if given_input is not None else total - output,
            **latencies,
            **{col: _reciprocal(latencies[f"tpot_{stat}_s"]) for col, stat in _INTVTY_STATS},
            **dict.fromkeys(_ABSENT),
            "run_id": run.run_id,
            "attempt": run.attempt,
            "simulated": run.simulated,
            "official": run.official and not run.simulated,
            "status": "ok",
            "valid": True,
            "source": self.kind,
            "artifact_sha256": artifact_sha256,
            "artifacts": "{}",
            "slurm_job_id": None,
            "slurm_cluster": None,
            "pr_number": None,
            "head_sha": None,
            "measured_in": None,
        }
        try:
            return ResultRecord(**fields)
        except ValidationError as err:
            raise checks.reject("wrong-type", f"record does not validate: {err}") from err


_INTVTY_STATS = tuple((f"intvty_{stat}", stat) for stat in STATS)
_ABSENT = (
    "request_throughput",
    "success_rate",
    "measured_isl",
    "measured_osl",
    "duration_s",
    "num_requests",
    "failed_requests",
    "started_at",
    "finished_at",
    "client_version",
    *E2E_INTVTY_COLUMNS,  # aggregated rows keep no per-request data
)


def check_row(row: Mapping[str, Any]) -> None:
    """Every rejection rule for one agg row; raises ``MalformedArtifactError``."""
    if flag(row.get("is_multinode")) or flag(row.get("disagg")) or "prefill_tp" in row:
        raise checks.reject(
            "unsupported", "multinode/disaggregated row: only single-node rows are imported"
        )
    checks.require_keys(row, REQUIRED_KEYS)
    checks.all_finite(row)
    checks.non_negative(row, (*THROUGHPUT_KEYS, *LATENCY_KEYS.values(), *INTVTY_KEYS))
    total, output = _num(row, "tput_per_gpu"), _num(row, "output_tput_per_gpu")
    given_input = checks.number(row, "input_tput_per_gpu")
    if given_input is not None:
        checks.agree("tput_per_gpu", total, given_input + output, "input + output tput_per_gpu")
    for raw_stat in STATS.values():
        reported = checks.number(row, f"{raw_stat}_intvty")
        tpot = checks.number(row, f"{raw_stat}_tpot")
        if reported is not None and tpot:
            checks.agree(f"{raw_stat}_intvty", reported, 1.0 / tpot, f"1 / {raw_stat}_tpot (s)")
    ttft, e2el = checks.number(row, "mean_ttft"), checks.number(row, "mean_e2el")
    if ttft is not None and e2el is not None and ttft > e2el:
        raise checks.reject(
            "wrong-units",
            f"mean_ttft={ttft:g} exceeds mean_e2el={e2el:g}: both must be seconds",
        )


def identity_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """``JobIdentity`` fields of an InferenceX row, or of an eval's ``meta_env.json``
    (the same keys); the SKU is the part of ``hw`` before the first ``-``."""
    spec = str(row.get("spec_decoding") or "none")
    image = row.get("image")
    return {
        "model": row.get("model"),
        "model_family": row.get("infmax_model_prefix") or None,
        "precision": row.get("precision"),
        "sku": str(row["hw"]).split("-", 1)[0].lower(),
        "framework": row.get("framework"),
        "image": str(image).replace("#", "/") if image else None,
        "scenario": "fixed-seq-len",
        "isl": row.get("isl"),
        "osl": row.get("osl"),
        "tp": row.get("tp"),
        "ep": row.get("ep"),
        "dp_attn": flag(row.get("dp_attention")),
        "spec_method": spec,
        "acceptance_mode": "none" if spec == "none" else "real",
        "conc": row.get("conc"),
    }


def flag(value: Any) -> bool:
    """An InferenceX boolean: it writes env-var strings ("true") as often as JSON booleans."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


def _num(row: Mapping[str, Any], key: str) -> float:
    value = checks.number(row, key)
    if value is None:
        raise checks.reject("missing-keys", f"missing required keys: {key}")
    return value


def _reciprocal(seconds: float | None) -> float | None:
    # tok/s/user = 1 / TPOT(s) = 1000 / TPOT(ms)
    return 1.0 / seconds if seconds else None
