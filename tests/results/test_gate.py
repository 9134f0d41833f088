"""The accuracy gate: throughput rows of a server identity marked with its newest score."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from inferx_pipeline.results.gate import mark_rows

DIGEST = "sha256:" + "c" * 64


def _evals(*scores: tuple[str, float, bool, int]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "server_fingerprint": fp, "image_digest": DIGEST, "task": "gsm8k",
                "exact_match": em, "exact_match_stderr": 0.01, "threshold": 0.9,
                "passed": passed, "finished_at": datetime.fromtimestamp(at, UTC),
            }
            for fp, em, passed, at in scores
        ]
    )  # fmt: skip


def test_below_threshold_marks_every_row_of_its_server_and_drops_none() -> None:
    rows = pd.DataFrame(
        {
            "fingerprint": pd.Categorical(["a", "a", "b", "c"]),
            "image_digest": [DIGEST, DIGEST, DIGEST, "sha256:other"],
            "conc": [4, 8, 4, 4],
        }
    )
    evals = _evals(("a", 0.95, True, 1), ("a", 0.5, False, 2), ("b", 0.93, True, 1))
    evals = pd.concat([evals, _evals(("c", 0.1, False, 1))])  # c on another digest
    marked = mark_rows(rows, evals)
    assert list(marked["conc"]) == [4, 8, 4, 4]  # same rows, same order
    assert list(marked["eval_below"]) == [True, True, False, False]
    assert list(marked["eval_score"][:3]) == [0.5, 0.5, 0.93]  # the newest score of a wins
    assert pd.isna(marked["eval_score"].iloc[3])
    assert isinstance(marked["fingerprint"].dtype, pd.CategoricalDtype)
