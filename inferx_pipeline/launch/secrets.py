"""Secrets pass to servers by name: values come from the launcher's environment only.

A spec names the variables (``secret_env``); their values are read at start, handed
to the process or container, and never logged, stored or put back into a spec. An
engine's environment is an allow-list (``engine_env``): the spec's ``env``, its
secrets by name, and the few host basics a program needs to run; never the caller's
whole environment, where the results database URL and every other secret live.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from inferx_pipeline.launch.spec import ServerSpec

log = logging.getLogger(__name__)

REDACTED = "<redacted>"
# What any program needs from its host to start: where executables are, a home and a
# temp dir for caches, the locale and time zone. Nothing here carries a credential.
HOST_BASICS = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME")


def secret_values(spec: ServerSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The values of ``spec.secret_env`` found in ``environ``.

    A name missing from ``environ`` is skipped with a warning naming it (a public
    model needs no ``HF_TOKEN``; an engine that does fails with its own message).
    """
    found = {name: environ[name] for name in spec.secret_env if name in environ}
    for name in sorted(set(spec.secret_env) - set(found)):
        log.warning(
            "server %s: secret %s is not set in the launcher's environment", spec.name, name
        )
    return found


def redact(env: Mapping[str, str], secret_names: tuple[str, ...]) -> dict[str, str]:
    """``env`` with the value of every secret name replaced, for logs and artifacts."""
    return {k: REDACTED if k in secret_names else v for k, v in env.items()}


def host_basics(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``HOST_BASICS`` set in ``environ``: the start of any child's allow-listed env."""
    return {name: environ[name] for name in HOST_BASICS if name in environ}


def engine_env(spec: ServerSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of ``spec``'s server: host basics, its env, its secrets by name."""
    return {**host_basics(environ), **spec.env, **secret_values(spec, environ)}
