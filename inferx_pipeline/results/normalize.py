"""RawResult JSON (a superset of ``vllm bench serve --save-result``) + identity -> ResultRecord.

Pure: no I/O, no clock. The field mapping is explicit (``LATENCY_KEYS``): latencies
arrive in milliseconds (``mean_ttft_ms``) and leave in seconds (``ttft_mean_s``);
interactivity is 1000 / TPOT(ms) at each statistic (tok/s/user), E2E-normalized
interactivity 1 / statistic of per-request E2EL per output token; per-GPU throughput
is the server's token throughput divided by its GPUs (tp x pp x pcp).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from inferx_pipeline.results import checks
from inferx_pipeline.results.e2e_interactivity import e2e_interactivity
from inferx_pipeline.results.record import (
    JobIdentity,
    ResultRecord,
    RunContext,
    Source,
    Status,
    image_tag,
    result_id,
)

METRICS = ("ttft", "tpot", "itl", "e2el")
# record statistic -> vLLM key statistic
STATS: dict[str, str] = {"mean": "mean", "median": "median", "p90": "p90", "p99": "p99"}
# record column -> raw key, e.g. ttft_p99_s <- p99_ttft_ms
LATENCY_KEYS: dict[str, str] = {
    f"{metric}_{stat}_s": f"{raw_stat}_{metric}_ms"
    for metric in METRICS
    for stat, raw_stat in STATS.items()
}
REQUIRED_KEYS = (
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
)
COUNT_KEYS = ("completed", "failed", "num_prompts", "total_input_tokens", "total_output_tokens")
THROUGHPUT_KEYS = ("request_throughput", "output_throughput", "total_token_throughput")
VLLM_DATE_FORMAT = "%Y%m%d-%H%M%S"


def normalize(
    raw: Mapping[str, Any],
    identity: JobIdentity,
    run: RunContext,
    *,
    artifact_sha256: str,
    source: Source,
) -> ResultRecord:
    """Map one raw bench payload to a record.

    Raises ``MalformedArtifactError`` (missing-keys, wrong-type, not-finite, negative,
    wrong-units) when the payload cannot be trusted; never returns a partial record.
    """
    check_payload(raw)
    gpus = identity.gpus
    total = _num(raw, "total_token_throughput")
    output = _num(raw, "output_throughput")
    completed = int(_num(raw, "completed"))
    failed = _failed(raw, completed)
    started, finished = _times(raw)
    status = _status(raw, completed)
    fields: dict[str, Any] = {
        **identity.model_dump(exclude={"image_digest", "engine_version"}),
        "result_id": result_id(identity, run),
        "image_tag": image_tag(identity.image),
        "image_digest": identity.image_digest or _meta(raw, "image_digest"),
        "engine_version": identity.engine_version or _meta(raw, "engine_version"),
        "realized_al": _realized_al(raw),
        "gpus": gpus,
        "tput_per_gpu": total / gpus,
        "input_tput_per_gpu": max(total - output, 0.0) / gpus,
        "output_tput_per_gpu": output / gpus,
        "request_throughput": _num(raw, "request_throughput"),
        **latencies_s(raw),
        **interactivity(raw),
        "success_rate": completed / (completed + failed) if completed + failed else 0.0,
        "measured_isl": _measured(raw, "measured_isl_mean", "total_input_tokens", completed),
        "measured_osl": _measured(raw, "measured_osl_mean", "total_output_tokens", completed),
        "duration_s": _num(raw, "duration"),
        "num_requests": completed + failed,
        "failed_requests": failed,
        "run_id": run.run_id,
        "attempt": run.attempt,
        "started_at": started,
        "finished_at": finished,
        "client_version": _client_version(raw),
        "simulated": run.simulated,
        "official": run.official and not run.simulated,
        "status": status,
        "valid": status == "ok",
        "source": source,
        "artifact_sha256": artifact_sha256,
        "artifacts": json.dumps(run.artifacts, sort_keys=True),
        "slurm_job_id": run.slurm_job_id,
        "slurm_cluster": run.slurm_cluster,
        "pr_number": run.pr_number,
        "head_sha": run.head_sha,
        "measured_in": run.measured_in,
        **e2e_interactivity(raw),
    }
    try:
        return ResultRecord(**fields)
    except ValidationError as err:
        raise checks.reject("wrong-type", f"record does not validate: {err}") from err


def check_payload(raw: Mapping[str, Any]) -> None:
    """Every rejection rule for a vLLM-format payload; raises ``MalformedArtifactError``."""
    checks.require_keys(raw, REQUIRED_KEYS)
    checks.all_finite(raw)
    checks.non_negative(raw, (*COUNT_KEYS, *THROUGHPUT_KEYS, "duration", *LATENCY_KEYS.values()))
    duration = _num(raw, "duration")
    tokens = _num(raw, "total_output_tokens")
    if duration > 0 and tokens > 0:
        checks.agree(
            "output_throughput",
            _num(raw, "output_throughput"),
            tokens / duration,
            "total_output_tokens / duration (s)",
        )
    ttft_ms = checks.number(raw, "mean_ttft_ms")
    if (
        ttft_ms is not None
        and duration > 0
        and ttft_ms > duration * 1000 * (1 + checks.UNIT_TOLERANCE)
    ):
        raise checks.reject(
            "wrong-units",
            f"mean_ttft_ms: got {ttft_ms:g} ms, longer than the whole run "
            f"({duration:g} s); latencies must be in milliseconds, duration in seconds",
        )
    tpot_ms = checks.number(raw, "mean_tpot_ms")
    reported = checks.number(raw, "mean_intvty")
    if reported is not None and tpot_ms:
        checks.agree("mean_intvty", reported, 1000.0 / tpot_ms, "1000 / mean_tpot_ms")


def latencies_s(raw: Mapping[str, Any]) -> dict[str, float | None]:
    """Every ``{metric}_{stat}_s`` column from its ``{stat}_{metric}_ms`` key (null stays null;
    a TPOT of 0 becomes null, see ``sampled_tpot``)."""
    out: dict[str, float | None] = {}
    for column, key in LATENCY_KEYS.items():
        value = checks.number(raw, key)
        out[column] = None if value is None else value / 1000.0
    return sampled_tpot(out)


def sampled_tpot(latencies: Mapping[str, float | None]) -> dict[str, float | None]:
    """``latencies`` (record columns) with every TPOT of exactly 0 made null.

    No engine emits tokens in no time: a 0 is how a source spells "no TPOT sample" (vLLM's
    ``np.mean(tpots or 0)`` when no request had two tokens; a client that read a whole
    stream at once). Interactivity is null there too, so the row says "not measured" once.
    """
    return {
        column: None if column.startswith("tpot_") and value == 0 else value
        for column, value in latencies.items()
    }


def interactivity(raw: Mapping[str, Any]) -> dict[str, float | None]:
    """``intvty_{stat}`` = 1000 / TPOT(ms) at that statistic; null when TPOT is null or 0."""
    out: dict[str, float | None] = {}
    for stat, raw_stat in STATS.items():
        tpot_ms = checks.number(raw, f"{raw_stat}_tpot_ms")
        out[f"intvty_{stat}"] = 1000.0 / tpot_ms if tpot_ms else None
    return out


def _num(raw: Mapping[str, Any], key: str) -> float:
    # Only called on keys check_payload required, so None cannot come back.
    value = checks.number(raw, key)
    if value is None:
        raise checks.reject("missing-keys", f"missing required keys: {key}")
    return value


def _failed(raw: Mapping[str, Any], completed: int) -> int:
    failed = checks.number(raw, "failed")
    if failed is not None:
        return int(failed)
    prompts = checks.number(raw, "num_prompts")
    if prompts is not None:
        return max(int(prompts) - completed, 0)
    errors = raw.get("errors")
    return sum(1 for e in errors if e) if isinstance(errors, list) else 0


def _status(raw: Mapping[str, Any], completed: int) -> Status:
    status = raw.get("status")
    if status in ("failed", "incomplete"):
        return "failed" if status == "failed" else "incomplete"
    if completed == 0:
        return "failed"
    return "ok" if raw.get("valid", True) is True else "invalid"


def _times(raw: Mapping[str, Any]) -> tuple[datetime | None, datetime | None]:
    started_s = checks.number(raw, "started_at")
    finished_s = checks.number(raw, "finished_at")
    if started_s is not None:
        started = datetime.fromtimestamp(started_s, tz=UTC)
    elif isinstance(raw.get("date"), str):
        # vLLM writes the bench host's local time without a zone; we take it as UTC.
        try:
            started = datetime.strptime(raw["date"], VLLM_DATE_FORMAT).replace(tzinfo=UTC)
        except ValueError as err:
            raise checks.reject(
                "wrong-type", f"date: got {raw['date']!r}; expected {VLLM_DATE_FORMAT}"
            ) from err
    else:
        return None, None
    if finished_s is not None:
        return started, datetime.fromtimestamp(finished_s, tz=UTC)
    return started, started + timedelta(seconds=_num(raw, "duration"))


def _measured(
    raw: Mapping[str, Any], mean_key: str, total_key: str, completed: int
) -> float | None:
    mean = checks.number(raw, mean_key)
    if mean is not None:
        return mean
    return _num(raw, total_key) / completed if completed else None


def _realized_al(raw: Mapping[str, Any]) -> float | None:
    acceptance = raw.get("acceptance")
    if not isinstance(acceptance, Mapping):
        return None
    return checks.number(acceptance, "acceptance_length")


def _client_version(raw: Mapping[str, Any]) -> str | None:
    client = raw.get("client")
    version = client.get("version") if isinstance(client, Mapping) else None
    return str(version) if version is not None else None


def _meta(raw: Mapping[str, Any], key: str) -> str | None:
    metadata = raw.get("metadata")
    value = metadata.get(key) if isinstance(metadata, Mapping) else None
    return str(value) if value is not None else None
