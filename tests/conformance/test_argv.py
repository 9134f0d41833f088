"""Rule engine-argv: server argvs parsed by the engine's own parser.

The unit tests run the machinery (one subprocess per engine, the verdict cache, the
finding's place and flag) with a stand-in probe on this venv's Python; the ``vllm``
tests run vLLM's real parser of the installed version over the shipped recipes, every
recipe imported from InferenceX's master configs, and a recipe with a misspelled flag.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import JsonValue

from inferx_pipeline.cli import cli
from inferx_pipeline.conformance.argv import ArgvCache, EngineParser, Verdict, parse_argv
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.launch.local import Program
from tests.engines.jobs import catalog_sku, recipe_jobs
from tests.paths import INFERENCEX, ROOT
from tests.services.vllm import TINY_RECIPE, CpuHost

TINY = ROOT / "recipes" / "tiny" / f"{TINY_RECIPE}.yaml"
# Rejects any argv holding --bad, warns of --odd; counts its runs in the file beside it.
STANDIN_PROBE = """
import json, pathlib, sys
runs = pathlib.Path(__file__).with_suffix(".runs")
runs.write_text(str(int(runs.read_text() if runs.exists() else "0") + 1))
def verdict(argv):
    if "--bad" in argv:
        return {"ok": False, "error": "vllm: error: unrecognized arguments: --bad"}
    return {"ok": True, "warnings": ["--odd: got 1; uses 2"] if "--odd" in argv else []}
json.dump([verdict(request["argv"]) for request in json.load(sys.stdin)], sys.stdout)
"""


def _requests(*argvs: tuple[str, ...]) -> list[dict[str, JsonValue]]:
    return [{"argv": list[JsonValue](argv)} for argv in argvs]


def _misspelled(folder: Path) -> Path:
    """The tiny recipe with ``--enforce-eager`` misspelled, under another id."""
    text = TINY.read_text().replace("--enforce-eager: true", "--enforce-eagr: true")
    text = text.replace(f"id: {TINY_RECIPE}", "id: tiny-misspelled-flag")
    path = folder / "tiny-misspelled-flag.yaml"
    path.write_text(text.replace("$schema=../recipe.schema.json", "$schema=x"))
    return path


@pytest.mark.parametrize(
    ("error", "flag"),
    [
        ("vllm: error: unrecognized arguments: --enforce-eagr", "--enforce-eagr"),
        ("vllm: error: argument --kv-cache-dtype: invalid choice: 'fp9'", "--kv-cache-dtype"),
        ("TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser",
         "--enable-auto-tool-choice"),
        ("ValueError: must be a non-negative integer", None),
    ],
)  # fmt: skip
def test_the_flag_is_the_first_one_the_engine_names(error: str, flag: str | None) -> None:
    assert Verdict(ok=False, error=error).flag == flag


def test_without_a_flag_in_the_message_it_is_the_first_whose_field_the_probe_found() -> None:
    error = "AssertionError: chunked_prefill_size must be divisible by page_size"
    verdict = Verdict(ok=False, error=error, flags=("--chunked-prefill-size", "--page-size"))
    assert verdict.flag == "--chunked-prefill-size"


def test_parse_argv_fills_placeholders_and_drops_the_program() -> None:
    job = recipe_jobs(TINY_RECIPE)[0]
    spec = adapter_for(job).server_spec(job, sku=catalog_sku("cpu"))
    argv = parse_argv(spec)
    assert argv[:2] == ("serve", "inferx/tiny-qwen3")
    assert "{port}" not in argv and argv[argv.index("--port") + 1] == "8000"


def test_verdicts_are_cached_by_argv_and_the_engines_install(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(STANDIN_PROBE)
    program = Program(path=Path(sys.executable))
    cache_file = tmp_path / "cache.json"
    parser = EngineParser("vLLM", program, probe, ArgvCache(cache_file))
    first = parser.parse(_requests(("serve", "m"), ("serve", "m", "--bad"), ("serve", "--odd")))
    assert [v.ok for v in first] == [True, False, True] and first[1].flag == "--bad"
    assert first[2].warnings == ("--odd: got 1; uses 2",)
    again = EngineParser("vLLM", program, probe, ArgvCache(cache_file))
    requests = _requests(("serve", "--odd"), ("serve", "m", "--bad"), ("serve", "m"))
    assert again.parse(requests) == first[::-1]
    assert (tmp_path / "probe.runs").read_text() == "1", "the second parse reads the cache"
    cache_file.write_text("{not json")  # a damaged cache costs a re-parse, nothing else
    assert (
        EngineParser("vLLM", program, probe, ArgvCache(cache_file))
        .parse(_requests(("serve",)))[0]
        .ok
    )
    assert json.loads(cache_file.read_text())


@pytest.mark.vllm
def test_real_vllm_parser_passes_every_shipped_and_imported_argv_and_names_a_misspelled_flag(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    imported, bad = tmp_path / "imported", tmp_path / "bad"
    bad.mkdir()
    masters = [str(INFERENCEX / "configs" / f"{v}-master.yaml") for v in ("amd", "nvidia")]
    runner = CliRunner()
    done = runner.invoke(cli, ["import-inferencex", *masters, "--out", str(imported)])
    assert done.exit_code == 0, done.output
    misspelled = _misspelled(bad)
    env = {"INFERX_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "400"}
    args = ["validate", "--host-file", str(cpu_host.path), str(ROOT / "recipes"), str(imported)]
    result = runner.invoke(cli, [*args, str(bad)], env=env)
    argv_errors = [line for line in result.output.splitlines() if "[engine-argv]" in line]
    assert len(argv_errors) == 1, argv_errors
    (line,) = argv_errors
    flag_line = misspelled.read_text().splitlines().index("  args:") + 2
    assert line.startswith(f"{misspelled}:{flag_line}:")
    assert "engine.args.--enforce-eagr: got --enforce-eagr; vLLM 0.32.0+cpu rejects it" in line
    assert "job tiny-misspelled-flag/" in line and "unrecognized arguments" in line
    # The parser really ran: a verdict for every distinct vLLM argv, all but one accepted.
    verdicts = json.loads((tmp_path / "state" / "argv-checks.json").read_text()).values()
    assert len(verdicts) > 50 and sum(not v["ok"] for v in verdicts) == 1
