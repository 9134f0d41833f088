"""Build a tiny, random-weight model with its own BPE tokenizer (no hub, ~1 MB).

Run with the vLLM venv's python (it has torch, transformers, tokenizers, yaml):

    "$(scripts/vllm-env)" scripts/tiny_model.py DEST [--family tiny-qwen3]

Families (keys of catalog/models.yaml): ``tiny-qwen3`` (a Qwen3ForCausalLM), and
``tiny-mimo``: MiMo's layout, a Qwen2 body plus one multi-token-prediction layer
(``num_nextn_predict_layers: 1``, tensors ``model.mtp_layers.0.*``) that vLLM serves as
the draft of ``--speculative-config '{"method": "mtp"}'``; and ``tiny-qwen3-eagle3``, an
EAGLE3 draft head for ``tiny-qwen3`` (``{"method": "eagle3", "model": ...}``).

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
        "max_position_embeddings": entry["max_context"],
    }


def _common(dest: Path, family: str) -> dict[str, object]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(dest)
    return {
        "vocab_size": len(tokenizer),
        **architecture(family),
        "initializer_range": 0.5,
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "bos_token_id": None,
        "torch_dtype": "bfloat16",
    }


def save_qwen3(dest: Path, family: str) -> None:
    """Random weights for the family's Qwen3 shape sized to the tokenizer, in safetensors."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(**_common(dest, family), tie_word_embeddings=True)
    Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(dest, safe_serialization=True)


# One MiMo MTP layer: norms of the token embedding and of the previous hidden state, a
# projection of both back to the hidden size, a decoder block, a final norm.
MTP_NORMS = ("token_layernorm", "hidden_layernorm", "final_layernorm")


def save_mimo_mtp(dest: Path, family: str) -> None:
    """A Qwen2 body with one MTP layer (MiMo's checkpoint layout), in safetensors.

    The MTP block starts as a copy of decoder layer 0 (random like it), so its shapes are
    right by construction; its own norms and input projection are added beside it.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config

    config = Qwen2Config(**_common(dest, family), tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    tensors = {name: t.contiguous() for name, t in model.state_dict().items()}
    block = "model.layers.0."
    hidden = config.hidden_size
    for name in [n for n in tensors if n.startswith(block)]:
        tensors["model.mtp_layers.0." + name[len(block) :]] = tensors[name].clone()
    for norm in MTP_NORMS:
        tensors[f"model.mtp_layers.0.{norm}.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    projection = torch.randn(hidden, 2 * hidden) * config.initializer_range
    tensors["model.mtp_layers.0.input_proj.weight"] = projection.to(torch.bfloat16)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    # Saved as a Qwen3 config (same fields): transformers maps model type qwen2 to its own
    # Qwen2Tokenizer, which splits text unlike our tokenizer.json, so the engine would
    # count other prompt lengths than the client; vLLM picks the model by architecture.
    served = Qwen3Config(**config.to_diff_dict())
    served.architectures = ["MiMoForCausalLM"]
    served.num_nextn_predict_layers = 1
    served.save_pretrained(dest)


def save_eagle3_head(dest: Path, family: str) -> None:
    """An EAGLE3 draft head for tiny-qwen3 (vLLM's LlamaForCausalLMEagle3), in safetensors.

    One decoder layer (``midlayer``) whose attention reads the token embedding and the
    fused target state (2 x hidden), ``fc`` fusing the hidden states of both target
    layers (``eagle_aux_hidden_state_layer_ids: [0, 1]``: vLLM's default picks layers a
    2-layer target does not have), a final norm and its own head over the full vocabulary.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig

    common = _common(dest, family)
    config = LlamaConfig(**common, tie_word_embeddings=False)
    hidden, inter, vocab = config.hidden_size, config.intermediate_size, config.vocab_size
    heads, kv, head_dim = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    layers = [0, 1]
    shapes = {
        "midlayer.self_attn.q_proj.weight": (heads * head_dim, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": (kv * head_dim, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": (kv * head_dim, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "midlayer.mlp.gate_proj.weight": (inter, hidden),
        "midlayer.mlp.up_proj.weight": (inter, hidden),
        "midlayer.mlp.down_proj.weight": (hidden, inter),
        "fc.weight": (hidden, hidden * len(layers)),
        "lm_head.weight": (vocab, hidden),
        "embed_tokens.weight": (vocab, hidden),
    }
    scale = config.initializer_range / hidden**0.5
    tensors = {n: (torch.randn(s) * scale).to(torch.bfloat16) for n, s in shapes.items()}
    for norm in ("input_layernorm", "post_attention_layernorm", "hidden_norm"):
        tensors[f"midlayer.{norm}.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    tensors["norm.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    config.architectures = ["LlamaForCausalLMEagle3"]
    config.draft_vocab_size = vocab
    config.target_hidden_size = hidden
    config.eagle_config = {"eagle_aux_hidden_state_layer_ids": layers}
    config.save_pretrained(dest)


BUILDERS = {
    "tiny-qwen3": save_qwen3,
    "tiny-mimo": save_mimo_mtp,
    "tiny-qwen3-eagle3": save_eagle3_head,
}


def save_model(dest: Path, family: str, seed: int) -> None:
    """Random weights of the family's architecture, seeded."""
    import torch

    torch.manual_seed(seed)
    BUILDERS[family](dest, family)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="directory to write (created)")
    parser.add_argument("--family", default="tiny-qwen3", choices=sorted(BUILDERS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    train_tokenizer(args.dest)
    save_model(args.dest, args.family, args.seed)
    print(json.dumps({"path": str(args.dest)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
