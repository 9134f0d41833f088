"""The lm-eval interpreter: a configured venv's python, or the cached one the project builds."""

from __future__ import annotations

import subprocess
from pathlib import Path

from inferx_pipeline.errors import EvalError

SCRIPT = Path("scripts") / "lm-eval-env"
BUILD_TIMEOUT_S = 1800.0


def lm_eval_python(root: Path, configured: Path | None) -> Path:
    """``configured``, else the python ``ROOT/scripts/lm-eval-env`` prints (building the
    cached venv on first use, minutes). EvalError when the script fails."""
    if configured is not None:
        return configured
    try:
        done = subprocess.run(
            [str(root / SCRIPT)],
            check=True,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or ""
        raise EvalError(
            f"{root / SCRIPT}: cannot provide lm-eval ({err}); set INFERX_LM_EVAL_PYTHON "
            f"to a venv's python holding lm-eval[api]\n{detail[-1000:]}"
        ) from err
    return Path(done.stdout.strip())
