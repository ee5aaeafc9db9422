"""Load a local Hugging Face Llama- or Qwen2-family checkpoint folder into pykv's own model.

A folder needs ``config.json``, ``model.safetensors`` (or sharded files with
``model.safetensors.index.json``) and ``tokenizer.json``. Nothing is ever downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from pykv.engine.model.model import CausalLM, ModelConfig, Rotary

SUPPORTED = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def default_model_path() -> Path:
    """The shipped default model: a normal Hugging Face checkpoint folder."""
    return Path(__file__).resolve().parents[2] / "assets" / "tiny"  # pykv/assets/tiny


@dataclass
class LoadedModel:
    """Weights and tokenizer of one checkpoint; read-only once loaded, so engines may share it."""

    path: Path
    model: CausalLM
    tokenizer: Tokenizer
    config: ModelConfig
    eos_token_ids: frozenset[int]
    model_type: str

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)


def resolve_model_path(model: str) -> Path:
    path = default_model_path() if model == "tiny" else Path(model).expanduser()
    if not path.is_dir():
        raise ValueError(
            f"model {model!r} is not a folder. Pass 'tiny' for the shipped model or the path of a local "
            "Hugging Face checkpoint folder (config.json + safetensors + tokenizer.json); nothing is downloaded."
        )
    return path


def parse_config(raw: dict, path: Path) -> ModelConfig:
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED:
        raise ValueError(
            f"{path}/config.json has model_type={model_type!r}; pykv runs Llama- and Qwen2-family models "
            f"({', '.join(SUPPORTED)}). Choose another checkpoint."
        )
    rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"{path}: rope scaling {rope_type!r} is not supported; pykv implements plain RoPE only.")
    if raw.get("mlp_bias") or raw.get("use_sliding_window"):
        raise ValueError(f"{path}: MLP biases and sliding-window attention are not supported by pykv's model.")
    if raw.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{path}: activation {raw.get('hidden_act')!r} is not supported; pykv's MLP is SwiGLU (silu).")
    heads = raw["num_attention_heads"]
    kv_heads = raw.get("num_key_value_heads") or heads
    if heads % kv_heads:
        raise ValueError(f"{path}: {heads} query heads cannot be grouped over {kv_heads} KV heads.")
    return ModelConfig(
        vocab_size=raw["vocab_size"],
        hidden_size=raw["hidden_size"],
        intermediate_size=raw["intermediate_size"],
        num_layers=raw["num_hidden_layers"],
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
        rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
        rope_theta=rope.get("rope_theta", raw.get("rope_theta", 10000.0)),
        max_position_embeddings=raw.get("max_position_embeddings", 2048),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        attention_bias=model_type == "qwen2" or bool(raw.get("attention_bias", False)),
    )


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    if single.exists():
        return load_file(single)
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        state: dict[str, torch.Tensor] = {}
        for shard in shards:
            state.update(load_file(path / shard))
        return state
    raise ValueError(f"{path} has no model.safetensors (or model.safetensors.index.json); pykv loads safetensors only.")


def load_model(model: str = "tiny", device: str = "cpu", dtype: str = "float32") -> LoadedModel:
    path = resolve_model_path(model)
    config_file, tokenizer_file = path / "config.json", path / "tokenizer.json"
    for needed in (config_file, tokenizer_file):
        if not needed.exists():
            raise ValueError(
                f"{path} has no {needed.name}; a checkpoint folder needs config.json, safetensors and tokenizer.json."
            )
    raw = json.loads(config_file.read_text())
    cfg = parse_config(raw, path)

    state = {k.removeprefix("model."): v for k, v in read_state_dict(path).items()}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    with torch.device("meta"):
        net = CausalLM(cfg)
    expected = {k for k in net.state_dict() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    missing, unexpected = expected - state.keys(), state.keys() - expected
    unexpected = {k for k in unexpected if not k.endswith("rotary_emb.inv_freq")}
    if missing or unexpected:
        raise ValueError(
            f"{path}: weights do not match a {raw['model_type']} model of this config "
            f"(missing: {sorted(missing)[:5]}, unexpected: {sorted(unexpected)[:5]})."
        )
    # The checkpoint's tensors replace the meta ones (assign): Module.to_empty would allocate through torch's
    # Python reference ops, whose first call imports torch._dynamo and sympy (loading the shipped model took
    # 2.2-2.6 s with them, 1.5 s without).
    net.load_state_dict({k: state[k].to(device) for k in expected}, strict=False, assign=True)
    if cfg.tie_word_embeddings:
        net.lm_head.weight = net.embed_tokens.weight
    net = net.to(dtype=DTYPES[dtype]).eval()
    net.rotary = Rotary(cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings).to(device)  # fp32 tables
    net.prepare_weights()

    eos = raw.get("eos_token_id")
    eos_ids = frozenset(eos if isinstance(eos, list) else [] if eos is None else [eos])
    return LoadedModel(path, net, Tokenizer.from_file(str(tokenizer_file)), cfg, eos_ids, raw["model_type"])
