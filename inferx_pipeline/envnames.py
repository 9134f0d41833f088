"""Environment variable names: the POSIX portable form, the only one every shell can export.

A name reaches shells unquoted (``export NAME=...`` in a Slurm batch script, ``-e NAME``
for Docker), so anything else (``A;rm -rf /``, ``A B``, ``1A``) is refused where it is
read: recipes, specs, pools. ``EnvName`` is the pydantic type; ``check_env_name`` the
check for code that builds a shell script from names it did not validate itself.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_name(name: str) -> str:
    """``name`` when it is a POSIX environment variable name; ValueError naming it otherwise."""
    if not ENV_NAME.fullmatch(name):
        raise ValueError(
            f"environment variable name {name!r} is not a valid name; expected letters, "
            "digits and '_', not starting with a digit (POSIX)"
        )
    return name


EnvName = Annotated[str, AfterValidator(check_env_name)]
