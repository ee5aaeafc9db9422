"""ModelShape: what a model's ``config.json`` says about the work and the bytes of one token.

Only the shape matters to the cost model, never the weights::

    per layer, per token (weights it passes through)
      attention   q: hidden x (heads * head_dim)   k, v: hidden x (kv_heads * head_dim) each
                  o: (heads * head_dim) x hidden
      MLP         gated (SwiGLU: Llama, Qwen2): 3 x hidden x intermediate
                  plain (ReLU: OPT):           2 x hidden x ffn_dim
    LM head       hidden x vocab (read every step; computed once per sequence that samples)
    KV per token  layers x 2 (K and V) x kv_heads x head_dim x bytes

Biases and norms (well under 0.1% of the weights) are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPPORTED = {"llama": "gated", "qwen2": "gated", "mistral": "gated", "opt": "plain"}
FFN_FIELD = {"gated": "intermediate_size", "plain": "ffn_dim"}


@dataclass(frozen=True)
class ModelShape:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int  # intermediate_size (gated) or ffn_dim (plain)
    mlp: str  # "gated" | "plain"
    vocab: int
    tied_embeddings: bool
    max_context: int

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str) -> "ModelShape":
        """A shape from a Hugging Face ``config.json`` dict; ValueError naming the first missing or bad field."""
        if not isinstance(config, dict):
            raise ValueError(f"The config of {name!r} must be a JSON object, got {type(config).__name__}.")
        kind = config.get("model_type")
        if kind not in SUPPORTED:
            raise ValueError(
                f"The config of {name!r} has model_type {kind!r}; the cost model knows {', '.join(SUPPORTED)}."
            )
        mlp = SUPPORTED[kind]

        def need(field: str) -> int:
            value = config.get(field)
            if value is None:
                raise ValueError(
                    f"The config of {name!r} lacks {field!r}, which the cost model needs; add it "
                    "(see the model's config.json on its Hugging Face page)."
                )
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"The config of {name!r} has {field}={value!r}; it must be a positive whole number.")
            return value

        hidden, heads = need("hidden_size"), need("num_attention_heads")
        # Hugging Face's own rule (LlamaConfig): no num_key_value_heads means one KV head per query head.
        kv_heads = need("num_key_value_heads") if config.get("num_key_value_heads") is not None else heads
        head_dim = need("head_dim") if config.get("head_dim") is not None else hidden // heads
        if heads % kv_heads:
            raise ValueError(
                f"The config of {name!r} has {heads} attention heads, not a multiple of its {kv_heads} KV heads."
            )
        return cls(
            name=name,
            layers=need("num_hidden_layers"),
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            ffn=need(FFN_FIELD[mlp]),
            mlp=mlp,
            vocab=need("vocab_size"),
            tied_embeddings=bool(config.get("tie_word_embeddings", mlp == "plain")),
            max_context=need("max_position_embeddings"),
        )

    @classmethod
    def from_file(cls, path: Path, name: str) -> "ModelShape":
        try:
            config = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"Cannot read the config of {name!r} at {path}: {e}.") from None
        return cls.from_config(config, name)

    @property
    def attention_params(self) -> int:
        q = self.heads * self.head_dim
        return self.hidden * q * 2 + self.hidden * self.kv_heads * self.head_dim * 2  # q, o; k, v

    @property
    def mlp_params(self) -> int:
        return (3 if self.mlp == "gated" else 2) * self.hidden * self.ffn

    @property
    def layer_params(self) -> int:
        """Weights every token passes through in the decoder layers (no embedding, no LM head)."""
        return self.layers * (self.attention_params + self.mlp_params)

    @property
    def lm_head_params(self) -> int:
        return self.hidden * self.vocab

    @property
    def total_params(self) -> int:
        """Weights stored: layers, embedding, and the LM head unless tied to the embedding."""
        return self.layer_params + self.lm_head_params * (1 if self.tied_embeddings else 2)

    def kv_bytes_per_token(self, kv_bytes: int) -> int:
        return self.layers * 2 * self.kv_heads * self.head_dim * kv_bytes
