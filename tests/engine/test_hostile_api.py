"""Hostile and careless input through the Python API (issue 12, rows 1-10 and more): each one is a one-line
ValueError (a ConfigError for config), nothing is queued, and the same engine then runs a small generate. Input that
comes in sizes is refused in time that grows no faster than its size (tests/growth.py), and a prompt or a pool past
its bound in time that does not grow at all: checked before it is tokenized or allocated."""

from __future__ import annotations

import math

import pytest
import torch
from growth import assert_growth, raising

from pykv import EngineConfig, SamplingParams
from pykv.border.config import ConfigError
from pykv.border.limits import MAX_KV_BYTES_ENV, MAX_PROMPT_CHARS
from pykv.engine.llm_engine import LLMEngine
from pykv.engine.model.sampler import sample

NAN, INF = float("nan"), float("inf")


def config(**values):
    return lambda engine: EngineConfig(**values)


def params(**values):
    return lambda engine: SamplingParams(**values)


def add(*args, **kwargs):
    return lambda engine: engine.add_request(*args, **kwargs)


def generate(*args, **kwargs):
    return lambda engine: engine.generate(*args, **kwargs)


def engine_with(**values):
    """A second engine on the same model (its config passes the table but not the engine's own checks)."""
    return lambda engine: LLMEngine(engine.config.replace(**values), loaded=engine.loaded)


