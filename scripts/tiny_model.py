"""Build a tiny, random-weight Qwen3 model with its own BPE tokenizer (no hub, ~1 MB).

Run with the vLLM venv's python (it has torch, transformers, tokenizers, yaml):

    "$(scripts/vllm-env)" scripts/tiny_model.py DEST [--family tiny-qwen3]

The shape (layers, hidden size, attention heads) is the family's entry in
catalog/models.yaml, so the leaderboard's model data and the served model agree.

Deterministic for a given corpus and seed: the tokenizer is trained on text shipped in
this repository and the weights come from a seeded generator. ``initializer_range`` is
0.5 because the default 0.02 makes greedy decoding repeat one token, which would make
every speculative draft accepted and every benchmark meaningless.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "catalog" / "models.yaml"
# Text that changes rarely: the model (and every cache keyed on this script) stays put.
CORPUS = (ROOT / "inferx_pipeline" / "bench" / "data" / "agentic-coding-small.jsonl",)
VOCAB_SIZE = 2048
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
# Qwen3's chat template shape, reduced: roles, an assistant prompt, thinking switched by
# `enable_thinking` (the kwarg the golden curves and recipes pass).
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)


def train_tokenizer(dest: Path) -> None:
    """A byte-level BPE tokenizer over the repository corpus, saved as tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    lines = [line for path in CORPUS for line in path.read_text(encoding="utf-8").splitlines()]
    backend.train_from_iterator(lines, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(dest)


def architecture(family: str) -> dict[str, int]:
    """The family's shape from catalog/models.yaml (a GQA entry)."""
    import yaml

    entry = yaml.safe_load(MODELS.read_text(encoding="utf-8"))["models"][family]
    attention = entry["attention"]
    return {
        "hidden_size": entry["hidden_size"],
        "intermediate_size": 2 * entry["hidden_size"],
        "num_hidden_layers": entry["layers"],
        "num_attention_heads": attention["heads"],
        "num_key_value_heads": attention["kv_heads"],
        "head_dim": attention["head_dim"],
    }


def save_model(dest: Path, family: str, seed: int) -> None:
    """Random weights for the family's Qwen3 shape sized to the tokenizer, in safetensors."""
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(dest)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        **architecture(family),
        max_position_embeddings=8192,
        initializer_range=0.5,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(dest, safe_serialization=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="directory to write (created)")
    parser.add_argument("--family", default="tiny-qwen3", help="catalog/models.yaml key")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    train_tokenizer(args.dest)
    save_model(args.dest, args.family, args.seed)
    print(json.dumps({"path": str(args.dest)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
