"""An engine's KV sizing is computed once (``pykv.engine.kv.sizing.engine_sizing``): the engine's pools and tensors and
the app's seat read the same record."""

from __future__ import annotations

import pytest

from pykv.border.config import ConfigError
from pykv.border.limits import MAX_STEPS
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.kv.sizing import engine_sizing
from pykv.lab.lab import SNAPSHOT_BYTES_ESTIMATE, memory_estimate


@pytest.mark.parametrize(
    "overrides",
    [
        {"vllm_profile": "v0.6", "num_gpu_blocks": 12, "num_cpu_blocks": 5},
        {"vllm_profile": "v0.6", "num_gpu_blocks": 12, "swap_space": 0.001},
        {"vllm_profile": "v0.33", "num_gpu_blocks": 12, "num_offload_blocks": 7},
        {"vllm_profile": "v0.33", "num_gpu_blocks": 12, "kv_offloading_size": 0.001},
        {"vllm_profile": "v0.10", "num_gpu_blocks": 12},
    ],
)
def test_the_engine_and_the_seat_read_one_sizing(make_engine, random_llama, overrides):
    engine = make_engine(**overrides)
    sizing = engine.sizing
    assert sizing == engine_sizing(engine.config, random_llama.config)
    per_block = CacheEngine.bytes_per_block(random_llama.config, engine.config.block_size, engine.config.dtype)
    assert sizing.bytes_per_block == engine.bytes_per_block == per_block
    assert engine.kv.pool.num_blocks == engine.cache.gpu_cache.shape[2] == sizing.num_gpu_blocks == 12
    assert engine.kv.cpu_pool.num_blocks == engine.cache.cpu_cache.shape[2] == sizing.num_cpu_blocks
    assert (engine.kv.offload is not None) == (sizing.num_offload_blocks is not None)
    if "swap_space" in overrides:
        assert sizing.num_swap_blocks == int(0.001 * 2**30) // per_block > 0
    if "kv_offloading_size" in overrides:
        assert sizing.num_offload_blocks == int(0.001 * 2**30) // per_block > 0
    seat = memory_estimate(engine.config, random_llama)
    assert seat == (12 + sizing.num_cpu_blocks) * per_block + MAX_STEPS * SNAPSHOT_BYTES_ESTIMATE


def test_an_offloading_tier_under_one_block_is_refused_before_anything_is_sized(random_llama, random_llama_path):
    from pykv import EngineConfig

    config = EngineConfig(model=str(random_llama_path), vllm_profile="v0.33", kv_offloading_size=1e-9)
    with pytest.raises(ConfigError, match="kv_offloading_size"):
        engine_sizing(config, random_llama.config)
