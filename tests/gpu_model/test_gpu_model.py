"""The GPU cost model on hand-computed cases: parameter and KV counts from config.json, one layer's
FLOPs and bytes, the roofline switch point, the tensor-parallel term, copy times, real step reports,
the pool in GiB, and bad input. Every figure is modelled: deterministic and independent of the machine."""

from __future__ import annotations

import dataclasses
import math

import pytest

from pykv.border.pcie import LINKS, PCIE_COPY_OVERHEAD_US, PCIE_GBPS
from pykv.border.step_report import PreemptionView, ScheduledChunk, StepReport
from pykv.gpu_model import CALIBRATION, GPUS, MODELS, Chunk, ModelShape, estimate
from pykv.gpu_model.estimate import Estimate
from pykv.gpu_model.gpus import detect_gpu
from pykv.gpu_model.models import find_model
from pykv.gpu_model.pool import blocks_for_gib, gib_for_blocks

IDEAL = dataclasses.replace(
    CALIBRATION,
    gemm_efficiency_16bit=1.0,
    gemm_half_tokens=0.0,
    attention_efficiency=1.0,
    memory_efficiency=1.0,
    step_overhead_us=0.0,
    layer_overhead_us=0.0,
)
ONE_LAYER = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 1,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


@pytest.mark.parametrize(
    "name, billions, kv_bytes",
    [
        ("llama-3.1-8b", 8.03, 131072),
        ("llama-2-7b", 6.74, 524288),
        ("qwen2.5-7b", 7.62, 57344),
        ("qwen2.5-14b", 14.77, 196608),  # a model real logs name (issue 46): 48 layers x 8 KV heads x 128
        ("qwen2.5-0.5b", 0.494, 12288),
        ("llama-2-13b", 13.0, 819200),
        ("llama-3.1-70b", 70.6, 327680),
        ("opt-13b", 12.84, 819200),
    ],
)
def test_parameters_and_kv_bytes_come_from_the_shipped_config(name, billions, kv_bytes):
    shape = find_model(name)
    assert shape.total_params / 1e9 == pytest.approx(billions, rel=0.003)  # the model cards' published sizes
    assert shape.kv_bytes_per_token(2) == kv_bytes  # layers x 2 x kv_heads x head_dim x 2 bytes
    assert estimate("H100-SXM", name).kv_bytes_per_token == kv_bytes


def test_one_layer_flops_and_bytes_by_hand():
    est = Estimate(GPUS["H100-SXM"], ModelShape.from_config(ONE_LAYER, "one layer"), "bf16", calibration=IDEAL)
    layer = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336  # q, o; k, v; gate, up, down
    assert est.shape.layer_params == layer == 218_103_808
    head = 4096 * 128256
    compute, memory = est.linear_terms_ms(100, 1)
    assert compute == pytest.approx((2 * layer * 100 + 2 * head) / 989e12 * 1e3)
    assert memory == pytest.approx((layer + head) * 2 / 3350e9 * 1e3)
    # attention of a 10-token chunk after 30 cached: 10 x 30 + 10 x 11 / 2 = 355 query-key pairs
    a_compute, a_memory = est.attention_terms_ms(Chunk(30, 10))
    assert a_compute == pytest.approx(4 * 32 * 128 * 355 / 989e12 * 1e3)
    assert a_memory == pytest.approx(2 * 8 * 128 * 2 * 40 / 3350e9 * 1e3)


def test_roofline_switch_point_and_the_phase_that_dominates():
    est = Estimate(GPUS["H100-SXM"], find_model("llama-3.1-8b"), "bf16", calibration=IDEAL)
    s = est.shape
    by_hand = (s.layer_params + s.lm_head_params) * 2 / 3350e9 * 989e12 / (2 * s.layer_params)
    assert est.linear_switch_tokens == pytest.approx(by_hand)  # ~338 tokens: H100's 295 FLOP/byte ridge
    below, above = int(by_hand * 0.8), int(by_hand * 1.25)
    c, m = est.linear_terms_ms(below, 1)  # one sequence: its LM head row too
    assert c < m and est.forward_cost([Chunk(0, below)]).linear == pytest.approx(m)  # memory-bound
    c, m = est.linear_terms_ms(above, 1)
    assert c > m and est.forward_cost([Chunk(0, above)]).linear == pytest.approx(c)  # compute-bound
    # the shipped calibration moves it by M0: a GEMM of few rows leaves SMs idle
    real = estimate("H100-SXM", "llama-3.1-8b")
    assert 0 < real.linear_switch_tokens < by_hand