# (case, call, words the message must contain, the ConfigError field or None)
CATALOGUE = [
    # 1: temperatures that overflow the softmax (or are not numbers) never reach the sampler
    ("1 temperature nan", params(temperature=NAN), "temperature must be >= 0", None),
    ("1 temperature 1e-40", params(temperature=1e-40), "0 (greedy) or a number in [0.01, 100]", None),
    # 2: swap_space that is not a finite number
    ("2 swap_space inf", config(swap_space=INF), "swap_space must be a finite number", "swap_space"),
    ("2 swap_space nan", config(swap_space=NAN), "swap_space must be a finite number", "swap_space"),
    ("2 swap_space '1'", config(swap_space="1"), "swap_space must be a number", "swap_space"),
    # 3: pools without an upper bound
    ("3 num_gpu_blocks 1e8", config(num_gpu_blocks=10**8), "out of range", "num_gpu_blocks"),
    ("3 swap_space 1e6", config(swap_space=10**6), "out of range", "swap_space"),
    ("3 num_cpu_blocks 1e9", config(num_cpu_blocks=10**9), "out of range", "num_cpu_blocks"),
    (
        "3 swap_space 64 GiB over the budget",
        engine_with(vllm_profile="v0.6", swap_space=64.0),
        "set swap_space to at most",
        "swap_space",
    ),
    # 4: type slips
    ("4 device None", config(device=None), "device must be text", "device"),
    ("4 model None", config(model=None), "model must be text", "model"),
    ("4 max_model_len '100'", config(max_model_len="100"), "max_model_len must be an integer", "max_model_len"),
    ("4 temperature '0.5'", params(temperature="0.5"), "temperature must be a number", None),
    ("4 stop_token_ids 5", params(stop_token_ids=5), "write [5] for one id", None),
    # 5: seeds
    ("5 seed 'abc'", config(seed="abc"), "seed must be an integer", "seed"),
    ("5 SamplingParams seed 'x'", params(seed="x"), "seed must be None or an integer", None),
    ("5 seed 2**70", config(seed=2**70), "out of range", "seed"),
    # 6: non-integers and NaN in integer and float knobs
    ("6 max_model_len 1.5", config(max_model_len=1.5), "max_model_len must be an integer", "max_model_len"),
    (
        "6 livelock guard nan",
        config(max_preemptions_without_progress=NAN),
        "must be an integer",
        "max_preemptions_without_progress",
    ),
    ("6 pcie_bandwidth_gbps nan", config(pcie_bandwidth_gbps=NAN), "finite", "pcie_bandwidth_gbps"),
    # 7: token ids that used to be converted with int()
    ("7 float ids", add([1.5, 2.7]), "item 0 is 1.5 (float)", None),
    ("7 a str id", add([1, "2"]), "item 1 is '2' (str)", None),
    ("7 bool ids", add([True, False]), "item 0 is True (bool)", None),
    ("7 bytes", add(b"def f("), "Decode bytes to text first", None),
    # 8: prompts that are not token lists
    ("8 None", add(None), "must be text or a list of integer token ids", None),
    ("8 an int", add(12345), "got 12345 (int)", None),
    ("8 [None]", add([None]), "item 0 is None", None),
    ("8 ['a']", add(["a"]), "item 0 is 'a'", None),
    ("8 [nan]", add([NAN]), "item 0 is nan", None),
    # 10: generate's arguments
    ("10 generate(None)", generate(None), "prompts must be text", None),
    ("10 params [None, None]", generate([[1], [2]], [None, None]), "params must be a SamplingParams", None),
    ("10 params 'gr'", generate([1, 2], "gr"), "params must be a SamplingParams", None),
    # 11 (API side): prompt text bounded before tokenizing
    ("11 a 12 MB prompt", add("x" * 12_000_000), f"at most {MAX_PROMPT_CHARS}", None),
    # ---- more of our own ----
    ("config huge int", config(num_gpu_blocks=10**5000), "5000 digits", "num_gpu_blocks"),
    ("config model path 100k chars", config(model="x" * 100_000), "model is too long", "model"),
    ("config max_num_seqs 1e6", config(max_num_seqs=10**6), "out of range", "max_num_seqs"),
    ("config budget 1e9 tokens", config(max_num_batched_tokens=10**9), "out of range", "max_num_batched_tokens"),
    ("config seed -1", config(seed=-1), "cannot be negative", "seed"),
    ("config pcie 1e300", config(pcie_bandwidth_gbps=1e300), "out of range", "pcie_bandwidth_gbps"),
    ("config stats interval 1e12", config(log_stats_interval=10**12), "out of range", "log_stats_interval"),
    ("config max_model_len 2**40", config(max_model_len=2**40), "out of range", "max_model_len"),
    ("config a 10k-char unknown field", config(**{"x" * 10_000: 1}), "not an EngineConfig field", None),
    ("config device 'cuda:' * 1000", config(device="cuda:" * 1000), "device is too long", "device"),
    ("params max_tokens 1e7", params(max_tokens=10**7), "at most 1000000", None),
    ("params max_tokens True", params(max_tokens=True), "max_tokens must be an integer", None),
    ("params max_tokens 2.0", params(max_tokens=2.0), "max_tokens must be an integer", None),
    ("params top_p inf", params(top_p=INF), "top_p must be a number in (0, 1]", None),
    ("params top_p '1'", params(top_p="1"), "top_p must be a number in (0, 1]", None),
    ("params temperature 1e6", params(temperature=1e6), "[0.01, 100]", None),
    ("params temperature True", params(temperature=True), "temperature must be a number", None),
    ("params stop id -1", params(stop_token_ids=[-1]), "non-negative integer token ids", None),
    ("params stop ids 'abc'", params(stop_token_ids="abc"), "stop_token_ids must be a list", None),
    ("params stop id 1.0", params(stop_token_ids=[1.0]), "non-negative integer token ids", None),
    ("params 10k stop ids", params(stop_token_ids=list(range(10_000))), "at most 1000", None),
    ("params seed -1", params(seed=-1), "seed must be None or an integer in [0, 2**63)", None),
    ("params seed True", params(seed=True), "seed must be None or an integer", None),
    ("params ignore_eos 'yes'", params(ignore_eos="yes"), "ignore_eos must be True or False", None),
    ("request id ''", add([1], request_id=""), "request_id must be 1 to 200 printable characters", None),
    ("request id with a newline", add([1], request_id="a\nINFO fake log line"), "printable", None),
    ("request id 1000 chars", add([1], request_id="x" * 1000), "request_id must be 1 to 200", None),
    ("request id 1.5", add([1], request_id=1.5), "request_id must be text", None),
    ("request id 5000 digits", add([1], request_id=10**5000), "at most 200 characters", None),
    ("params a str", add([1], "greedy"), "params must be a SamplingParams", None),
    ("params a dict", add([1], {"max_tokens": 2}), "params must be a SamplingParams", None),
    ("id 1e30", add([10**30]), "must lie in [0, ", None),
    ("id -1", add([-1]), "must lie in [0, ", None),
    ("prompt longer than the model", add(list(range(1, 100_000))), "max_model_len", None),
    ("a set of ids", add({1, 2}), "(set)", None),
    ("a tensor of ids", add(torch.tensor([1, 2])), "(Tensor)", None),
    ("generate [[1], None]", generate([[1], None]), "got None (NoneType)", None),
    ("generate params [ok, 'x']", generate([[1], [2]], [SamplingParams(), "x"]), "one per prompt", None),
    ("generate an int", generate(12345), "prompts must be text", None),
    ("generate bytes", generate(b"abc"), "prompts must be text", None),
    ("check_request a float id", lambda e: e.check_request([0.5]), "item 0 is 0.5", None),
    # issue 50, hole 15: an OverflowError and a TypeError from deep inside, now ValueErrors naming the prompt
    ("range(2**64)", add(range(2**64)), "The prompt has more than 2**63 tokens", None),
    ("a lone surrogate", add("def f(\ud800):"), "The prompt is not valid text: character 6 is a lone surrogate", None),
    ("generate a lone surrogate", generate(["ok", "\udfff"]), "lone surrogate (U+DFFF)", None),
]


