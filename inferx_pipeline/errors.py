"""One error tree for the whole package.

::

    InferxError
    ├── RecipeError            a recipe, fragment or curve file is wrong (exit 2)
    │   ├── RecipeSyntaxError      malformed YAML
    │   ├── RecipeSchemaError      wrong type, unknown key, missing field
    │   ├── ExtendsError           missing fragment or an `extends:` cycle
    │   ├── GoldenCurveError       missing curve, thinking mode or draft length
    │   └── PolicyError            a named pre-GPU policy rule is broken
    ├── CatalogError           catalog data is missing or inconsistent
    ├── SimError               the simulator cannot run the requested configuration
    ├── MatrixError            expansion failed (duplicate jobs, bad selection)
    ├── LaunchError            a server could not be started or stopped
    │   ├── PreflightError         an image fact breaks a rule
    │   ├── ServerStartTimeoutError     health never became ready in time
    │   └── ServerExitedError           the server process/container died
    │       └── AllocationEndedError        its batch allocation ended (Slurm state)
    ├── BenchError             the load generator could not measure an endpoint
    │   └── EndpointError          refused connection, non-2xx, malformed SSE
    ├── StoreError             the results database refused a read or write
    │   └── IngestError            an artifact could not be normalized
    │       └── MalformedArtifactError  rejected with a reason code, quarantined
    ├── LeaderboardError       results cannot be turned into a leaderboard site
    ├── EvalError              an accuracy eval cannot run, or its server does not verify
    ├── ImageRefError          a malformed container image reference (exit 2)
    ├── RegistryError          an image registry refused, failed or answered nonsense
    ├── ImageHistoryError      an image-history source (a changelog file) cannot be read
    └── GitRepoError           a watched git repository cannot be cloned, fetched or read

Raise low with the message only; a context manager at the boundary adds where.
"""

from __future__ import annotations


class InferxError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1


class RecipeError(InferxError):
    """A recipe, fragment or golden-curve file is wrong; user errors exit 2."""

    exit_code = 2


class RecipeSyntaxError(RecipeError):
    """The YAML itself is malformed."""


class RecipeSchemaError(RecipeError):
    """A field has the wrong type, is unknown, or is missing."""


class ExtendsError(RecipeError):
    """An `extends:` target is missing or the chain has a cycle."""


class GoldenCurveError(RecipeError):
    """A golden acceptance-length curve, mode or draft length is missing."""


class PolicyError(RecipeError):
    """A named pre-GPU policy rule is broken."""


class CatalogError(InferxError):
    """Catalog data (SKUs, models, prices, image facts) is missing or inconsistent."""


class SimError(InferxError):
    """The simulated engine cannot run the requested configuration (e.g. weights do not fit)."""


class MatrixError(InferxError):
    """The job matrix could not be expanded or selected."""

    exit_code = 2


class LaunchError(InferxError):
    """A server could not be started, health-checked or stopped."""


class PreflightError(LaunchError):
    """An image fact read before GPU start breaks a policy rule."""


class ServerStartTimeoutError(LaunchError):
    """The server never reported healthy within its startup timeout."""

    def __init__(self, message: str, *, log_tail: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.log_tail = log_tail


class ServerExitedError(LaunchError):
    """The server process or container exited while it was needed.

    ``status`` is the exit code (137 = SIGKILL, e.g. the OOM killer; ``oom_killed``
    says when Docker saw it), ``log_tail`` the server's last log lines.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        oom_killed: bool = False,
        log_tail: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.oom_killed = oom_killed
        self.log_tail = log_tail


class AllocationEndedError(ServerExitedError):
    """The batch allocation the server ran in ended; ``state`` is the scheduler's word for it.

    Slurm states: TIMEOUT, NODE_FAIL, PREEMPTED, CANCELLED, OUT_OF_MEMORY, FAILED,
    COMPLETED, or UNKNOWN once the scheduler has forgotten the job.
    """

    def __init__(self, message: str, *, state: str, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]  # ServerExitedError's keywords
        self.state = state


class BenchError(InferxError):
    """The load generator could not measure an endpoint."""


class EndpointError(BenchError):
    """The endpoint refused, answered non-2xx, or sent malformed SSE."""


class StoreError(InferxError):
    """The results database refused a read or a write."""


class IngestError(StoreError):
    """An artifact could not be normalized into a result record."""


class MalformedArtifactError(IngestError):
    """An artifact was rejected for a named reason (``code``) and goes to quarantine."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class LeaderboardError(InferxError):
    """Results cannot be turned into a leaderboard (missing columns, unwritable site dir)."""


class EvalError(InferxError):
    """An accuracy eval cannot run, or its server would not verify drafts for real."""


class ImageRefError(InferxError):
    """A container image reference does not parse (``[registry/]repository[:tag][@digest]``)."""

    exit_code = 2


class RegistryError(InferxError):
    """An image registry refused a request, failed, or answered something unexpected.

    Messages name the URL, the HTTP status and the registry's own error text; never a
    password or token.
    """


class ImageHistoryError(InferxError):
    """An image-history source (an InferenceX perf-changelog.yaml) cannot be read."""


class GitRepoError(InferxError):
    """A watched git repository cannot be cloned, fetched or read; carries git's stderr."""


class ForgeError(InferxError):
    """The forge (GitHub's REST API) refused or failed a call; carries its answer, never a token."""


class PullRequestError(InferxError):
    """A pull request cannot be swept as it stands (conflicting labels, a changelog line
    deleted, a diff that cannot be read); says what to change on the PR."""