def test_decode_is_flat_in_batch_until_compute_catches_up():
    est = estimate("H100-SXM", "llama-3.1-8b")
    assert est.decode_step_ms(8, 128) == pytest.approx(est.decode_step_ms(1, 128), rel=0.02)
    assert est.decode_step_ms(512, 128) > 2 * est.decode_step_ms(1, 128)  # past the switch point: compute-bound
    assert est.decode_step_ms(32, 8192) > est.decode_step_ms(32, 128)  # KV reads grow with the context


def test_tensor_parallel_term_by_hand():
    est = estimate("H100-SXM", "llama-3.1-70b", tp=4)
    c = CALIBRATION
    wire = 2 * 3 / 4 * 128 * 8192 * 2
    each = c.allreduce_latency_us * 1e-6 + wire / (450e9 * c.interconnect_efficiency)
    assert est.allreduce_ms(128) == pytest.approx(2 * 80 * each * 1e3)
    assert estimate("H100-SXM", "llama-3.1-70b", tp=1).allreduce_ms(128) == 0.0
    assert est.weight_bytes_per_gpu == pytest.approx(find_model("llama-3.1-70b").total_params * 2 / 4)
    assert est.kv_bytes_per_token_per_gpu * 4 == est.kv_bytes_per_token  # 8 KV heads over 4 GPUs
    assert estimate("H100-SXM", "qwen2.5-7b", tp=28 // 7).kv_heads_per_gpu == 1  # 4 KV heads over 4 GPUs


def test_copy_times_by_hand():
    est = estimate("H100-SXM", "llama-3.1-8b")
    one_gib = 2**30
    assert est.copy_ms(one_gib, "h2d") == pytest.approx((one_gib / 35e9 + PCIE_COPY_OVERHEAD_US * 1e-6) * 1e3)
    assert est.copy_ms(one_gib, "d2h") == pytest.approx((one_gib / 53e9 + PCIE_COPY_OVERHEAD_US * 1e-6) * 1e3)
    assert est.copy_ms(one_gib, "h2d", pinned=False) > 8 * est.copy_ms(one_gib, "h2d")  # pageable: 1.4 vs 12.6
    assert est.copy_ms(0, "h2d", copies=1000) == pytest.approx(1000 * PCIE_COPY_OVERHEAD_US * 1e-3)
    # 256 tokens of OPT-13B (209.7 MB) out and in, one copy per block, layer and K/V at block size 1
    opt = estimate("A100-40GB-SXM", "opt-13b", "fp16")
    assert 256 * opt.kv_bytes_per_token == 209_715_200
    per_block = opt.kv_copy_ms(256, "d2h", 256, per_block=True)
    assert per_block == pytest.approx((209_715_200 / 25.5e9 + 256 * 40 * 2 * 3e-6) * 1e3)
    # the engine's one-number link is the round trip of the same table
    assert 2 / PCIE_GBPS["gen5"] == pytest.approx(1 / LINKS["gen5"].h2d_gbps + 1 / LINKS["gen5"].d2h_gbps, rel=1e-3)


def _report(chunks, preempted=(), swapped_in=()) -> StepReport:
    return StepReport(
        step=1,
        scheduled=[c.request_id for c in chunks],
        chunks=list(chunks),
        preempted=list(preempted),
        swapped_in=list(swapped_in),
        finished=[],
        num_batched_tokens=sum(c.num_new_tokens for c in chunks),
        forward_time_s=0.01,
        step_time_s=0.02,
        device="cpu",
    )


def test_a_real_step_report_is_priced_with_its_chunks_and_copies():
    est = estimate("H100-SXM", "llama-3.1-8b")
    decodes = [ScheduledChunk(str(i), 100, 1, False) for i in range(4)]
    assert est.step_ms(_report(decodes)) == pytest.approx(est.decode_step_ms(4, 100))
    swap = PreemptionView(
        step=1, request_id="9", mode="swap", num_blocks=4, num_tokens=60, num_bytes=0, device="cpu", swap_copies=1
    )
    with_swap = est.step_ms(_report(decodes, preempted=[swap]), block_size=16)
    assert with_swap - est.decode_step_ms(4, 100) == pytest.approx(est.kv_copy_ms(64, "d2h"))  # whole blocks
    cost = est.step_cost(_report(decodes + [ScheduledChunk("p", 0, 512, True)]))
    assert cost.total == pytest.approx(cost.linear + cost.attention + cost.overhead)


def test_modelled_figures_are_deterministic_and_machine_independent():
    first = [estimate("L4", "qwen2.5-0.5b").prefill_ms(n) for n in (1, 100, 1000)]
    again = [estimate("l4", "QWEN2.5-0.5B").prefill_ms(n) for n in (1, 100, 1000)]  # names are case-insensitive
    assert first == again
    est = estimate()  # H100-SXM + Llama-3.1-8B, bf16, TP1
    # a pure function of the catalogue and the calibration: this value holds on any machine
    layers, c = est.shape.layers, CALIBRATION
    compute, memory = est.linear_terms_ms(2048, 1)
    attention = sum(max(est.attention_terms_ms(Chunk(0, 2048))) for _ in range(1))
    assert est.prefill_ms(2048) == pytest.approx(
        max(compute, memory) + attention + layers * c.layer_overhead_us / 1e3 + c.step_overhead_us / 1e3
    )
    assert 20 < est.prefill_ms(2048) < 80 and 5 < est.decode_step_ms(1, 128) < 15


def test_the_pool_in_gib_of_the_target():
    est = estimate("H100-SXM", "llama-3.1-8b")  # 128 KiB per token: 2 MiB per 16-token block
    assert blocks_for_gib(est, 1, 16) == 512 and blocks_for_gib(est, 8, 16) == 4096
    assert gib_for_blocks(est, 512, 16) == 1.0
    with pytest.raises(
        ValueError,
        match="less than one block of Llama-3.1-8B KV on H100-SXM at block size 16 "
        r"\(2 MiB\); give at least",
    ):
        blocks_for_gib(est, 0.001, 16)
    with pytest.raises(ValueError, match="positive number of GiB"):
        blocks_for_gib(est, -1, 16)


def test_bad_input_is_one_clear_message():
    with pytest.raises(ValueError, match="Unknown GPU 'B200'; choose one of: A100-80GB-SXM, .*H100-SXM, H200, L4"):
        estimate(gpu="B200")
    with pytest.raises(ValueError, match="Unknown model 'gpt-5'; choose one of: llama-3.1-8b, qwen2.5-7b"):
        estimate(model="gpt-5")
    with pytest.raises(ValueError, match="A100-80GB-SXM has no fp8 tensor cores; choose one of: bf16, fp16, fp32"):
        estimate("A100-80GB-SXM", dtype="fp8")
    with pytest.raises(ValueError, match="which 3 GPUs cannot split evenly"):
        estimate(tp=3)
    with pytest.raises(ValueError, match="tokens must be a whole number of at least 1"):
        estimate().prefill_ms(0)
    lacking = {k: v for k, v in ONE_LAYER.items() if k != "intermediate_size"}
    with pytest.raises(ValueError, match="The config of 'mine' lacks 'intermediate_size', which the cost model needs"):
        ModelShape.from_config(lacking, "mine")
    with pytest.raises(ValueError, match="model_type 'mamba'"):
        ModelShape.from_config(ONE_LAYER | {"model_type": "mamba"}, "mine")
    no_kv_heads = {k: v for k, v in ONE_LAYER.items() if k != "num_key_value_heads"}
    assert ModelShape.from_config(no_kv_heads, "mha").kv_heads == 32  # Hugging Face's rule: one per query head
    assert set(MODELS) >= {"llama-3.1-8b", "qwen2.5-7b", "llama-2-7b", "llama-2-13b", "llama-3.1-70b", "qwen2.5-0.5b"}
    assert set(GPUS) >= {"A100-80GB-SXM", "H100-SXM", "H200", "L4", "RTX-4090"}


@pytest.mark.parametrize(
    "device, name",
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB-SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB-SXM"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA H200", "H200"),
        ("Tesla T4", None),
    ],
)
def test_a_cuda_device_name_finds_its_catalogue_entry(device, name):
    found = detect_gpu(device)
    assert (found.name if found else None) == name


def test_every_spec_figure_carries_its_source():
    for gpu in GPUS.values():
        assert gpu.source and all(v > 0 for v in gpu.tflops.values()) and math.isfinite(gpu.memory_gbps)
    assert all(link.source for link in LINKS.values())
