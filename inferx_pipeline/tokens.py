"""Tokenization without the network, shared by the benchmark client and the simulator.

The default tokenizer is a word-level vocabulary built at first use with the
``tokenizers`` library: token ``i`` is the word ``t<i>``, split on whitespace, so a
prompt made of N vocabulary words is exactly N tokens on both sides of the wire.
A local ``tokenizer.json`` (a real model's) can be given instead.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer as HfTokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit

from inferx_pipeline.errors import BenchError

DEFAULT_VOCAB_SIZE = 32_000
UNKNOWN = "[UNK]"


class Tokenizer:
    """Encode, decode and count tokens; the same object serves client and simulator."""

    def __init__(self, backend: HfTokenizer, name: str) -> None:
        self._backend = backend
        self.name = name
        self.vocab_size = backend.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added)."""
        return list(self._backend.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self._backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; for the word-level default, words joined by single spaces."""
        return str(self._backend.decode(list(ids), skip_special_tokens=True))

    @functools.cached_property
    def stable_ids(self) -> tuple[int, ...]:
        """Ids that survive decode -> encode next to themselves, for exact-length prompts.

        Random byte-level BPE ids decode to partial UTF-8 and merge across boundaries, so
        their text re-encodes to another length; these ids do not. For the word-level
        default every id but the unknown one qualifies.
        """
        # Id 0 is the unknown or padding token in both kinds of tokenizer here.
        candidates = [i for i in range(1, self.vocab_size) if self._backend.id_to_token(i)]
        texts = [self.decode([i, i]) for i in candidates]
        encoded = self._backend.encode_batch(texts, add_special_tokens=False)
        stable = tuple(i for i, enc in zip(candidates, encoded, strict=True) if enc.ids == [i, i])
        if not stable:
            raise BenchError(f"tokenizer {self.name}: no token re-encodes as itself")
        return stable

    def word(self, token_id: int) -> str:
        """The surface form of one token id (used to build prompts of exact length)."""
        return str(self._backend.id_to_token(token_id))


def _word_level(vocab_size: int) -> HfTokenizer:
    vocab = {UNKNOWN: 0} | {f"t{i}": i for i in range(1, vocab_size)}
    backend = HfTokenizer(WordLevel(vocab=vocab, unk_token=UNKNOWN))
    backend.pre_tokenizer = WhitespaceSplit()
    return backend


@functools.cache
def default_tokenizer(vocab_size: int = DEFAULT_VOCAB_SIZE) -> Tokenizer:
    """The built-in word-level tokenizer (built once per process, ~50 ms)."""
    return Tokenizer(_word_level(vocab_size), name=f"inferx-wordlevel-{vocab_size}")


def load_tokenizer(path: Path | None) -> Tokenizer:
    """A tokenizer from a local ``tokenizer.json`` file or folder, else the default one.

    Raises BenchError naming the path when the file cannot be read.
    """
    if path is None:
        return default_tokenizer()
    file = path / "tokenizer.json" if path.is_dir() else path
    try:
        return Tokenizer(HfTokenizer.from_file(str(file)), name=str(file))
    except Exception as err:  # tokenizers raises its own untyped Exception subclass
        raise BenchError(
            f"{file}: cannot load tokenizer ({err}); give a tokenizer.json or omit the path"
        ) from err
