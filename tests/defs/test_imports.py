"""What loading the code location imports: every run worker pays for it before its step."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.defs.conftest import Project

# Libraries only some assets or launchers need (results store, site, Slurm proxy, evals,
# a server's metrics).
LAZY = ("pandas", "plotly", "sqlalchemy", "alembic", "aiohttp", "lm_eval", "prometheus_client")
LOAD = """
import json, sys, warnings
import dagster as dg
warnings.filterwarnings("ignore", category=dg.BetaWarning)
from inferx_pipeline.defs.definitions import defs
defs().resolve_job_def("sweep_h200")
print(json.dumps(sorted(sys.modules)))
"""


def test_loading_the_definitions_leaves_the_heavy_libraries_unimported(project: Project) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD], capture_output=True, text=True, timeout=240, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert "inferx_pipeline" in loaded
    assert sorted(loaded & set(LAZY)) == []