@pytest.mark.parametrize("call, words, field", [pytest.param(c, w, f, id=i) for i, c, w, f in CATALOGUE])
def test_hostile_api_input_is_one_clear_line_and_the_engine_goes_on(make_engine, call, words, field):
    engine = make_engine(num_gpu_blocks=32, max_num_batched_tokens=64)
    with pytest.raises(ValueError) as e:
        call(engine)
    message = str(e.value)
    assert words in message
    assert "\n" not in message and len(message) < 600, message  # bounded, whatever the input
    if field is not None:
        assert isinstance(e.value, ConfigError) and e.value.field == field
    assert not engine.has_unfinished_requests()  # nothing half-queued
    out = engine.generate([[1, 2, 3]], SamplingParams(max_tokens=2))
    assert out[0].finish_reason in ("stop", "length")


# Input that comes in sizes: (case, the input of size n, what is done with it, n, assert_growth's bounds)
GROWING = [
    (
        "a prompt past its bound is not tokenized",
        lambda n: "x" * n,
        add,
        MAX_PROMPT_CHARS + 1,
        dict(factor=100, max_ratio=3),
    ),
    ("token ids past max_model_len", lambda n: list(range(1, n)), add, 25_000, {}),
    ("stop ids past their bound", lambda n: list(range(n)), lambda ids: params(stop_token_ids=ids), 2_500, {}),
    ("a request id of n digits", lambda n: 10**n, lambda rid: add([1], request_id=rid), 1_250, {}),
    ("a config int of n digits", lambda n: 10**n, lambda big: config(num_gpu_blocks=big), 1_250, {}),
    ("a model path of n characters", lambda n: "x" * n, lambda path: config(model=path), 25_000, {}),
    ("an unknown field of n characters", lambda n: {"x" * n: 1}, lambda kw: config(**kw), 2_500, {}),
]


