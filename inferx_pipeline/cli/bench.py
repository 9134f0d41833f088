"""``inferx bench``: measure one load point of any OpenAI-compatible endpoint.

The point lasts as the validity rules need: at least ``--num-prompts`` requests and at
least ``--min-duration-s`` seconds (default: the rules' ``min_duration_s``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from pydantic import TypeAdapter, ValidationError
from rich.console import Console

from inferx_pipeline.errors import EndpointError

DATASET_FLAGS = (
    "input_len",
    "output_len",
    "range_ratio",
    "prefix_len",
    "suffix_len",
    "num_prefixes",
    "trace",
    "think_time_scale",
    "max_turns",
)
EXIT_INTERRUPTED = 130


def _metadata_value(text: str) -> str | int | float | bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def parse_metadata(pairs: tuple[str, ...]) -> dict[str, str | int | float | bool]:
    """``k=v`` pairs to a map (numbers and true/false typed); raises BadParameter."""
    out: dict[str, str | int | float | bool] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"got {pair!r}; expected KEY=VALUE", param_hint="--metadata")
        out[key] = _metadata_value(value)
    return out


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not JSON ({err})", param_hint="--chat-template-kwargs") from err
    if not isinstance(value, dict):
        raise click.BadParameter("expected a JSON object", param_hint="--chat-template-kwargs")
    return value


def _endpoint(argument: str | None, option: str | None) -> str:
    if argument and option:
        raise click.UsageError(
            f"got the endpoint twice ({argument} and --endpoint {option}); give one of them"
        )
    if not (argument or option):
        raise click.UsageError(
            "Missing the endpoint: give it as the ENDPOINT argument or --endpoint"
        )
    return str(argument or option)


def _first_error(err: ValidationError, kind: str) -> str:
    first = err.errors()[0]
    flag = "--" + str(first["loc"][-1]).replace("_", "-") if first["loc"] else ""
    if first["type"] == "extra_forbidden":
        return f"{flag} does not apply to --dataset {kind}"
    return f"{flag}: {first['msg']}" if flag else str(first["msg"])


@click.command()
@click.argument("endpoint_argument", metavar="[ENDPOINT]", required=False)
@click.option("--endpoint", help="Base URL, e.g. http://127.0.0.1:8000 (or as ENDPOINT).")
@click.option("--model", required=True, help="Model name the server serves.")
@click.option("--api", type=click.Choice(["chat", "completions"]), default="completions")
@click.option(
    "--dataset",
    "kind",
    type=click.Choice(["random", "prefix-repetition", "agentic"]),
    default="random",
)
@click.option("--input-len", type=int, help="random: prompt tokens.")
@click.option("--output-len", type=int, help="random, prefix-repetition: output tokens.")
@click.option("--range-ratio", type=float, help="random: lengths in nominal x [1-r, 1+r].")
@click.option("--prefix-len", type=int, help="prefix-repetition: shared prefix tokens.")
@click.option("--suffix-len", type=int, help="prefix-repetition: unique suffix tokens.")
@click.option("--num-prefixes", type=int, help="prefix-repetition: distinct prefixes.")
@click.option("--trace", help="agentic: shipped trace name or JSONL path.")
@click.option("--think-time-scale", type=float, help="agentic: multiplier on think times.")
@click.option("--max-turns", type=int, help="agentic: cut sessions at this turn.")
@click.option("--concurrency", type=int, default=1, show_default=True)
@click.option(
    "--num-prompts", type=int, help="Measured requests at least; default concurrency x 10."
)
@click.option("--prompts-per-conc", type=int, default=10, show_default=True)
@click.option("--warmup", type=int, default=0, show_default=True)
@click.option("--request-rate", type=float, default=float("inf"), help="Poisson req/s.")
@click.option("--burstiness", type=float, default=1.0, show_default=True)
@click.option(
    "--min-duration-s",
    type=float,
    help="Keep sending past --num-prompts until this many seconds passed; 0 = no more "
    "[default: min_duration_s of catalog/bench-validity.yaml].",
)
@click.option("--deadline-s", type=float, help="Stop the whole run after this many seconds.")
@click.option(
    "--idle-timeout-s",
    type=float,
    help="Fail a request after this long without a byte [default: catalog/bench-timeouts.yaml].",
)
@click.option(
    "--total-timeout-s",
    type=float,
    help="Fail a request that takes longer than this [default: catalog/bench-timeouts.yaml].",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--chat-template-kwargs", help="JSON object, e.g. '{\"enable_thinking\": false}'.")
@click.option("--metadata", multiple=True, help="KEY=VALUE provenance, repeatable.")
@click.option("--processes", type=int, default=1, show_default=True)
@click.option("--tokenizer", type=click.Path(path_type=Path), help="Local tokenizer.json.")
@click.option("--result", "result_path", type=click.Path(path_type=Path), help="Write JSON here.")
def bench(kind: str, result_path: Path | None, endpoint_argument: str | None, **flags: Any) -> None:
    """Benchmark ENDPOINT with vllm bench serve's metrics; write a RawResult JSON.

    ENDPOINT (or --endpoint) is the server's base URL, e.g. http://127.0.0.1:8000.
    """
    from inferx_pipeline.bench.config import BenchConfig, DatasetSpec
    from inferx_pipeline.bench.runner import benchmark, rules_for
    from inferx_pipeline.bench.summary import summary_table

    dataset = {"kind": kind} | {k: flags[k] for k in DATASET_FLAGS if flags[k] is not None}
    options = {k: v for k, v in flags.items() if k not in DATASET_FLAGS and v is not None}
    options["endpoint"] = _endpoint(endpoint_argument, flags["endpoint"])
    options["metadata"] = parse_metadata(options["metadata"])
    options["chat_template_kwargs"] = _json_object(flags["chat_template_kwargs"])
    try:
        spec = TypeAdapter(DatasetSpec).validate_python(dataset)
        config = BenchConfig(dataset=spec, **options)
    except ValidationError as err:
        raise click.UsageError(_first_error(err, kind)) from err
    if flags["min_duration_s"] is None:
        config = config.model_copy(update={"min_duration_s": rules_for(config).min_duration_s})
    result = benchmark(config)
    if result_path is not None:
        result_path.parent.mkdir(parents=True, exist_ok=True)
        result_path.write_text(result.to_json())
    Console(stderr=True).print(summary_table(result))
    where = f"; result written to {result_path}" if result_path else ""
    if result.stop_reason == "interrupted":
        click.echo(f"interrupted: incomplete result{where}", err=True)
        raise SystemExit(EXIT_INTERRUPTED)
    if result.completed == 0:  # a deadline that ends the run before any answer fails it too
        first = next((e for e in result.errors if e), "none answered")
        what = (
            f"all {result.failed} requests failed"
            if result.stop_reason is None
            else f"no request completed before the {result.stop_reason} ({result.failed} failed)"
        )
        raise EndpointError(f"{what}; first: {first}{where}")
