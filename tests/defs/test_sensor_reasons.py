"""Every sensor's tick says why it requests nothing: what failed, and where to fix it.

Broken inputs are real (a registry on a closed loopback port, a repository path that
does not exist); a reachable registry is the package's ``FakeRegistry``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.defs.resources import RecipeRepoResource
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.settings import Settings
from tests.defs.conftest import BF16, Project, tick

H200_IMAGE = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"
BF16_IMAGE = "vllm/vllm-openai-rocm:nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fake_hub() -> FakeRegistry:
    """Docker Hub's vllm/vllm-openai with the h200 recipe's pinned tag."""
    return FakeRegistry({"vllm/vllm-openai": {H200_IMAGE.split(":")[1]: "sha256:" + "0" * 64}})


def test_an_unreachable_registry_is_the_skip_reason_with_its_url_and_setting(
    project: Project,
    instance: dg.DagsterInstance,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    config = tmp_path / "registries.yaml"
    config.write_text(f"hosts:\n  docker.io: {{url: '{url}'}}\n")
    monkeypatch.setenv("INFERX_REGISTRIES", str(config))
    configured = Project(project.root, Settings())  # the default resources read the setting
    result = tick(configured.definitions(), "new_image_tags", instance, None)
    assert result.run_requests == []
    message = result.skip_message
    assert message.startswith("docker.io/vllm/vllm-openai: registry unreachable or refusing: ")
    assert "no answer from docker.io (ConnectionError" in message and url in message
    assert message.endswith(f"(registry config: INFERX_REGISTRIES={config}); tried again next tick")
    # The repository was never read: the next tick still takes its first look.
    assert json.loads(result.cursor) == {}


def test_first_look_then_no_new_tag_then_a_tag_no_recipe_follows(
    project: Project, instance: dg.DagsterInstance
) -> None:
    hub = _fake_hub()
    defs = project.definitions(registries=Registries(clients={"docker.io": hub}))
    first = tick(defs, "new_image_tags", instance, "")
    assert first.skip_message == (
        "docker.io/vllm/vllm-openai: first look, recorded its tags (1); tags pushed from now on "
        "are measured"
    )
    same = tick(defs, "new_image_tags", instance, first.cursor)
    assert same.skip_message == (
        "docker.io/vllm/vllm-openai: no new tag since the cursor (tags seen: 1)"
    )
    hub.push("vllm/vllm-openai", "v99.0.0")  # the recipe tracks nightly-* only
    other = tick(defs, "new_image_tags", instance, same.cursor)
    assert other.skip_message == (
        "docker.io/vllm/vllm-openai: new tags v99.0.0 match no recipe's engine.track"
    )


def test_one_registry_down_still_requests_the_other_and_logs_the_failure(
    project: Project, instance: dg.DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()
    bf16 = project.root / "recipes" / BF16
    bf16.write_text(
        bf16.read_text().replace(
            f"image: {BF16_IMAGE}",
            f"image: 127.0.0.1:{port}/{BF16_IMAGE}\n  track: {{ tags: [nightly-*] }}",
        )
    )
    hub = _fake_hub()
    defs = project.definitions(registries=Registries(clients={"docker.io": hub}))
    first = tick(defs, "new_image_tags", instance, None)
    assert first.skip_message.startswith(f"127.0.0.1:{port}/vllm/vllm-openai-rocm: registry ")
    assert "docker.io/vllm/vllm-openai: first look" in first.skip_message
    hub.push("vllm/vllm-openai", "nightly-new")
    capsys.readouterr()  # the first tick's output
    second = tick(defs, "new_image_tags", instance, first.cursor)
    assert [r.job_name for r in second.run_requests] == ["sweep_h200"]
    assert second.skip_message is None
    # The tick's log (Dagster's logger writes to stderr outside the daemon).
    assert f"WARNING - 127.0.0.1:{port}/vllm/vllm-openai-rocm: registry unreachable" in (
        capsys.readouterr().err
    )
    # The unreachable repository stays unread in the cursor: tried again next tick.
    assert set(json.loads(second.cursor)) == {"docker.io/vllm/vllm-openai"}


def test_a_missing_recipe_repository_is_the_skip_reason_with_its_setting(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-repo"
    defs = project.definitions(recipes_repo=RecipeRepoResource(source=str(missing)))
    result = tick(defs, "merged_recipe_changes", instance, None)
    assert result.run_requests == [] and result.cursor is None
    message = result.skip_message
    assert message.startswith(f"cannot fetch branch main of {missing}: ")
    assert "git fetch" in message and "INFERX_RECIPES_REPO" in message


def test_no_recipe_repository_configured_says_which_setting(
    project: Project, instance: dg.DagsterInstance
) -> None:
    result = tick(project.definitions(), "merged_recipe_changes", instance, None)
    assert result.skip_message == "no recipe repository to watch (set INFERX_RECIPES_REPO)"


def test_the_curve_sensors_first_look_says_what_it_recorded(
    project: Project, instance: dg.DagsterInstance
) -> None:
    first = tick(project.definitions(), "golden_curve_changes", instance, None)
    count = len(list((project.root / "golden_al_distribution").glob("*.yaml")))
    golden = project.root / "golden_al_distribution"
    assert first.skip_message == (
        f"first look: recorded the hash of each curve in {golden} ({count}); a change from now "
        "on reruns the recipes that use it"
    )


def test_fail_dead_runs_says_there_was_nothing_to_fail(
    project: Project, instance: dg.DagsterInstance
) -> None:
    result = tick(project.definitions(), "fail_dead_runs", instance, None)
    assert result.skip_message == (
        "nothing to mark failed: no unfinished run's process on this host has died"
    )


def test_the_automation_sensor_cannot_be_previewed_and_its_description_says_so(
    project: Project, instance: dg.DagsterInstance
) -> None:
    # Dagster evaluates it in the daemon; in user code (a tick preview) it refuses.
    defs = project.definitions()
    sensor = defs.resolve_sensor_def("materialize_missing_upstream")
    with pytest.raises(NotImplementedError, match="cannot be evaluated like regular"):
        tick(defs, "materialize_missing_upstream", instance, None)
    assert sensor.description is not None and "no tick preview" in sensor.description
    assert "missing, not in progress and its last run did not fail" in sensor.description
