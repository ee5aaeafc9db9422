"""Limits that several layers enforce alike."""

MAX_STEPS = 3000  # engine steps a lab session, or one lesson action, may run: bounds time and history memory

# The Python API's input limits (pykv.engine.llm_engine, pykv.border.request): checked before any work is done.
MAX_PROMPT_CHARS = 100_000  # characters of prompt text, checked before tokenizing (a 12 MB prompt took 18 s, 3.4 GB)
MAX_REQUEST_ID_CHARS = 200  # characters of a caller's request id
MAX_TOKENS = 1_000_000  # SamplingParams.max_tokens (max_model_len cuts a request off long before)
MAX_STOP_TOKEN_IDS = 1_000  # SamplingParams.stop_token_ids entries
MAX_N = 64  # SamplingParams.n: parallel sequences of one request (max_num_seqs bounds it further)
# Temperature: 0 is greedy; otherwise it must lie in [MIN_TEMPERATURE, MAX_TEMPERATURE]. vLLM treats anything below
# 1e-5 as greedy; pykv refuses the gap instead of guessing (a tiny positive value overflows logits / T to inf).
MIN_TEMPERATURE = 0.01
MAX_TEMPERATURE = 100.0
# The memory budget of each KV pool (the device pool and the CPU swap pool, each), in bytes. Unless the environment
# variable below sets it (in bytes), it is the smaller of 8 GiB and half the RAM available when the engine is built
# (on CUDA the device pool's budget is the GPU's free memory instead). Checked before any block is allocated.
MAX_KV_BYTES = 8 * 2**30
MAX_KV_BYTES_ENV = "PYKV_MAX_KV_BYTES"
