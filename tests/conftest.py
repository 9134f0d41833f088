"""Shared pytest setup: real-service fixtures live in tests/services/, one module each."""

pytest_plugins: list[str] = [
    "tests.services.docker_engine",
    "tests.services.postgres",
    "tests.services.chromium",
    "tests.services.lm_eval",
    "tests.services.registry",
    "tests.services.vllm",
    "tests.services.slurm",
]
