"""pykv's greedy tokens equal Hugging Face transformers' generate(do_sample=False) in fp32."""

import pytest
import torch

from pykv import EngineConfig, LLMEngine, SamplingParams, default_model_path
from testkit.checkpoints import make_checkpoint

SHIPPED_PROMPTS = [
    "def ",
    "class ",
    "import os\n",
    "    def __init__(self",
    "for i in range(",
    "if __name__ == '__main__':\n",
    "    return self.",
    "# Copyright",
]


def hf_greedy(path, prompts_ids, max_new_tokens):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    outs = []
    for ids in prompts_ids:
        gen = model.generate(torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False)
        outs.append(gen[0, len(ids) :].tolist())
    return outs


def test_shipped_model_matches_transformers():
    path = default_model_path()
    engine = LLMEngine(EngineConfig(model="tiny", num_gpu_blocks=64, block_size=16))
    outs = engine.generate(SHIPPED_PROMPTS, SamplingParams(max_tokens=24))
    expected = hf_greedy(path, [o.prompt_token_ids for o in outs], 24)
    for prompt, out, hf in zip(SHIPPED_PROMPTS, outs, expected):
        assert out.output_token_ids == hf, f"diverged on {prompt!r}"


@pytest.mark.parametrize(
    "model_type, overrides",
    [("llama", {}), ("llama", {"tie_word_embeddings": True, "num_key_value_heads": 1}), ("qwen2", {})],
)
def test_random_checkpoints_match_transformers(tmp_path, model_type, overrides):
    path = make_checkpoint(tmp_path, model_type, seed=1, **overrides)
    prompts = [[5, 6, 7, 8, 9, 10, 11], [20, 21], list(range(30, 70)), [3]]
    engine = LLMEngine(EngineConfig(model=str(path), num_gpu_blocks=32, block_size=4))
    outs = engine.generate(prompts, SamplingParams(max_tokens=16))
    assert [o.output_token_ids for o in outs] == hf_greedy(path, prompts, 16)
