"""Every command of README.md's bash blocks runs as written and exits 0; the UI after the demo.

The commands are read from the README itself (tests/readme.py); each is either run here,
in README order, or excluded with the reason the README gives. The words the README marks
as placeholders are filled with real values: PORT and M from the running simulator, DIR
and IMG an InferenceX eval artifact folder of tests/fixtures, POOLS and pools.yaml the
pools files of the private Docker engine and Slurm cluster. The UI commands get a free
``--port`` (the README says so). Every command shares one state dir (INFERX_STATE_DIR),
as a user's sequence shares ``.inferx/``: ``materialize`` after ``sweep`` reuses its points.

Right after ``scripts/demo``, ``inferx dagster ui`` is opened in headless Chromium
(tests/readme_ui.py): no Unsynced badge once the automation sensor has ticked, image
partitions only where a recipe runs, a reason in each sensor's preview, one config place
per knob, the cell's size in its metadata. Screenshots stay under the test's output.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Error as PlaywrightError

from inferx_pipeline.sim.config import SIM_TIME_SCALE_ENV
from tests import readme_ui as ui
from tests.gittools import IDENTITY, isolate_git
from tests.paths import ROOT
from tests.prs.pulls import OWNER, REPO, Forge, recipe_file
from tests.readme import README, Shell, checkout_copy, http_ok, readme_commands
from tests.services.docker_engine import DockerEngine
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo
from tests.services.slurm_cluster import Cluster
from tests.services.vllm import CpuHost
from tests.slurm.conftest import write_pools
from tests.sweep.test_docker_sweep import MEMLOCK

DEMO = "scripts/demo"
UI = ".venv/bin/inferx dagster ui"
SIM = ".venv/bin/inferx sim serve --sku h200 --model-family qwen3.8-27b --port 0"
SIM_MODEL = "qwen3.8-27b"  # what `sim serve` serves by default: its --model-family
KEYED_SIM = f"{SIM} --answer-key $KEY --answer-share 0.5"
BENCH = (
    ".venv/bin/inferx bench --endpoint http://127.0.0.1:PORT --model M --concurrency 16 "
    "--prompts-per-conc 1"
)
DG_DEV = ".venv/bin/dg dev"
SLURM_UI = "INFERX_LAUNCHER=slurm INFERX_RUNNER_POOLS=pools.yaml .venv/bin/inferx dagster ui"
EVALS_DIR = ROOT / "tests/fixtures/inferencex-evals"
EVALS_IMAGE = "lmsysorg/sglang:v0.5.9-rocm700-mi35x"
# The commands the "Using it" block lists, run in its order (the servers aside).
USING_IT = (
    ".venv/bin/inferx validate recipes/",
    ".venv/bin/inferx schema > recipe.schema.json",
    ".venv/bin/inferx matrix --recipe 'qwen3.8*'",
    ".venv/bin/inferx sim predict --recipe qwen3.827b-fp8-h200-vllm-mtp",
    ".venv/bin/inferx sweep --recipe 'qwen3.8*' --launcher sim --prompts-per-conc 1",
    ".venv/bin/inferx sweep --recipe 'qwen3.8*' --launcher sim --prompts-per-conc 1 --format json",
    ".venv/bin/inferx publish",
    ".venv/bin/inferx import-inferencex evals DIR --image IMG",
    ".venv/bin/inferx materialize --recipe 'qwen3.8*' --prompts-per-conc 1",
    ".venv/bin/inferx backfill --recipe qwen3.827b-fp8-h200-vllm-mtp --images nightly-aaa "
    "--images nightly-bbb --conc 1,8 --prompts-per-conc 1",
    ".venv/bin/inferx images add vllm/vllm-openai:nightly-abc",
    ".venv/bin/inferx images list",
    ".venv/bin/inferx images prune --dry-run",
    ".venv/bin/inferx dagster pools",
    ".venv/bin/dg check defs && .venv/bin/dg list defs",
)
NGRAM = "tiny-qwen3-bf16-cpu-vllm-ngram"  # one tiny recipe: one server per launcher
REAL_ENGINES = (
    "scripts/cpu-host",
    ".venv/bin/inferx validate",
    ".venv/bin/inferx sweep --recipe 'tiny-*' --launcher local",
    ".venv/bin/inferx materialize --recipe 'tiny-*' --launcher local",
    "scripts/build-vllm-cpu-image",
    f".venv/bin/inferx sweep --recipe {NGRAM} --launcher docker --pools POOLS",
)
DISAGG = "disagg-tiny-qwen3-bf16-cpu-vllm"  # prefill and decode workers on two nodes
SLURM = (
    "cp deploy/slurm-pools.example.yaml pools.yaml",
    f".venv/bin/inferx sweep --recipe {NGRAM} --launcher slurm --pools pools.yaml",
    f".venv/bin/inferx materialize --recipe {NGRAM} --launcher slurm --pools pools.yaml",
    f".venv/bin/inferx matrix --recipe {DISAGG}",
    f".venv/bin/inferx sweep --recipe {DISAGG} --launcher slurm --pools pools.yaml",
)
PULLS = (
    ".venv/bin/inferx pr list",
    ".venv/bin/inferx pr run N --launcher sim --prompts-per-conc 1",
    ".venv/bin/inferx pr report N",
)
KEY = "KEY=inferx_pipeline/evals/data/gsm8k-inferx-test.jsonl"  # runs before its block's lines
ANSWER_KEY = f".venv/bin/inferx sweep --evals-only --recipe {NGRAM} --sim-answer-key $KEY"
# README commands not run here, each with the README's own reason.
BENCHMARKS = "benchmarks print timings and are run by hand"
EXCLUDED = {
    "scripts/check": "`scripts/check` is what CI runs: the command that runs this test",
    ".venv/bin/python benchmarks/pipeline_overhead.py": BENCHMARKS,
    ".venv/bin/python benchmarks/real_client.py": BENCHMARKS,
}
# The variant the README states for this test (section "Using it").
TEST_MIN_DURATION_S = 1.0
TEST_TIME_SCALE = 0.5
DEMO_TIME_SCALE = 0.05  # demo-sized points: one request per unit of concurrency
SERVED = (UI, SIM, BENCH, DG_DEV, SLURM_UI, KEYED_SIM)
RUN = {DEMO, *USING_IT, *REAL_ENGINES, *SLURM, *PULLS, KEY, ANSWER_KEY, *SERVED}
COMMANDS = readme_commands(README.read_text())
# One state dir for the module, in order: deselecting a service deselects all of it.
pytestmark = pytest.mark.shared_state


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ui_ready(port: int) -> Any:
    """A readiness check for a UI on ``port``: its URL once the webserver answers."""
    url = f"http://127.0.0.1:{port}"
    return lambda _output: url if http_ok(f"{url}/server_info") else None


def _sim_ready(output: str) -> str | None:
    """The simulator's port once it has bound and its model is loaded (``/health`` 200),
    as a user would find it before pointing a client at it."""
    match = re.search(r"INFERX_SIM_LISTENING http://127\.0\.0\.1:(\d+)", output)
    return match.group(1) if match and http_ok(f"{match.group(0).split()[1]}/health") else None


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    """One checkout copy and one state dir for every command of the module."""
    base = tmp_path_factory.mktemp("readme")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFERX_", "DAGSTER_"))}
    env.update({"INFERX_STATE_DIR": str(base / "state"), "CI": "true"})
    # The README's stated test variant: short points, a fast simulated clock.
    env[SIM_TIME_SCALE_ENV] = str(TEST_TIME_SCALE)
    copy = checkout_copy(base / "checkout", min_duration_s=TEST_MIN_DURATION_S)
    # The copy is the project root: the package's own checkout would be, by default.
    env["INFERX_ROOT"] = str(copy)
    yield Shell(COMMANDS, copy, env, base / "logs")


def test_every_readme_command_is_run_or_excluded_with_the_readmes_reason() -> None:
    listed = {command.text for command in COMMANDS}
    unaccounted = listed - RUN - set(EXCLUDED)
    assert not unaccounted, f"README commands neither run nor excluded: {sorted(unaccounted)}"
    stale = (RUN | set(EXCLUDED)) - listed
    assert not stale, f"commands the README no longer shows: {sorted(stale)}"
    readme = " ".join(README.read_text().split())  # a reason may wrap over lines
    for command, reason in EXCLUDED.items():
        assert reason.split(":")[0] in readme, f"{command}: the README does not say {reason!r}"


@pytest.mark.chromium
@pytest.mark.timeout(1500)
def test_the_demo_then_the_dagster_ui_in_a_browser(
    shell: Shell, chromium_browser: Any, tmp_path: Path
) -> None:
    shell.run(DEMO, env={SIM_TIME_SCALE_ENV: str(DEMO_TIME_SCALE)}, timeout_s=900)
    port = _free_port()
    with shell.serving(UI, _ui_ready(port), extra=f" --port {port}") as url:
        ui.settle(url)
        listed = shell.run(".venv/bin/inferx images list")
        page = chromium_browser.new_page(viewport={"width": 1600, "height": 1000})
        skus = sorted({line.split("\t")[0] for line in listed.splitlines() if "\t" in line})
        checks: dict[str, Callable[[], None]] = {
            "no Unsynced": lambda: ui.no_unsynced(page, url, skus, tmp_path),
            "no stray image partition": lambda: _no_strays(url, skus, listed),
            "the cell's size": lambda: ui.cell_metadata(page, url, "h200", tmp_path),
            "a reason in each preview": lambda: ui.sensor_previews(page, url, tmp_path),
            "one place per knob": lambda: ui.one_place_per_knob(
                page, url, "h200", "sweep_h200", tmp_path
            ),
        }
        failed = []
        try:
            ui.first_visit(page, url)
            for name, check in checks.items():
                try:
                    check()
                except (AssertionError, PlaywrightError) as err:  # each check reports
                    failed.append(f"{name}: {str(err)[:1500]}")
                    page.screenshot(path=str(tmp_path / f"failed-{len(failed)}.png"))
        finally:
            page.close()
    assert not failed, "\n".join(failed)


def _no_strays(url: str, skus: list[str], listed: str) -> None:
    """The UI's image partitions of each SKU are the images a recipe of it runs at."""
    for sku in skus:
        ran = {
            row.split("\t")[1]
            for row in listed.splitlines()
            if row.startswith(f"{sku}\t") and "no recipe runs" not in row
        }
        assert ui.image_partitions(url, sku) == ran, (sku, listed)


