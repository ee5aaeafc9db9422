"""A Llama-family decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU) that reads and writes
pykv's paged KV cache. Qwen2 is the same network with biases on q/k/v."""

from __future__ import annotations

import contextlib
import typing
from dataclasses import dataclass

import torch
from torch import nn

from pykv.engine.model.attention import AttentionBackend, AttentionMetadata, paged_attention
from pykv.engine.model.row_stable_linear import RowStableLinear, padded_rows, tiled_linear, transposed
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

    def tables(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin at ``positions`` (num_tokens,), each (num_tokens, 1, head_dim): read once a step, used by
        every layer."""
        return self.cos[positions].unsqueeze(1).to(dtype), self.sin[positions].unsqueeze(1).to(dtype)

    @staticmethod
    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        # x: (num_tokens, heads, head_dim); cos, sin: (num_tokens, 1, head_dim)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin


class Attention(nn.Module):
    """q, k and v come out of one GEMM over the three weights stacked (``fuse_qkv``: the checkpoint's ``q_proj``,
    ``k_proj`` and ``v_proj`` become views of it, so their names stay and memory holds one copy), one call instead
    of three; it is still a fixed-tile GEMM, so a row's result does not depend on the batch
    (tests/engine/model/test_tiled_model.py). q and k are rotated together, as one (tokens, heads + kv_heads,
    head_dim) tensor."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.q_proj = RowStableLinear(cfg.hidden_size, cfg.num_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.k_proj = RowStableLinear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.v_proj = RowStableLinear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.o_proj = RowStableLinear(cfg.num_heads * cfg.head_dim, cfg.hidden_size, bias=False)
        self.scale = cfg.head_dim**-0.5
        self.qkv_weight: torch.Tensor | None = None  # (hidden, q + k + v); set once by fuse_qkv (the loader)
        self.qkv_bias: torch.Tensor | None = None

    def fuse_qkv(self) -> None:
        """Stack q/k/v weights (and biases) into one (hidden, q + k + v features) GEMM operand; the three
        projections' parameters become its views. The output projection keeps its own (in, out) operand."""
        projections = (self.q_proj, self.k_proj, self.v_proj)
        with torch.no_grad():
            self.qkv_weight = transposed(torch.cat([p.weight for p in projections]))  # (hidden, q + k + v)
            self.qkv_bias = None if self.q_proj.bias is None else torch.cat([p.bias for p in projections])
            start = 0
            for p in projections:
                end = start + p.out_features
                p.keep_transposed(self.qkv_weight[:, start:end])
                if self.qkv_bias is not None:
                    p.bias = nn.Parameter(self.qkv_bias[start:end], requires_grad=False)
                start = end
            self.o_proj.keep_transposed()

    def forward(self, x, num_tokens, cos, sin, kv_cache, meta: AttentionMetadata, backend: AttentionBackend):
        # x: (rows, hidden), the first num_tokens real, the rest tile padding (rows == num_tokens off the CPU)
        assert self.qkv_weight is not None, "CausalLM.prepare_weights() runs after the weights load (the loader)"
        rows, n = x.shape[0], num_tokens
        heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_dim
        qkv = tiled_linear(x, self.qkv_weight, self.qkv_bias)  # (rows, (heads + 2 * kv_heads) * dim)
        qk = Rotary.rotate(qkv[:, : (heads + kv_heads) * dim].view(rows, heads + kv_heads, dim), cos, sin)
        v = qkv[:n, (heads + kv_heads) * dim :].view(n, kv_heads, dim)
        out = paged_attention(backend, qk[:n, :heads], qk[:n, heads:], v, kv_cache[0], kv_cache[1], meta, self.scale)
        out = out.reshape(n, heads * dim)  # (num_tokens, heads * dim)
        if rows != n or not out.is_contiguous():
            padded = out.new_zeros(rows, heads * dim)  # tiles of their own, as tiled_linear wants
            padded[:n] = out
            out = padded
        return tiled_linear(out, self.o_proj.operand)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = RowStableLinear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = RowStableLinear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = RowStableLinear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (rows, hidden), whole tiles on a CPU (tiled_linear)
        gate, up = tiled_linear(x, self.gate_proj.operand), tiled_linear(x, self.up_proj.operand)
        return tiled_linear(nn.functional.silu(gate) * up, self.down_proj.operand)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, num_tokens, cos, sin, kv_cache, meta, backend):
        x = x + self.self_attn(self.input_layernorm(x), num_tokens, cos, sin, kv_cache, meta, backend)
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

    def prepare_weights(self) -> None:
        """After the checkpoint's weights are in place: every projection's GEMM operand made once
        (``RowStableLinear.keep_transposed``), each layer's q/k/v as one (``Attention.fuse_qkv``). A tied
        lm_head gets an operand of its own (the embedding table keeps its rows)."""
        for layer in typing.cast(list[DecoderLayer], self.layers):
            layer.self_attn.fuse_qkv()
            for proj in (layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj):
                proj.keep_transposed()
        typing.cast(RowStableLinear, self.lm_head).keep_transposed()

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
        # Token rows padded to whole tiles once (row_stable_linear.tiled_linear): every projection takes them as
        # they are. Padding rows run token 0 at position 0; nothing reads them (attention and the KV cache see the
        # first num_tokens rows only).
        n = len(input_ids)
        rows = padded_rows(n, input_ids.device)
        if rows != n:
            input_ids = nn.functional.pad(input_ids, (0, rows - n))
            positions = nn.functional.pad(positions, (0, rows - n))
        x = self.embed_tokens(input_ids)  # (rows, hidden)
        cos, sin = self.rotary.tables(positions, x.dtype)  # (rows, 1, head_dim) each, for every layer
        for i, (layer, kv_cache) in enumerate(zip(self.layers, kv_caches)):
            # every layer launches the same kernels over the same tables: a recorded step keeps the first layer's
            # launches only, so the others run without the trace: 2-5% of an interpreted storm step (120 steps, CPU)
            with launch_record.paused() if i else contextlib.nullcontext():
                x = layer(x, n, cos, sin, kv_cache, meta, backend.for_layer(i))
        x = self.norm(x[logits_indices])  # (num_sampled, hidden)
        return self.lm_head(x).float()  # (num_sampled, vocab)
