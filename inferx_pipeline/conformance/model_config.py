"""A model's ``config.json`` built from its catalog entry: what an engine's validation reads.

SGLang's post-parse validation reads the model's ``config.json`` (architecture, context
length, heads, experts) to judge an argv; the check runs offline, so the file is built
from ``catalog/models.yaml``: the typed numbers under the names Hugging Face configs use,
then the entry's ``config_json`` (model_type, architectures and what else the numbers do
not give) over them. A multimodal checkpoint (``config_json`` has a ``text_config``) keeps
its language model's numbers under ``text_config``, as its real file does. Nothing here
is a weight or a tokenizer: only the shape an engine's argument checks look at.
"""

from __future__ import annotations

from pydantic import JsonValue

from inferx_pipeline.catalog import ModelArch
from inferx_pipeline.errors import CatalogError

TEXT_CONFIG = "text_config"


def _numbers(arch: ModelArch) -> dict[str, JsonValue]:
    attention = arch.attention
    numbers: dict[str, JsonValue] = {
        "hidden_size": arch.hidden_size,
        "num_hidden_layers": arch.layers,
        "num_attention_heads": attention.heads,
        # MLA keeps one latent per token; its configs name every head a KV head.
        "num_key_value_heads": attention.kv_heads or attention.heads,
    }
    if attention.head_dim is not None:
        numbers["head_dim"] = attention.head_dim
    if attention.kv_lora_rank is not None:
        numbers["kv_lora_rank"] = attention.kv_lora_rank
    if attention.rope_head_dim is not None:
        numbers["qk_rope_head_dim"] = attention.rope_head_dim
    if arch.max_context is not None:
        numbers["max_position_embeddings"] = arch.max_context
    if arch.moe is not None:
        # DeepSeek-style configs say n_routed_experts, Qwen-style num_experts: both given.
        numbers["n_routed_experts"] = numbers["num_experts"] = arch.moe.experts
        numbers["num_experts_per_tok"] = arch.moe.experts_per_token
        numbers["n_shared_experts"] = arch.moe.shared_experts
    return numbers


def model_config(arch: ModelArch) -> dict[str, JsonValue]:
    """``arch``'s config.json (see the module docstring); CatalogError without model_type."""
    given = arch.config_json
    if not isinstance(given.get("model_type"), str) or not given.get("architectures"):
        raise CatalogError(
            f"catalog/models.yaml: {arch.id}.config_json: got no model_type and "
            "architectures; expected the checkpoint's config.json values (an engine's "
            "argv check builds the model's config.json from them)"
        )
    nested = given.get(TEXT_CONFIG)
    if isinstance(nested, dict):
        return {**given, TEXT_CONFIG: {**_numbers(arch), **nested}}
    return {**_numbers(arch), **given}
