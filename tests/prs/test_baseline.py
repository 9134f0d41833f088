"""The ``Baseline recipe:`` line of a PR description, as InferenceX's authors write it."""

from __future__ import annotations

import pytest

from inferx_pipeline.prs.baseline import BaselineRef, baseline_ref

IMAGE = "lmsysorg/sglang:v0.5.9-cu129-amd64"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"Tunes it.\n\nBaseline recipe: #3295 · {IMAGE}\n", BaselineRef(pr=3295, image=IMAGE)),
        ("Baseline recipe: `dsr1-fp8-h200-sglang`", BaselineRef(recipe="dsr1-fp8-h200-sglang")),
        (
            "baseline recipe: dsr1-fp8-h200-sglang | `v0.5.9`",
            BaselineRef(recipe="dsr1-fp8-h200-sglang", image="v0.5.9"),
        ),
        ("  Baseline Recipe:  #12 , nightly-abc ", BaselineRef(pr=12, image="nightly-abc")),
        ("Baseline recipe: #7\nBaseline recipe: #8", BaselineRef(pr=7)),  # the first line
    ],
)
def test_a_recipe_or_a_pr_and_maybe_an_image(body: str, expected: BaselineRef) -> None:
    assert baseline_ref(body) == expected


@pytest.mark.parametrize(
    "body", ["", "No baseline here.", "Baseline recipe:", "Baseline recipe: ???", "Baseline: #3"]
)
def test_no_readable_line_names_nothing(body: str) -> None:
    assert baseline_ref(body) is None


def test_it_reads_back_as_written() -> None:
    assert BaselineRef(pr=3295, image=IMAGE).describe() == f"#3295 · {IMAGE}"
    assert BaselineRef(recipe="r").describe() == "r"
    with pytest.raises(ValueError, match="exactly one"):
        BaselineRef(recipe="r", pr=3)
