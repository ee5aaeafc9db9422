"""A Llama-family decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU) that reads and writes
pykv's paged KV cache. Qwen2 is the same network with biases on q/k/v."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

from pykv.engine.model.attention import AttentionBackend, AttentionMetadata, paged_attention
from pykv.engine.model.row_stable_linear import RowStableLinear
from pykv_kernels import launch_record


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    attention_bias: bool  # Qwen2: True


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32, as HF does, then scale in the model dtype.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


class Rotary(nn.Module):
    """RoPE in HF's "rotate half" layout: dims [0, d/2) pair with [d/2, d)."""

    cos: torch.Tensor  # (max_positions, head_dim) buffers, registered in __init__
    sin: torch.Tensor

    def __init__(self, head_dim: int, theta: float, max_positions: int) -> None:
        super().__init__()
        # On the CPU, even inside the loader's meta-device block: a meta tensor's arithmetic runs torch's Python
        # reference ops, whose first call imports torch._dynamo (~7 s on a 2-core machine).
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device="cpu").float() / head_dim))
        positions = torch.arange(max_positions, device="cpu").float()
        freqs = torch.outer(positions, inv_freq)  # (max_positions, head_dim / 2)
        emb = torch.cat([freqs, freqs], dim=-1)  # (max_positions, head_dim)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x: (num_tokens, heads, head_dim); positions: (num_tokens,)
        cos = self.cos[positions].unsqueeze(1).to(x.dtype)  # (num_tokens, 1, head_dim)
        sin = self.sin[positions].unsqueeze(1).to(x.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.q_proj = RowStableLinear(cfg.hidden_size, cfg.num_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.k_proj = RowStableLinear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.v_proj = RowStableLinear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.o_proj = RowStableLinear(cfg.num_heads * cfg.head_dim, cfg.hidden_size, bias=False)
        self.scale = cfg.head_dim**-0.5

    def forward(self, x, positions, rotary, kv_cache, meta: AttentionMetadata, backend: AttentionBackend):
        n = x.shape[0]
        q = rotary(self.q_proj(x).view(n, self.num_heads, self.head_dim), positions)  # (n, heads, head_dim)
        k = rotary(self.k_proj(x).view(n, self.num_kv_heads, self.head_dim), positions)  # (n, kv_heads, head_dim)
        v = self.v_proj(x).view(n, self.num_kv_heads, self.head_dim)
        out = paged_attention(backend, q, k, v, kv_cache[0], kv_cache[1], meta, self.scale)
        return self.o_proj(out.reshape(n, self.num_heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = RowStableLinear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = RowStableLinear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = RowStableLinear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, positions, rotary, kv_cache, meta, backend):
        x = x + self.self_attn(self.input_layernorm(x), positions, rotary, kv_cache, meta, backend)
        return x + self.mlp(self.post_attention_layernorm(x))


class CausalLM(nn.Module):
    """Parameter names match Hugging Face's ``LlamaForCausalLM`` / ``Qwen2ForCausalLM``, so a
    checkpoint's state dict loads as it is."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        # An empty table (the checkpoint fills it): a random init of a meta tensor imports torch._dynamo too.
        self.embed_tokens = nn.Embedding(
            cfg.vocab_size, cfg.hidden_size, _weight=torch.empty(cfg.vocab_size, cfg.hidden_size)
        )
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = RowStableLinear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.rotary = Rotary(cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings)

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,  # (num_tokens,)
        positions: torch.Tensor,  # (num_tokens,)
        kv_caches: torch.Tensor,  # (num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim)
        meta: AttentionMetadata,
        backend: AttentionBackend,
        logits_indices: torch.Tensor,  # (num_sampled,) rows whose next-token logits are wanted
    ) -> torch.Tensor:
        x = self.embed_tokens(input_ids)  # (num_tokens, hidden)
        for i, (layer, kv_cache) in enumerate(zip(self.layers, kv_caches)):
            # every layer launches the same kernels over the same tables: a recorded step keeps the first layer's
            # launches only, so the others run without the trace: 2-5% of an interpreted storm step (120 steps, CPU)
            with launch_record.paused() if i else contextlib.nullcontext():
                x = layer(x, positions, self.rotary, kv_cache, meta, backend.for_layer(i))
        x = self.norm(x[logits_indices])  # (num_sampled, hidden)
        return self.lm_head(x).float()  # (num_sampled, vocab)
