"""Project roots for smoke sweeps: the checkout's data with validity rules that accept
millisecond points.

A smoke point lasts milliseconds of wall time and its client shares 2 cores with the
servers, so the minimum duration and the saturation rule would mark every row invalid
(``tests/bench`` tests those rules); nothing else differs from the checkout.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import yaml

from tests.paths import ROOT


def smoke_catalog(root: Path, *, saturation: bool = False) -> None:
    """``root/catalog``: links to the checkout's catalog files, relaxed validity rules.

    ``saturation`` keeps the client-saturation rule as shipped (real-engine tests: a CPU
    engine busy on the client's cores must not make a point invalid).
    """
    (root / "catalog").mkdir(parents=True)
    for source in (ROOT / "catalog").iterdir():
        (root / "catalog" / source.name).symlink_to(source)
    validity = root / "catalog" / "bench-validity.yaml"
    rules = yaml.safe_load(validity.read_text())
    rules["min_duration_s"] = 0.0
    if not saturation:
        rules["saturation"] = {
            "max_event_loop_lag_p99_ms": 1e9,
            "max_cpu_percent": 1e9,
            "lag_owned_cpu_percent": 1e9,
        }
    validity.unlink()
    validity.write_text(yaml.safe_dump(rules))


def smoke_root(
    root: Path, recipes: Iterable[str] | None = None, *, saturation: bool = False
) -> Path:
    """A project root at ``root`` with the smoke catalog.

    ``saturation`` as in ``smoke_catalog``. ``recipes`` None: the checkout's recipes and
    golden curves, linked. Otherwise copies of the curves and fragments (tests may edit
    them) and of the named recipe files (paths under recipes/).
    """
    smoke_catalog(root, saturation=saturation)
    if recipes is None:
        (root / "recipes").symlink_to(ROOT / "recipes")
        (root / "golden_al_distribution").symlink_to(ROOT / "golden_al_distribution")
        return root
    shutil.copytree(ROOT / "golden_al_distribution", root / "golden_al_distribution")
    shutil.copytree(ROOT / "recipes" / "_fragments", root / "recipes" / "_fragments")
    for recipe in recipes:
        (root / "recipes" / recipe).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "recipes" / recipe, root / "recipes" / recipe)
    return root
