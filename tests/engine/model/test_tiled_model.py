"""The model's fast CPU path keeps what greedy identity rests on: token rows padded to tiles once a step
(``tiled_linear``), q/k/v in one GEMM and each GEMM operand made once (``CausalLM.prepare_weights``) give a row
the same bits as ``row_stable_linear`` does, alone or in any batch; the checkpoint's parameters keep their names
and values."""

from __future__ import annotations

import torch

from pykv import EngineConfig, LLMEngine, SamplingParams, default_model_path, load_model
from pykv.engine.model.row_stable_linear import ROWS_PER_TILE, RowStableLinear, row_stable_linear, tiled_linear


@torch.inference_mode()
def test_tiled_linear_gives_each_row_the_bits_of_row_stable_linear_whatever_the_padding_holds():
    torch.manual_seed(0)
    layer = RowStableLinear(256, 704, bias=False)
    layer.keep_transposed()
    assert layer.weight_t is not None
    rows = torch.randn(2 * ROWS_PER_TILE + 3, 256)
    expected = row_stable_linear(rows, layer.weight, None, layer.weight_t)
    padded = torch.full((3 * ROWS_PER_TILE, 256), 1e30)  # padding rows hold anything
    padded[: len(rows)] = rows
    assert torch.equal(tiled_linear(padded, layer.weight_t)[: len(rows)], expected)
    assert torch.equal(layer(rows), expected)  # the layer's own forward takes the same path
    assert torch.allclose(expected, rows @ layer.weight.T, rtol=1e-5, atol=1e-4)  # and it is the product


@torch.inference_mode()
def test_kept_operand_is_the_weight_and_a_row_keeps_its_bits_in_any_batch():
    torch.manual_seed(1)
    layer = RowStableLinear(96, 40, bias=True)
    before = layer.weight.detach().clone()
    layer.keep_transposed()
    assert torch.equal(layer.weight, before) and layer.weight_t is not None
    assert layer.weight_t.is_contiguous() and layer.weight.data_ptr() == layer.weight_t.data_ptr()  # one copy
    rows = torch.randn(ROWS_PER_TILE + 5, 96)
    alone = [layer(rows[i : i + 1]) for i in range(len(rows))]
    for start, batch in ((0, 3), (2, ROWS_PER_TILE + 1), (1, len(rows) - 1)):
        got = layer(rows[start : start + batch])
        assert all(torch.equal(got[i : i + 1], alone[start + i]) for i in range(batch))


def test_prepared_weights_keep_the_checkpoint_names_and_values():
    from safetensors.torch import load_file

    checkpoint = load_file(default_model_path() / "model.safetensors")  # the tensors as shipped, never prepared
    loaded = load_model("tiny")
    state = loaded.model.state_dict()
    assert {f"model.{k}" for k in state} - set(checkpoint) == {"model.lm_head.weight"}  # tied to the embedding
    assert all(torch.equal(state[k.removeprefix("model.")], v) for k, v in checkpoint.items())
    loaded.model.prepare_weights()  # again: idempotent on values
    assert all(torch.equal(loaded.model.state_dict()[k], v) for k, v in state.items())
    attn = loaded.model.layers[0].self_attn
    assert attn.qkv_weight is not None and attn.qkv_weight.shape == (256, 256 + 64 + 64)
    assert attn.k_proj.weight.data_ptr() == attn.qkv_weight[:, 256:].data_ptr()  # a view: memory held once


def test_a_request_decodes_the_same_tokens_alone_and_in_a_crowd():
    params = SamplingParams(max_tokens=12, temperature=0.0)
    prompts = ["def fib(n):", "import os\n", "class Node:", "for i in range(", "# Copyright", "    return self."]
    alone = [
        LLMEngine(EngineConfig(num_gpu_blocks=32, attention_backend="torch")).generate([p], params)[0]
        for p in prompts[:2]
    ]
    crowd = LLMEngine(EngineConfig(num_gpu_blocks=64, attention_backend="torch")).generate(prompts, params)
    assert [o.output_token_ids for o in crowd[:2]] == [o.output_token_ids for o in alone]
