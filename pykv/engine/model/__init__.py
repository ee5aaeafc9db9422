"""The model: the Llama/Qwen2-family network, its loader, the attention backends and the sampler."""