@pytest.mark.timeout(1200)
def test_using_it_in_order(shell: Shell) -> None:
    for command in USING_IT[:4]:
        shell.run(command)
    assert (shell.cwd / "recipe.schema.json").read_text().startswith("{")
    with shell.serving(SIM, _sim_ready) as sim_port:
        shell.run(BENCH, {"PORT": sim_port, "M": SIM_MODEL})
    outputs = {
        command: shell.run(command, {"DIR": str(EVALS_DIR), "IMG": EVALS_IMAGE})
        for command in USING_IT[4:]
    }
    summary = json.loads(outputs[USING_IT[5]])
    asked = {
        json.loads(Path(j["result_path"]).read_text())["min_duration_s"] for j in summary["jobs"]
    }
    assert asked == {TEST_MIN_DURATION_S}, f"points did not use the copy's rules: {asked}"
    port = _free_port()
    with shell.serving(DG_DEV, _ui_ready(port), extra=f" --port {port}"):
        pass


@pytest.mark.timeout(600)
def test_the_simulator_answers_from_a_key(shell: Shell, lm_eval_python: Path) -> None:
    with shell.serving(KEYED_SIM, _sim_ready):
        pass
    output = shell.run(ANSWER_KEY, env={"INFERX_LM_EVAL_PYTHON": str(lm_eval_python)})
    assert "1.0" in output, output


