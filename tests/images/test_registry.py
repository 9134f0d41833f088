"""The Registry API v2 client: pagination, digests, auth, errors; against a real registry too."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from inferx_pipeline.errors import RegistryError
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import (
    MANIFEST_TYPES,
    HttpRegistry,
    Registries,
    RegistryConfig,
    RegistryHost,
)
from inferx_pipeline.images.tracking import TrackRule
from inferx_pipeline.recipes.image_history import registry_history
from tests.images.registry_server import TOKEN, Behaviour, serving
from tests.services.docker_engine import DockerEngine
from tests.services.registry import LocalRegistry

REPO = "vllm/vllm-openai"
TAGS = {f"nightly-{c}": f"sha256:{c * 64}" for c in "abcde"}
CREDS = {"REG_USER": "bench", "REG_PASS": "s3cret-pw"}


def _client(
    url: str,
    *,
    creds: bool = False,
    environ: dict[str, str] | None = None,
    page_size: int = 100,
    timeout_s: float = 30.0,
) -> HttpRegistry:
    names = {"username_env": "REG_USER", "password_env": "REG_PASS"} if creds else {}
    host = RegistryHost(url=url, **names)
    cfg = RegistryConfig(hosts={"docker.io": host}, page_size=page_size, timeout_s=timeout_s)
    return HttpRegistry("docker.io", cfg, environ=CREDS if environ is None else environ)


@pytest.fixture
def behaviour() -> Behaviour:
    return Behaviour(images={REPO: dict(TAGS)})


@pytest.fixture
def server(behaviour: Behaviour) -> Iterator[str]:
    with serving(behaviour) as url:
        yield url


def test_tags_follow_link_pages(server: str, behaviour: Behaviour) -> None:
    assert _client(server, page_size=2).tags(REPO) == sorted(TAGS)
    pages = [s.query for s in behaviour.seen if s.path.endswith("/tags/list")]
    assert pages == [
        {"n": "2"},
        {"n": "2", "last": "nightly-b"},
        {"n": "2", "last": "nightly-d"},
    ]


def test_tags_without_pagination_come_at_once(server: str, behaviour: Behaviour) -> None:
    behaviour.paginate = False
    assert _client(server, page_size=2).tags(REPO) == sorted(TAGS)
    assert len(behaviour.seen) == 1


def test_digest_asks_for_every_manifest_type(server: str, behaviour: Behaviour) -> None:
    # Without these Accept types a registry may answer an old manifest (another digest).
    assert _client(server).digest(REPO, "nightly-c") == TAGS["nightly-c"]
    head = behaviour.seen[-1]
    assert head.method == "HEAD" and head.accept == ", ".join(MANIFEST_TYPES)
    assert head.accept is not None and "manifest.list.v2" in head.accept


def test_unknown_repository_names_url_status_and_registry_words(server: str) -> None:
    with pytest.raises(RegistryError) as caught:
        _client(server).tags("vllm/nope")
    assert str(caught.value) == (
        f"GET {server}/v2/vllm/nope/tags/list: HTTP 404: NAME_UNKNOWN: repository name not "
        f"known to registry; expected vllm/nope on docker.io (served by {server}); check the "
        "repository name and tag, and that they exist on this registry"
    )


def test_unknown_tag_reads_the_error_body_after_head(server: str) -> None:
    with pytest.raises(RegistryError, match=r"HEAD .*/manifests/nope: HTTP 404: MANIFEST_UNKNOWN"):
        _client(server).digest(REPO, "nope")


def test_missing_digest_header(server: str, behaviour: Behaviour) -> None:
    behaviour.digest_header = False
    with pytest.raises(RegistryError, match="without a Docker-Content-Digest header"):
        _client(server).digest(REPO, "nightly-a")


def test_a_body_that_is_not_a_tag_list(server: str, behaviour: Behaviour) -> None:
    behaviour.tags_body = b"<html>login</html>"
    with pytest.raises(RegistryError, match=r"HTTP 200 but the body is not a tag list"):
        _client(server).tags(REPO)


def test_a_link_chain_that_never_ends(server: str, behaviour: Behaviour) -> None:
    behaviour.link_to_self = True
    with pytest.raises(RegistryError, match=r"did not end after 2 pages; expected a Link chain"):
        _client(server).tags(REPO)


def test_bearer_token_with_credentials_is_fetched_once(server: str, behaviour: Behaviour) -> None:
    behaviour.auth = "bearer"
    client = _client(server, creds=True, page_size=2)
    assert client.tags(REPO) == sorted(TAGS)
    assert client.digest(REPO, "nightly-e") == TAGS["nightly-e"]
    tokens = [s for s in behaviour.seen if s.path == "/token"]
    assert len(tokens) == 1
    assert tokens[0].query == {"service": "test-registry", "scope": f"repository:{REPO}:pull"}
    assert tokens[0].authorization is not None and tokens[0].authorization.startswith("Basic ")
    assert TOKEN not in repr(client) and "s3cret-pw" not in repr(client)


@pytest.mark.parametrize(
    ("creds", "environ", "token_status", "accept", "expected"),
    [
        (False, {}, 200, True, "incorrect username or password"),
        (True, {"REG_USER": "bench", "REG_PASS": "wrong-pw"}, 200, True, "incorrect username"),
        (True, CREDS, 500, True, "HTTP 500: nope"),
        (True, CREDS, 200, False, "HTTP 401: UNAUTHORIZED: authentication required"),
    ],
)
def test_bearer_failures_never_show_secrets(
    server: str,
    behaviour: Behaviour,
    creds: bool,
    environ: dict[str, str],
    token_status: int,
    accept: bool,
    expected: str,
) -> None:
    behaviour.auth, behaviour.token_status, behaviour.accept_token = "bearer", token_status, accept
    with pytest.raises(RegistryError) as caught:
        _client(server, creds=creds, environ=environ).tags(REPO)
    message = str(caught.value)
    assert expected in message
    for secret in ("s3cret-pw", "wrong-pw", TOKEN):
        assert secret not in message


def test_unreachable_realm_and_unknown_challenge(server: str, behaviour: Behaviour) -> None:
    with serving(Behaviour()) as closed:
        pass  # nothing listens there any more
    behaviour.auth, behaviour.realm = "bearer", f"{closed}/token"
    with pytest.raises(RegistryError, match=r"GET .*/token: no answer from the token server"):
        _client(server, creds=True).tags(REPO)
    behaviour.auth = "negotiate"
    with pytest.raises(RegistryError, match="HTTP 401 with challenge 'negotiate'; expected"):
        _client(server).tags(REPO)


def test_basic_credentials(server: str, behaviour: Behaviour) -> None:
    behaviour.auth = "basic"
    assert _client(server, creds=True).digest(REPO, "nightly-a") == TAGS["nightly-a"]
    with pytest.raises(RegistryError, match="asks for basic credentials and none are configured"):
        _client(server).tags(REPO)
    wrong = {"REG_USER": "bench", "REG_PASS": "wrong-pw"}
    with pytest.raises(RegistryError, match="HTTP 401") as caught:
        _client(server, creds=True, environ=wrong).tags(REPO)
    assert "wrong-pw" not in str(caught.value)


def test_unset_credential_variable_is_named(server: str, behaviour: Behaviour) -> None:
    behaviour.auth = "basic"
    with pytest.raises(RegistryError, match=r"environment variable\(s\) REG_PASS are unset"):
        _client(server, creds=True, environ={"REG_USER": "bench"}).tags(REPO)


def test_unreachable_registry() -> None:
    with serving(Behaviour()) as url:
        pass  # the port is closed again: nothing answers there now
    with pytest.raises(RegistryError, match=r"no answer from docker.io \(ConnectionError"):
        _client(url, timeout_s=2).tags(REPO)


def test_registry_host_config() -> None:
    config = RegistryConfig(hosts={"docker.io": RegistryHost(url="http://127.0.0.1:5000/")})
    assert config.base_url("docker.io") == "http://127.0.0.1:5000"
    assert config.base_url("nvcr.io") == "https://nvcr.io"
    assert RegistryConfig().base_url("docker.io") == "https://registry-1.docker.io"
    assert RegistryConfig().base_url("127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert RegistryConfig().base_url("localhost:5000") == "http://localhost:5000"
    assert RegistryConfig().base_url("127.example.com") == "https://127.example.com"
    with pytest.raises(ValueError, match="set both username_env and password_env"):
        RegistryHost(username_env="U")


def test_registries_pick_the_client_by_host(server: str) -> None:
    fake = FakeRegistry({"nvidia/tensorrt-llm/release": {"1.3.0rc14": "sha256:" + "f" * 64}})
    config = RegistryConfig(hosts={"docker.io": RegistryHost(url=server)})
    registries = Registries(config, clients={"nvcr.io": fake})
    hub = registries.client_for(ImageRef.parse("vllm/vllm-openai:nightly-a"))
    assert hub is registries.client_for(ImageRef.parse("docker.io/vllm/vllm-openai:x"))
    assert hub.tags(REPO) == sorted(TAGS)
    trt = registries.client_for(ImageRef.parse("nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"))
    assert trt is fake
    registries.close()


# --- the real registry (Debian's docker-registry), images pushed by the private dockerd ---


def _push(engine: DockerEngine, repository: str, tag: str) -> str:
    digest = None
    for line in engine.client.images.push(repository, tag=tag, stream=True, decode=True):
        if "error" in line:
            pytest.fail(f"docker push {repository}:{tag}: {line['error']}")
        digest = line.get("aux", {}).get("Digest", digest)
    assert digest is not None, f"docker push {repository}:{tag} reported no digest"
    return str(digest)


@pytest.fixture(scope="module")
def pushed(
    registry: LocalRegistry, docker_engine: DockerEngine, base_image: str
) -> Iterator[dict[str, str]]:
    """Three tags of 127.0.0.1:PORT/vllm/vllm-openai (distinct digests) -> pushed digest."""
    client = docker_engine.client
    repository = f"{registry.host}/{REPO}"
    client.images.get(base_image).tag(repository, "nightly-aaa")
    for tag in ("nightly-bbb", "v0.11.0"):  # label-only children: new manifests, shared layers
        dockerfile = f"FROM {base_image}\nLABEL inferx.test.tag={tag}\n".encode()
        client.images.build(fileobj=io.BytesIO(dockerfile), tag=f"{repository}:{tag}", rm=True)
    tags = ("nightly-aaa", "nightly-bbb", "v0.11.0")
    digests = {tag: _push(docker_engine, repository, tag) for tag in tags}
    yield digests
    for tag in tags:
        client.images.remove(f"{repository}:{tag}")


@pytest.mark.registry
@pytest.mark.docker
def test_real_registry_tags_and_pushed_digests(
    registry: LocalRegistry, pushed: dict[str, str]
) -> None:
    assert len(set(pushed.values())) == 3
    client = HttpRegistry(registry.host, RegistryConfig(page_size=2))
    # docker-registry 2.8 ignores n (it answers every tag at once, unsorted).
    assert sorted(client.tags(REPO)) == sorted(pushed)
    assert {tag: client.digest(REPO, tag) for tag in pushed} == pushed


@pytest.mark.registry
@pytest.mark.docker
def test_real_registry_behind_bearer_auth_and_pagination(
    registry: LocalRegistry, pushed: dict[str, str]
) -> None:
    behaviour = Behaviour(upstream=registry.url, auth="bearer")
    with serving(behaviour) as url:
        client = _client(url, creds=True, page_size=2)
        assert client.tags(REPO) == sorted(pushed)
        assert client.digest(REPO, "nightly-bbb") == pushed["nightly-bbb"]
    assert len([s for s in behaviour.seen if s.path.endswith("/tags/list") and s.query]) >= 2


@pytest.mark.registry
def test_real_registry_unknown_repository(registry: LocalRegistry) -> None:
    client = HttpRegistry(registry.host, RegistryConfig())
    with pytest.raises(RegistryError) as caught:
        client.tags("vllm/no-such-repo")
    assert str(caught.value) == (
        f"GET {registry.url}/v2/vllm/no-such-repo/tags/list: HTTP 404: NAME_UNKNOWN: "
        f"repository name not known to registry; expected vllm/no-such-repo on "
        f"{registry.host} (served by {registry.url}); check the repository name and tag, and "
        "that they exist on this registry"
    )
    # A HEAD answer has no body: the client asks again with GET to quote the registry.
    with pytest.raises(RegistryError, match="manifests/v1: HTTP 404: MANIFEST_UNKNOWN: manifest"):
        client.digest("vllm/no-such-repo", "v1")


@pytest.mark.registry
@pytest.mark.docker
def test_docker_hub_names_served_by_a_mirror(
    registry: LocalRegistry, pushed: dict[str, str]
) -> None:
    config = RegistryConfig(hosts={"docker.io": RegistryHost(url=registry.url)})
    pinned = "vllm/vllm-openai:nightly-aaa"
    client = Registries(config).client_for(ImageRef.parse(pinned))
    rows = registry_history("r1", pinned, TrackRule(tags=("nightly-*",)), client)
    assert [(r.image, r.ref) for r in rows] == [
        ("vllm/vllm-openai:nightly-aaa", pushed["nightly-aaa"]),
        ("vllm/vllm-openai:nightly-bbb", pushed["nightly-bbb"]),
    ]