@pytest.mark.parametrize("make, call, size, bounds", [g[1:] for g in GROWING], ids=[g[0] for g in GROWING])
def test_hostile_input_is_refused_in_time_that_does_not_outgrow_it(make_engine, make, call, size, bounds):
    engine = make_engine(num_gpu_blocks=32, max_num_batched_tokens=64)
    assert_growth(make, raising(lambda value: call(value)(engine)), size, **bounds)
    assert not engine.has_unfinished_requests()


def test_pool_budget_gives_the_largest_allowed_before_allocating(make_engine, monkeypatch):
    engine = make_engine(num_gpu_blocks=8)
    per_block = engine.bytes_per_block
    monkeypatch.setenv(MAX_KV_BYTES_ENV, str(10 * per_block))
    with pytest.raises(ConfigError, match="use at most 10 blocks") as e:
        LLMEngine(engine.config.replace(num_gpu_blocks=11), loaded=engine.loaded)
    assert e.value.field == "num_gpu_blocks"
    # refused before allocating: a pool 1000x over the budget is refused as fast as one block over it
    assert_growth(
        lambda n: engine.config.replace(num_gpu_blocks=n),
        raising(lambda cfg: LLMEngine(cfg, loaded=engine.loaded), ConfigError),
        11,
        factor=1000,
        max_ratio=3,
    )
    with pytest.raises(ConfigError, match="use at most 10 blocks") as e:
        LLMEngine(engine.config.replace(vllm_profile="v0.6", num_cpu_blocks=11), loaded=engine.loaded)
    assert e.value.field == "num_cpu_blocks"
    assert LLMEngine(
        engine.config.replace(vllm_profile="v0.6", num_gpu_blocks=10, num_cpu_blocks=10), loaded=engine.loaded
    )
    monkeypatch.setenv(MAX_KV_BYTES_ENV, "lots")
    with pytest.raises(ConfigError, match="whole number of bytes"):
        LLMEngine(engine.config, loaded=engine.loaded)


def test_automatic_request_ids_skip_taken_ones(make_engine):
    """Row 9: an automatic id never collides with an id the caller chose."""
    engine = make_engine()
    assert engine.add_request([1, 2], SamplingParams(max_tokens=2), request_id="1") == "1"
    auto = [engine.add_request([1, 2], SamplingParams(max_tokens=2)) for _ in range(3)]
    assert "1" not in auto and len(set(auto)) == 3
    engine.add_request([3], SamplingParams(max_tokens=2), request_id="gen-5")
    engine.add_request([3], SamplingParams(max_tokens=2), request_id=7)  # an int id is written out
    outs = engine.generate([[4], [5], [6]], SamplingParams(max_tokens=2))
    ids = [o.request_id for o in outs]
    assert len(set(ids)) == 3 and "gen-5" not in ids
    assert {"1", "gen-5", "7", *auto} <= set(engine.outputs)


def test_sampled_requests_still_run_and_seeds_at_the_edge_work(make_engine):
    """Row 1's other half: temperature sampling is fine across its range, and the largest seeds reach torch."""
    engine = make_engine(seed=2**63 - 1)
    outs = engine.generate(
        ["a", "b", "c"],
        [SamplingParams(max_tokens=3, temperature=t, seed=s) for t, s in ((0.01, None), (100, 2**63 - 1), (1, 0))],
    )
    assert all(len(o.output_token_ids) == 3 for o in outs)


def test_sampler_falls_back_to_greedy_when_a_row_cannot_be_drawn():
    """A distribution multinomial cannot draw from (inf/nan) gives that row's greedy token, not a stuck step."""
    logits = torch.tensor([[0.0, 5.0, 1.0], [0.0, 1.0, 9.0]])
    logits[0, 1] = INF
    p = SamplingParams(temperature=1.0)
    gens = [torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)]
    tokens = sample(logits, [p, p], gens)
    assert tokens[0] == 1 and 0 <= tokens[1] < 3
    nan_logits = torch.full((1, 3), math.nan)
    assert sample(nan_logits, [p], gens[:1])[0] in (0, 1, 2)
