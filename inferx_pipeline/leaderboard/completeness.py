"""Is a built site complete? Every listed file exists; every recipe with shown rows has a page.

The Dagster ``leaderboard`` asset's check: a build that silently dropped a recipe's
history page, or a page listed in the manifest that never reached disk, is a gap.
"""

from __future__ import annotations

from pathlib import Path

from inferx_pipeline.leaderboard.build import SiteManifest
from inferx_pipeline.leaderboard.source import SHOWN
from inferx_pipeline.results.store import ResultStore


def site_gaps(site: SiteManifest, url: str) -> list[str]:
    """What the site at ``site.out_dir`` lacks against the store at ``url``; empty if complete.

    Raises StoreError when the store cannot be read.
    """
    root = Path(site.out_dir)
    listed = ["index.html", *(page.path for page in site.pages), *site.downloads]
    gaps = [
        f"{name}: listed in the manifest, not on disk"
        for name in listed
        if not (root / name).is_file()
    ]
    store = ResultStore(url)
    try:
        shown = store.read_frame(SHOWN, ("recipe_id",))
    finally:
        store.close()
    paged = {page.title for page in site.pages if page.kind == "history"}
    missing = sorted(set(shown["recipe_id"].astype(str)) - paged)
    gaps.extend(f"recipe {recipe}: has shown results but no history page" for recipe in missing)
    return gaps
