"""``inferx sim``: serve a simulated vLLM-compatible engine, or predict its curve offline."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from pydantic import ValidationError

from inferx_pipeline.cli.selection import CONCURRENCIES
from inferx_pipeline.cli.sim_flags import TIME_SCALE_OPTION
from inferx_pipeline.dryrun import GroupPrediction, predict_jobs
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.config import ROLES, SPEC_METHODS, SimConfig
from inferx_pipeline.sim.predict import DEFAULT_PROMPTS_PER_CONC, PredictPoint, predict
from inferx_pipeline.sim.server import serve_forever

_DEPLOYMENT_OPTIONS = (
    click.option("--sku", help="Catalog SKU id, e.g. h200 (required without --recipe)."),
    click.option("--model-family", help="Catalog model key, e.g. qwen3.8-27b (as --sku)."),
    click.option("--precision", default="bf16", show_default=True),
    click.option("--kv-dtype", default="bf16", show_default=True),
    click.option("--tp", type=int, default=1, show_default=True),
    click.option("--ep", type=int, default=1, show_default=True),
    click.option("--dp-attn/--no-dp-attn", default=False, show_default=True),
    click.option("--engine", default="vllm", show_default=True, help="Efficiency profile."),
    click.option("--max-num-seqs", type=int, default=256, show_default=True),
    click.option("--max-model-len", type=int, default=None, help="Default min(131072, KV)."),
    click.option("--max-num-batched-tokens", type=int, default=8192, show_default=True),
    click.option("--gpu-memory-utilization", type=float, default=0.9, show_default=True),
    click.option("--spec-method", type=click.Choice(SPEC_METHODS), default="none"),
    click.option("--num-speculative-tokens", type=int, default=0, show_default=True),
    click.option("--acceptance-length", type=float, default=None, help="Target mean AL."),
    click.option("--seed", type=int, default=0, show_default=True),
    click.option("--catalog-dir", type=click.Path(path_type=Path, file_okay=False), default=None),
)

_REQUIRED = ("sku", "model_family")
_LEVELS = "1,2,4,8,16,32,64,128,256"


def _deployment_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_DEPLOYMENT_OPTIONS):
        command = option(command)
    return command


def _config(options: dict[str, Any]) -> SimConfig:
    # Not click-required: `sim predict --recipe` takes them from the recipe's jobs.
    for name in _REQUIRED:
        if options[name] is None:
            raise click.UsageError(f"Missing option '--{name.replace('_', '-')}'.")
    options["catalog_dir"] = options["catalog_dir"] or Settings().catalog_dir
    try:
        return SimConfig(**options)
    except ValidationError as err:
        problems = "; ".join(
            f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-') or 'options'}: {e['msg']}"
            for e in err.errors()
        )
        raise click.UsageError(problems) from err


@click.group()
def sim() -> None:
    """Simulated OpenAI-compatible inference engine (no GPU needed)."""


@sim.command()
@_deployment_options
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=0, show_default=True, help="0 = any free port.")
@click.option("--served-model-name", default=None, help="Default: the model family.")
@click.option("--load-time-s", type=float, default=3.0, show_default=True)
@click.option("--error-rate", type=float, default=0.0, show_default=True)
@click.option("--crash-after-tokens", type=int, default=None)
@TIME_SCALE_OPTION
@click.option(
    "--answer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="JSONL of {question, answer} (GSM8K's format, e.g. the shipped eval task's "
    "inferx_pipeline/evals/data/gsm8k-inferx-test.jsonl): a prompt asking one of its "
    "questions gets the last line of its answer ('#### 42'). Default: filler words.",
)
@click.option(
    "--answer-share",
    type=float,
    default=1.0,
    show_default=True,
    help="With --answer-key: share of its questions answered right, spread evenly in file "
    "order (0.5 = every second); the rest get filler words.",
)
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="aggregated",
    show_default=True,
    help="Disaggregation role behind sglang-router --pd-disaggregation or vllm-router "
    "--vllm-pd-disaggregation; requests without the routers' fields are served whole.",
)
@click.option(
    "--bootstrap-port",
    type=int,
    default=None,
    help="Prefill role (required): port of its KV bootstrap server on --host.",
)
@click.option("--nnodes", type=int, default=1, show_default=True, help="Nodes of one worker.")
@click.option("--node-rank", type=int, default=0, show_default=True, help="0 serves HTTP.")
@click.option("--master-addr", default=None, help="Rank 0's address (ranks > 0 join it).")
@click.option("--master-port", type=int, default=None, help="Rank 0's rendezvous port.")
def serve(**options: Any) -> None:
    """Serve until SIGINT/SIGTERM; prints `INFERX_SIM_LISTENING http://HOST:PORT` when bound.

    Answers are filler words, so an accuracy eval scores 0; with --answer-key the eval's
    gold answers, so it scores --answer-share (a stand-in for testing the eval path).
    With --nnodes N, rank 0 serves (503 until ranks 1..N-1 joined its --master-port) and
    ranks > 0 print nothing: they exit 1 when rank 0 goes away.
    """
    config = _config(options)
    serve_forever(config, lambda url: click.echo(f"INFERX_SIM_LISTENING {url}"))


@sim.command(name="predict")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_deployment_options
@click.option("--recipe", help="Recipe id (glob): predict each of its server groups instead.")
@click.option("--isl", type=int, help="Prompt tokens per request (required without --recipe).")
@click.option("--osl", type=int, help="Output tokens per request (required without --recipe).")
@click.option(
    "--concurrency",
    type=CONCURRENCIES,
    default=_LEVELS,
    show_default=True,
    help="With --recipe: its own.",
)
@click.option("--prompts-per-conc", type=int, default=DEFAULT_PROMPTS_PER_CONC, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per concurrency.")
def predict_command(
    paths: tuple[Path, ...],
    recipe: str | None,
    concurrency: tuple[int, ...],
    prompts_per_conc: int,
    as_json: bool,
    **options: Any,
) -> None:
    """Print tok/s/GPU and tok/s/user per concurrency, in virtual time (no HTTP, no sleeping).

    With --recipe ID [PATHS...] (default recipes/), every server group of the recipe's jobs
    is predicted at its concurrencies, on the simulator settings its sweep would use.
    """
    ctx = click.get_current_context()
    levels = list(concurrency) if _given(ctx, "concurrency") else None
    if recipe is not None:
        _refuse_given(ctx, [name for name in options if name != "catalog_dir"])
        _predict_recipe(recipe, paths, options["catalog_dir"], levels, prompts_per_conc, as_json)
        return
    if paths:
        raise click.UsageError("recipe PATHS need --recipe ID")
    isl, osl = options.pop("isl"), options.pop("osl")
    for name, value in (("isl", isl), ("osl", osl)):
        if value is None:
            raise click.UsageError(f"Missing option '--{name}' (or give --recipe).")
    points = predict(_config(options), isl, osl, levels or list(concurrency), prompts_per_conc)
    click.echo("\n".join(_render(points, as_json)))


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _refuse_given(ctx: click.Context, names: list[str]) -> None:
    for name in names:
        if _given(ctx, name):
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag}: set by the recipe's jobs; drop it or drop --recipe")


def _predict_recipe(
    recipe: str,
    paths: tuple[Path, ...],
    catalog_dir: Path | None,
    levels: list[int] | None,
    prompts_per_conc: int,
    as_json: bool,
) -> None:
    settings = Settings()
    request = MatrixRequest(paths=paths, selection=Selection(recipes=(recipe,)))
    jobs = build_matrix(request, settings)
    if not jobs:
        where = " ".join(str(p) for p in paths) or str(settings.recipes_dir)
        raise click.UsageError(f"--recipe {recipe}: no jobs in {where}; see `inferx matrix`")
    directory = catalog_dir or settings.catalog_dir
    for group in predict_jobs(jobs, directory, levels, prompts_per_conc):
        click.echo("\n".join(_render_group(group, as_json)))


def _render_group(group: GroupPrediction, as_json: bool) -> list[str]:
    if as_json:
        fields = group.model_dump(exclude={"points"})
        return [json.dumps({**fields, **point.model_dump()}) for point in group.points]
    shape = f"ISL {group.isl} OSL {group.osl}"
    if group.approximate:
        shape += " (approximate: the agentic trace's mean turn, think time ignored)"
    title = f"{group.group} · {group.sku} · {group.gpus} GPU · {shape}"
    return [title, *_render(list(group.points), as_json=False), ""]


def _render(points: list[PredictPoint], as_json: bool) -> list[str]:
    if as_json:
        return [json.dumps(point.model_dump()) for point in points]
    header = (
        f"{'conc':>6} {'tok/s/GPU':>10} {'tok/s/user':>10} "
        f"{'TTFT ms':>9} {'TPOT ms':>8} {'E2EL s':>7}"
    )
    rows = [
        f"{p.concurrency:>6} {p.output_tput_per_gpu:>10.1f} {p.interactivity:>10.1f} "
        f"{p.mean_ttft_ms:>9.1f} {p.mean_tpot_ms:>8.2f} {p.mean_e2el_ms / 1000:>7.2f}"
        for p in points
    ]
    return [header, *rows]


@sim.command(name="calibrate")
@click.argument("rows", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--catalog-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
def calibrate_command(rows: Path, catalog_dir: Path | None) -> None:
    """Fit mbu/mfu/step_overhead_ms from measured rows (CSV or JSONL); prints profiles YAML."""
    # numpy is imported only here, so `sim serve` (and its container image) runs without it.
    from inferx_pipeline.sim.calibrate import calibrate, load_rows, profiles_yaml

    directory = catalog_dir or Settings().catalog_dir
    click.echo(profiles_yaml(calibrate(load_rows(rows), directory)), nl=False)
