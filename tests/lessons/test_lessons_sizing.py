"""KV sizing paths for lessons: ``kv.model.*`` (the engine's own model, checked against what the engine
allocates), ``kv.NAME.*`` (catalogue models on the course's GPU, modelled), ``pool.*.wasted_slots`` and
a side run's ``modelled_swap_s``."""

from __future__ import annotations

import textwrap

import pytest

from pykv.engine.kv.cache_engine import CacheEngine
from pykv.lessons import LessonError, parse_lesson, replay, resolve
from pykv.lessons.values.path_checks import Known
from pykv.lessons.values.paths import check_path
from pykv.lessons.values.sizing import UTILIZATIONS, catalogue_kv, model_name
from testkit.vllm_source import require_vllm_source

FRONT = """\
---
id: sizing
title: Sizing
summary: For the sizing tests.
seed: 0
config: {vllm_profile: "v0.6", num_gpu_blocks: 6, block_size: 4, max_num_seqs: 2, enable_chunked_prefill: false}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 16, ignore_eos: true}
    - {request_id: b, prompt: "class Stack:", max_tokens: 16, ignore_eos: true}
---
"""


@pytest.fixture(scope="module")
def states(tiny):
    body = textwrap.dedent("""\
        ## Admitted

        Narration.

        ```actions
        - step: 1
        ```

        ## Runs

        Narration.

        ```actions
        - run: {name: rc, config: {}}
        - run: {name: sw, config: {preemption_mode: swap, num_cpu_blocks: 8}}
        ```
        """)
    return replay(parse_lesson(FRONT + "\n" + body, "sizing.md"), tiny)


def test_the_engine_model_formula_is_what_the_engine_allocates(states, tiny):
    scope = states[0].scope
    kv = resolve("kv.model", scope)
    cfg = tiny.config
    assert kv.bytes_per_token == 2 * cfg.num_layers * cfg.num_kv_heads * cfg.head_dim * 4  # float32
    assert (kv.layers, kv.kv_heads, kv.head_dim, kv.dtype_bytes) == (cfg.num_layers, cfg.num_kv_heads, cfg.head_dim, 4)
    assert kv.engine_bytes_per_block == CacheEngine.bytes_per_block(cfg, 4, "float32") == kv.bytes_per_block
    assert kv.pool_bytes == 6 * kv.bytes_per_block and kv.pool_tokens == 6 * 4
    assert kv.bytes_per_max_context == cfg.max_position_embeddings * kv.bytes_per_token
    assert resolve("kv.model.bytes_per_token", scope) == 2048


def test_catalogue_models_read_their_shapes_and_price_the_pool_on_the_gpu():
    small, big = catalogue_kv("llama-3.1-8b", 16), catalogue_kv("llama-3.1-70b", 16)
    assert (small.layers, small.kv_heads, small.head_dim, small.bytes_per_token) == (32, 8, 128, 128 * 1024)
    assert (big.layers, big.kv_heads, big.head_dim, big.bytes_per_token) == (80, 8, 128, 320 * 1024)
    assert small.bytes_per_max_context > small.weight_bytes  # one 128k-token sequence outweighs the 8B's weights
    pools = [small.at_utilization[str(p)] for p in UTILIZATIONS]
    assert [p.num_gpu_blocks for p in pools] == sorted(p.num_gpu_blocks for p in pools)
    for p in pools:
        assert p.kv_bytes == int(small.gpu_memory_bytes * p.gpu_memory_utilization) - small.weight_bytes
        assert p.num_gpu_blocks == p.kv_bytes // small.bytes_per_block and p.tokens == p.num_gpu_blocks * 16
    assert all(p.num_gpu_blocks == 0 for p in big.at_utilization.values())  # 141 GB of weights, one 80 GB GPU


def test_a_dotted_catalogue_name_is_one_segment_of_the_path():
    assert model_name(["llama-3", "1-8b", "bytes_per_token"]) == ("llama-3.1-8b", ["bytes_per_token"])
    assert model_name(["model", "pool_tokens"]) == ("model", ["pool_tokens"])
    assert model_name(["gpt", "x"]) == ("", ["gpt", "x"])
    check_path("kv.llama-3.1-70b.at_utilization.95.headroom_bytes", Known())


@pytest.mark.parametrize(
    "path, words",
    [
        ("kv.gpt-5.bytes_per_token", "model 'gpt-5' is unknown"),
        ("kv.model", "incomplete"),
        ("kv.model.at_utilization", "field 'at_utilization' is unknown"),
        ("kv.llama-3.1-8b.pool_bytes", "field 'pool_bytes' is unknown"),
        ("kv.llama-3.1-8b.at_utilization.90.blocks", "field 'blocks' is unknown"),
        ("kv.llama-3.1-8b.at_utilization.85.tokens", "(percent) '85' is unknown; use one of 80, 90, 92, 95"),
        ("pool.gpu.waste", "pool field 'waste' is unknown"),
    ],
)
def test_a_bad_sizing_path_is_caught_when_the_lesson_loads(path, words):
    text = FRONT + f"\n## S\n\nNarration.\n\n```expect\n- that: {path}\n  equals: 1\n```\n"
    with pytest.raises(LessonError) as e:
        parse_lesson(text, "bad.md")
    assert words in str(e.value)


def test_wasted_slots_are_the_empty_slots_of_blocks_in_use(states):
    scope = states[0].scope
    used, filled, wasted = (resolve(f"pool.gpu.{f}", scope) for f in ("used", "filled_slots", "wasted_slots"))
    tokens = sum(r.num_computed_tokens for r in scope.view.requests if r.block_table)
    assert filled == tokens and wasted == used * 4 - tokens
    assert 0 < wasted <= 2 * 3  # at most block_size - 1 per request, in its last block
    assert resolve("pool.gpu.slots", scope) == 6 * 4


def test_a_side_run_prices_its_swaps_on_the_gpu(states):
    scope = states[1].scope
    assert resolve("run.sw.modelled_swap_s", scope) > 0 and resolve("run.sw.modelled_recompute_s", scope) == 0
    assert resolve("run.rc.modelled_swap_s", scope) == 0 and resolve("run.rc.preemptions", scope) >= 1


def test_the_pool_is_priced_at_each_releases_default_utilization():
    """vLLM's default gpu_memory_utilization: 0.9 in 0.6.3.post1 to 0.12.0, 0.92 by 0.20.0 and in 0.33.0
    (vllm/config/cache.py CacheConfig.gpu_memory_utilization); lesson 16 (v0.33) quotes 0.92."""
    assert {90, 92} <= set(UTILIZATIONS)
    assert catalogue_kv("llama-3.1-8b", 4).at_utilization["92"].tokens == 438992
    cache = (require_vllm_source("0.33.0") / "vllm/config/cache.py").read_text()
    assert "gpu_memory_utilization: float = Field(default=0.92" in cache
    assert "gpu_memory_utilization: float = 0.9" in (require_vllm_source("0.10.2") / "vllm/config/cache.py").read_text()