@pytest.mark.timeout(600)
def test_pull_requests(shell: Shell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch)
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    with ServedRepo(tmp_path / "served") as served, ForgeStandin(OWNER, REPO) as github:
        forge = Forge(served, github, tmp_path)
        forge.start(seed)
        path = recipe_file(seed)
        head = forge.open_pr(7, {path: (ROOT / path).read_text()}, ["full-sweep-fail-fast"])
        env = {
            "INFERX_FORGE_REPO": f"{OWNER}/{REPO}",
            "INFERX_FORGE_API": github.url,
            "INFERX_RECIPES_REPO": served.url,
            "GITHUB_TOKEN": "",  # whatever this machine holds: the stand-in wants none
            **IDENTITY,
        }
        listed = shell.run(PULLS[0], env=env)
        assert f"#7\t{head[:12]}\tfull-sweep-fail-fast\tfull-sweep-fail-fast" in listed, listed
        swept = shell.run(PULLS[1], {"N": "7"}, env=env)
        assert f"PR #7 @ {head[:12]}: swept" in swept, swept
        report = shell.run(PULLS[2], {"N": "7"}, env=env)
    assert report.startswith("### inferx unofficial run") and "PR #7" in report, report
    assert github.comment_bodies(7) == []  # no token: the report is not posted


def _docker_pools(path: Path, engine: DockerEngine, host: CpuHost) -> Path:
    store = host.host.models.model_dump(mode="json")
    docker = {"pull": "never", "grace_s": 5, "shm_size": "1g", "memlock_bytes": MEMLOCK, **store}
    pools = {
        "source": "the tests' private dockerd and the tiny models",
        "pools": {"cpu": {"skus": ["cpu"], "docker": docker, "hosts": [{"url": engine.url}]}},
    }
    path.write_text(yaml.safe_dump(pools))
    return path


@pytest.mark.vllm
@pytest.mark.docker
@pytest.mark.timeout(3600)
def test_real_engines(
    shell: Shell, cpu_host: CpuHost, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    docker_env = {"DOCKER_HOST": docker_engine.url}
    for command in REAL_ENGINES[:4]:
        shell.run(command, timeout_s=900)
    shell.run(REAL_ENGINES[4], env=docker_env, timeout_s=900)
    pools = _docker_pools(tmp_path / "pools.yaml", docker_engine, cpu_host)
    shell.run(REAL_ENGINES[5], {"POOLS": str(pools)}, env=docker_env, timeout_s=900)


@pytest.mark.vllm
@pytest.mark.slurm
@pytest.mark.timeout(1800)
def test_on_a_slurm_cluster(shell: Shell, cpu_host: CpuHost, slurm_cluster: Cluster) -> None:
    shell.run(SLURM[0])
    # "edit partitions, runtime, model store": the private cluster's, and the CPU host's engine.
    write_pools(
        shell.cwd / "pools.yaml",
        programs={"vllm": str(cpu_host.host.programs["vllm"].path)},
        model_store=cpu_host.host.models.model_dump(mode="json"),
    )
    for command in SLURM[1:]:
        shell.run(command, env=slurm_cluster.env, timeout_s=900)
    port = _free_port()
    with shell.serving(SLURM_UI, _ui_ready(port), extra=f" --port {port}", env=slurm_cluster.env):
        pass


def test_every_command_it_lists_ran(shell: Shell) -> None:
    assert RUN - shell.ran == set(), f"README commands that did not run: {RUN - shell.ran}"
