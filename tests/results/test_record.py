"""ResultRecord contract: column order, table parity, image tags, identity hashing, validators."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from inferx_pipeline.results.record import (
    RECORD_COLUMNS,
    ResultRecord,
    RunContext,
    image_tag,
    result_id,
)
from inferx_pipeline.results.tables import RESULTS
from tests.results.samples import identity, record


def test_table_has_exactly_the_record_columns_in_order() -> None:
    assert tuple(RESULTS.c.keys()) == RECORD_COLUMNS
    nullable = {
        name
        for name, info in ResultRecord.model_fields.items()
        if not info.is_required() or "None" in str(info.annotation)
    }
    assert {c.name for c in RESULTS.c if c.nullable} == nullable


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("vllm/vllm-openai:v0.11.0", "v0.11.0"),
        ("127.0.0.1:5000/vllm/vllm-openai:nightly-abc", "nightly-abc"),
        ("lmsysorg/sglang", "latest"),
        ("127.0.0.1:5000/sglang@sha256:" + "0" * 64, "latest"),
        ("nvcr.io/nvidia/trt:1.3.0@sha256:" + "0" * 64, "1.3.0"),
    ],
)
def test_image_tag(image: str, tag: str) -> None:
    assert image_tag(image) == tag


def test_result_id_is_stable_and_sensitive_to_identity_and_run() -> None:
    run = RunContext(run_id="r", simulated=True)
    assert result_id(identity(), run) == result_id(identity(), run)
    assert result_id(identity(), run) != result_id(identity(image="vllm/vllm-openai:v0.12.0"), run)
    assert result_id(identity(), run) != result_id(
        identity(), run.model_copy(update={"attempt": 2})
    )


def test_gpus_must_equal_tp_pp_pcp() -> None:
    fields = record().model_dump()
    with pytest.raises(ValidationError, match=r"gpus=4 but tp x pp x pcp = 8"):
        ResultRecord(**{**fields, "gpus": 4})


def test_naive_datetimes_are_refused() -> None:
    fields = record().model_dump()
    with pytest.raises(ValidationError, match="timezone-aware"):
        ResultRecord(**{**fields, "started_at": datetime(2026, 1, 1)})


def test_image_tag_must_match_image() -> None:
    fields = record().model_dump()
    with pytest.raises(ValidationError, match="does not match image"):
        ResultRecord(**{**fields, "image_tag": "other"})
