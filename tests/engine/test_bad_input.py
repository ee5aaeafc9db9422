"""Bad input raises a ValueError that says what to change, and the engine stays usable."""

import json

import pytest

from pykv import EngineConfig, LLMEngine, SamplingParams
from pykv.engine.model.loader import load_model


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("num_gpu_blocks", 0, "num_gpu_blocks must be a positive integer"),
        ("block_size", -4, "block_size must be a positive integer"),
        ("max_num_seqs", 0, "max_num_seqs"),
        ("max_num_batched_tokens", 0, "max_num_batched_tokens"),
        ("swap_space", -1.0, "cannot be negative"),
        ("preemption_mode", "pause", "preemption_mode must be one of"),
        ("attention_backend", "cuda-graphs", "attention_backend must be one of"),
        ("dtype", "int8", "dtype must be one of"),
        ("device", "tpu", "device must be"),
    ],
)
def test_bad_config_values_name_the_field(field, value, words):
    with pytest.raises(ValueError, match=words):
        EngineConfig(**{field: value})


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"max_tokens": 0}, "max_tokens must be an integer >= 1"),
        ({"temperature": -0.5}, "temperature must be >= 0"),
        ({"top_p": 0.0}, "top_p"),
    ],
)
def test_bad_sampling_params(kwargs, words):
    with pytest.raises(ValueError, match=words):
        SamplingParams(**kwargs)


def test_unknown_model_path_says_nothing_is_downloaded(tmp_path):
    with pytest.raises(ValueError, match="nothing is downloaded"):
        load_model(str(tmp_path / "nope"))


def test_unsupported_architecture_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="model_type='gpt2'.*Llama- and Qwen2-family"):
        load_model(str(tmp_path))


def test_missing_weights_are_named(tmp_path, random_llama_path):
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_text((random_llama_path / name).read_text())
    with pytest.raises(ValueError, match="no model.safetensors"):
        load_model(str(tmp_path))


def test_cuda_without_gpu_is_a_clear_error(random_llama_path, random_llama):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        LLMEngine(EngineConfig(model=str(random_llama_path), device="cuda"), loaded=random_llama)


def test_bad_prompts_lose_nothing(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=16, max_num_batched_tokens=8, enable_chunked_prefill=False)
    engine.add_request([1, 2, 3], SamplingParams(max_tokens=2))
    with pytest.raises(ValueError, match="prompt is empty"):
        engine.add_request("")
    with pytest.raises(ValueError, match="must lie in"):
        engine.add_request([1, 10_000])
    with pytest.raises(ValueError, match="max_model_len is 8 .fitted to max_num_batched_tokens: chunked prefill"):
        engine.add_request(list(range(1, 10)), SamplingParams(max_tokens=4))
    with pytest.raises(ValueError, match="already in use"):
        engine.add_request([1], SamplingParams(max_tokens=2), request_id="0")
    with pytest.raises(ValueError, match="one per prompt"):
        engine.generate([[1], [2]], [SamplingParams(max_tokens=2)])
    # A generate call with one bad prompt queues none of them.
    with pytest.raises(ValueError):
        engine.generate([[1, 2], []], SamplingParams(max_tokens=2))
    assert [r.request_id for r in engine.scheduler.waiting] == ["0"]
    while engine.has_unfinished_requests():
        engine.step()
    assert engine.outputs["0"].finish_reason in ("stop", "length")
