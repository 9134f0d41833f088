"""deploy/docker-compose.yaml: valid Compose, the expected services, secrets by name only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.deploy.conftest import (
    COMPOSE_FILE,
    DAGSTER_YAML,
    ENV_EXAMPLE,
    WORKSPACE_YAML,
    ComposeCli,
    ComposeRun,
    env_example,
    load_yaml,
)

SERVICES = {"postgres", "user-code", "webserver", "daemon"}
DAGSTER_SERVICES = SERVICES - {"postgres"}
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|CREDENTIAL|(^|_)KEY$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:?-][^}]*)?\}")
ONLY_A_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
URL_PASSWORD = re.compile(r"://[^/@\s:]+:([^@\s]*)@")
DAGSTER_HOME_YAML = "/opt/dagster/dagster_home/dagster.yaml"


def _raw() -> Any:
    return load_yaml(COMPOSE_FILE)


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the KEY=value list form
        return dict(item.partition("=")[::2] for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in [str(key), *_strings(value)]]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return [node] if isinstance(node, str) else []


def test_compose_file_validates_with_every_variable_set_by_env_example(
    resolved_compose: ComposeRun,
) -> None:
    assert resolved_compose.returncode == 0, resolved_compose.stderr
    # docker-compose warns (and substitutes "") for a ${VAR} that .env does not set.
    assert "is not set" not in resolved_compose.stderr, resolved_compose.stderr
    assert set(resolved_compose.data["services"]) == SERVICES


def test_validator_rejects_an_unknown_service_key(compose_cli: ComposeCli, tmp_path: Path) -> None:
    # Proves the check above validates against the schema rather than merely parsing YAML.
    broken = COMPOSE_FILE.read_text().replace(
        "  webserver:\n", "  webserver:\n    healthcheck_typo: true\n", 1
    )
    run = compose_cli.config(tmp_path, compose_text=broken)
    assert run.returncode != 0
    assert "healthcheck_typo" in run.stderr


def test_every_service_has_a_healthcheck_and_restarts(resolved_compose: ComposeRun) -> None:
    for name, service in resolved_compose.data["services"].items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in {"CMD", "CMD-SHELL"}, f"{name}: no healthcheck command"
        assert service.get("restart") == "unless-stopped", name


def test_dagster_services_wait_for_healthy_dependencies(resolved_compose: ComposeRun) -> None:
    services = resolved_compose.data["services"]
    assert services["user-code"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("webserver", "daemon"):
        assert services[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "user-code": {"condition": "service_healthy"},
        }, name


def test_user_code_serves_the_definitions_the_workspace_points_at(
    resolved_compose: ComposeRun,
) -> None:
    services = resolved_compose.data["services"]
    command = services["user-code"]["command"]
    assert command[:3] == ["dagster", "code-server", "start"]
    args = dict(zip(command[3::2], command[4::2], strict=True))
    assert args["--module-name"] == "inferx_pipeline.defs.definitions"
    assert args["--attribute"] == "defs"
    (location,) = load_yaml(WORKSPACE_YAML)["load_from"]
    grpc = location["grpc_server"]
    assert grpc["host"] in services, "workspace host is not a compose service"
    assert grpc["host"] == "user-code"
    assert str(grpc["port"]) == args["--port"]
    assert args["--location-name"] == grpc["location_name"]
    # Runs use the code server's own image: the image the compose file runs it from.
    env = _environment(services["user-code"])
    assert env["DAGSTER_CURRENT_IMAGE"] == services["user-code"]["image"]
    healthcheck = services["user-code"]["healthcheck"]["test"]
    assert healthcheck[1:4] == ["dagster", "api", "grpc-health-check"]
    assert healthcheck[-1] == args["--port"]


def test_daemon_applies_pool_limits_before_it_starts(resolved_compose: ComposeRun) -> None:
    command = resolved_compose.data["services"]["daemon"]["command"]
    assert command[:2] == ["sh", "-c"]
    first, _, second = command[2].partition(" && ")
    assert first == "inferx dagster pools"
    assert second.startswith("exec dagster-daemon run --workspace /opt/dagster/workspace.yaml")


def test_webserver_serves_the_workspace_on_loopback_only(resolved_compose: ComposeRun) -> None:
    service = resolved_compose.data["services"]["webserver"]
    command = service["command"]
    assert command[0] == "dagster-webserver"
    assert command[command.index("--workspace") + 1] == "/opt/dagster/workspace.yaml"
    (port,) = service["ports"]
    published = port if isinstance(port, str) else f"{port['host_ip']}:{port['published']}"
    assert published.startswith("127.0.0.1:"), port


def test_dagster_services_share_instance_config_state_and_env_file(
    resolved_compose: ComposeRun,
) -> None:
    services = resolved_compose.data["services"]
    for name in DAGSTER_SERVICES:
        volumes = services[name]["volumes"]
        targets = {
            (v if isinstance(v, str) else f"{v['source']}:{v['target']}").split(":")[1]
            for v in volumes
        }
        assert DAGSTER_HOME_YAML in targets, name
        assert "/var/lib/dagster" in targets, f"{name}: compute logs and IO outputs"
    raw = _raw()["services"]
    for name in DAGSTER_SERVICES:
        assert raw[name]["env_file"] == ".env", name
    assert "env_file" not in raw["postgres"], "postgres needs only its own passwords"


def test_every_variable_is_documented_in_env_example() -> None:
    documented = ENV_EXAMPLE.read_text()
    assigned = env_example()
    referenced = {name for text in _strings(_raw()) for name in REFERENCE.findall(text)}
    assert referenced, "expected ${VAR} references in the compose file"
    assert referenced <= set(assigned), f"not in .env.example: {referenced - set(assigned)}"
    for name, service in _raw()["services"].items():
        for key in _environment(service):
            assert re.search(rf"\b{key}\b", documented), f"{name}: {key} not in .env.example"


def test_no_secret_is_written_inline() -> None:
    raw = _raw()
    for name, service in raw["services"].items():
        for key, value in _environment(service).items():
            if SECRET_NAME.search(key):
                assert ONLY_A_REFERENCE.match(value), f"{name}: {key} is not a ${{VAR}}"
    for text in _strings(raw):
        for password in URL_PASSWORD.findall(text):
            assert ONLY_A_REFERENCE.match(password), f"inline password in {text!r}"


def test_env_example_leaves_every_secret_empty() -> None:
    secrets = {k: v for k, v in env_example().items() if SECRET_NAME.search(k)}
    assert {"DAGSTER_POSTGRES_PASSWORD", "INFERX_RESULTS_DB_PASSWORD", "HF_TOKEN"} <= set(secrets)
    assert {k: v for k, v in secrets.items() if v.strip()} == {}


def test_run_launcher_reaches_what_compose_creates(resolved_compose: ComposeRun) -> None:
    compose = resolved_compose.data
    launcher = load_yaml(DAGSTER_YAML)["run_launcher"]["config"]
    assert launcher["network"] in {net["name"] for net in compose["networks"].values()}
    volume_names = {vol["name"] for vol in compose["volumes"].values()}
    for mount in launcher["container_kwargs"]["volumes"]:
        source = mount.split(":")[0]
        assert source.startswith("/") or source in volume_names, mount
    # A name the daemon's environment lacks fails every run at launch.
    daemon_env = _environment(compose["services"]["daemon"])
    missing = [name for name in launcher["env_vars"] if name not in daemon_env]
    assert missing == []


def test_run_launcher_passes_secrets_by_name_only() -> None:
    config = load_yaml(DAGSTER_YAML)
    env_vars = config["run_launcher"]["config"]["env_vars"]
    assert all("=" not in name for name in env_vars), "a value written into dagster.yaml"
    assert {
        "HF_TOKEN",
        "INFERX_REGISTRY_USERNAME",
        "INFERX_REGISTRY_PASSWORD",
        "DAGSTER_POSTGRES_PASSWORD",
        "INFERX_DATABASE_URL",
    } <= set(env_vars)
    postgres_db = config["storage"]["postgres"]["postgres_db"]
    assert all(isinstance(v, dict) and set(v) == {"env"} for k, v in postgres_db.items()
               if k != "scheme"), postgres_db  # fmt: skip
