"""The offline tokenizer: N vocabulary words are N tokens on both sides of the wire."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import BenchError
from inferx_pipeline.tokens import default_tokenizer, load_tokenizer


def test_word_level_round_trip_and_count() -> None:
    tok = default_tokenizer()
    text = " ".join(tok.word(i) for i in (5, 17, 31_999))
    assert tok.encode(text) == [5, 17, 31_999]
    assert tok.count(text) == 3
    assert tok.decode([5, 17]) == "t5 t17"


def test_unknown_words_count_as_one_token_each() -> None:
    assert default_tokenizer().count("hello world t3") == 3


def test_load_tokenizer_from_file_and_missing_path(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    default_tokenizer()._backend.save(str(path))
    assert load_tokenizer(tmp_path).count("t1 t2") == 2
    with pytest.raises(BenchError, match="cannot load tokenizer"):
        load_tokenizer(tmp_path / "missing.json")
