"""The engine on the "triton" backend (Triton's interpreter on CPU) against the "torch" backend,
and how backends are chosen."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pykv import SamplingParams
from pykv.engine.model.attention import STEPWISE_CPU_ENV, TORCH_BACKEND, resolve_backend

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = list(range(100, 108))  # two full blocks of 4: a shared prefix


def run_workload(engine) -> dict:
    """A prompt that warms the prefix cache, then three requests sharing its prefix in a pool too small
    for all of them: prefix-cache hits, chunked decodes mixed with prefills, and a recompute preemption."""
    engine.generate([SYSTEM + [1, 2]], SamplingParams(max_tokens=3, ignore_eos=True))
    for i in range(3):
        engine.add_request(SYSTEM + [10 + i, 20 + i], SamplingParams(max_tokens=8, ignore_eos=True))
    steps, forward_s = [], []
    outputs = {}
    while engine.has_unfinished_requests():
        t0 = time.perf_counter()
        report = engine.step()
        forward_s.append((report.forward_time_s, time.perf_counter() - t0))
        steps.append(
            (
                list(report.scheduled),
                [(p.request_id, p.mode) for p in report.preempted],
                [getattr(c, "num_cached_tokens", 0) for c in report.chunks],
            )
        )
        for out in report.finished:
            outputs[out.request_id] = list(out.output_token_ids)
        assert len(steps) < 200, "the workload did not drain"
    return {"outputs": outputs, "steps": steps, "forward_s": forward_s}


def test_triton_backend_matches_torch_greedy_tokens_with_preemption_and_prefix_hit(make_engine):
    cfg = dict(block_size=4, num_gpu_blocks=10, max_num_seqs=3, enable_prefix_caching=True)
    torch_run = run_workload(make_engine(attention_backend="torch", **cfg))
    triton_engine = make_engine(attention_backend="triton", **cfg)
    assert triton_engine.backend.name == "triton"
    triton_run = run_workload(triton_engine)

    assert any(pre for _, pre, _ in torch_run["steps"]), "the workload must include a preemption"
    assert any(any(hits) for _, _, hits in torch_run["steps"]), "the workload must include a prefix-cache hit"
    assert len(torch_run["outputs"]) == 3 and all(len(t) == 8 for t in torch_run["outputs"].values())
    assert triton_run["outputs"] == torch_run["outputs"]
    assert triton_run["steps"] == torch_run["steps"]

    def per_step_ms(run, i):
        return 1e3 * sum(f[i] for f in run["forward_s"]) / len(run["forward_s"])

    print(
        f"\nper-step forward over {len(triton_run['steps'])} steps: triton (interpreted) "
        f"{per_step_ms(triton_run, 0):.1f} ms vs torch {per_step_ms(torch_run, 0):.1f} ms; whole step "
        f"{per_step_ms(triton_run, 1):.1f} ms vs {per_step_ms(torch_run, 1):.1f} ms"
    )
    assert all(f > 0 for f, _ in triton_run["forward_s"])


def test_triton_backend_matches_torch_on_the_shipped_model():
    """The issue's check on the shipped model."""
    from pykv import EngineConfig, LLMEngine, default_model_path
    from pykv.engine.model.loader import load_model

    path = default_model_path()
    loaded = load_model(str(path))
    cfg = dict(model=str(path), block_size=4, num_gpu_blocks=10, max_num_seqs=3, enable_prefix_caching=True)
    runs = [
        run_workload(LLMEngine(EngineConfig(attention_backend=b, **cfg), loaded=loaded)) for b in ("torch", "triton")
    ]
    assert any(pre for _, pre, _ in runs[0]["steps"]) and any(any(h) for _, _, h in runs[0]["steps"])
    assert runs[1]["outputs"] == runs[0]["outputs"]


def test_backend_resolution_on_cpu():
    assert resolve_backend("torch", "cpu") is TORCH_BACKEND
    assert resolve_backend("auto", "cpu") is TORCH_BACKEND  # the interpreter is far too slow for a default
    backend = resolve_backend("triton", "cpu")
    from pykv_kernels import triton_backend

    assert triton_backend.interpreted()  # so each launcher takes the interpreter's lock (it is not thread-safe)
    assert backend.name == "triton" and backend.decode.__wrapped__ is triton_backend.paged_decode_attention
    with pytest.raises(ValueError, match="attention_backend"):
        resolve_backend("cuda-graphs", "cpu")


def test_auto_on_cpu_is_interpreted_triton_for_stepwise_engines_only(monkeypatch):
    """The lab's engines (Playground, Lessons) run the kernels; runs to completion (Sweep, CLI) the reference."""
    monkeypatch.setenv(STEPWISE_CPU_ENV, "triton")
    stepwise = resolve_backend("auto", "cpu", stepwise=True)
    assert stepwise.name == "triton" and stepwise.for_layer(0) is stepwise  # the layer the kernel view shows
    assert stepwise.for_layer(1) is stepwise.for_layer(3) is TORCH_BACKEND  # the others on torch (the click budget)
    assert stepwise.label == "triton (interpreted on CPU, first layer; torch on the others)"
    explicit = resolve_backend("triton", "cpu")
    assert explicit.for_layer(3) is explicit and explicit.label == "triton (interpreted on CPU)"
    assert resolve_backend("auto", "cpu") is TORCH_BACKEND and TORCH_BACKEND.label == "torch (paged SDPA)"
    monkeypatch.setenv(STEPWISE_CPU_ENV, "torch")  # what the test suite sets for its app and lesson replays
    assert resolve_backend("auto", "cpu", stepwise=True) is TORCH_BACKEND


def test_missing_triton_is_a_clear_error_and_auto_falls_back(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` now raises ImportError, as on macOS
    with pytest.raises(ValueError, match="not installed"):
        resolve_backend("triton", "cpu")
    assert resolve_backend("auto", "cuda") is TORCH_BACKEND
    assert resolve_backend("auto", "cpu") is TORCH_BACKEND
    assert resolve_backend("auto", "cpu", stepwise=True) is TORCH_BACKEND  # no triton: plain torch serves


def test_interpreted_engines_on_several_threads_at_once_all_get_their_tokens(make_engine):
    """The app runs each session on its own thread; Triton's interpreter patches triton.language process-wide
    during a launch, so unguarded concurrent launches failed ("Did you forget to add @triton.jit?")."""
    import threading

    cfg = dict(block_size=4, num_gpu_blocks=10, max_num_seqs=3, enable_prefix_caching=True)
    expected = run_workload(make_engine(attention_backend="torch", **cfg))["outputs"]
    engines = [make_engine(attention_backend="triton", **cfg) for _ in range(3)]
    results, errors = [None] * len(engines), []

    def run(i):
        try:
            results[i] = run_workload(engines[i])["outputs"]
        except Exception as e:  # reported below
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(engines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert results == [expected] * len(engines)


def test_a_recorded_step_keeps_the_first_layers_launches_only(make_engine, monkeypatch):
    """Every layer launches the same kernels over the same tables, so only the first layer's launches are recorded:
    the other layers run without the trace, and no record is made for them only to be dropped."""
    from pykv_kernels import launch_record

    made = []
    monkeypatch.setattr(launch_record, "add", lambda record, add=launch_record.add: (made.append(record), add(record)))
    engine = make_engine(attention_backend="triton", block_size=4, num_gpu_blocks=16, max_num_seqs=2)
    assert engine.runner.loaded.config.num_layers > 1
    engine.add_request("def add(x, y):", SamplingParams(max_tokens=3, ignore_eos=True), "a")
    engine.add_request("class Stack:", SamplingParams(max_tokens=3, ignore_eos=True), "b")
    for _ in range(3):
        made.clear()
        launches = engine.step_recording_kernels().launches
        assert [launch.phase for launch in launches].count("store") == 1  # one layer's KV store
        assert {launch.phase for launch in launches} - {"store"}  # and the attention that read the cache
        assert made == list(launches)


def test_auto_runs_the_kernels_on_the_first_layer_only_and_triton_on_every_layer(
    random_llama, random_llama_path, monkeypatch
):
    """Count the interpreted KV stores a step makes: one (layer 0) on a stepwise "auto" engine, one per layer on
    "triton"; the tokens are the torch backend's either way."""
    from pykv import EngineConfig, LLMEngine
    from pykv_kernels import triton_backend

    stores = []
    real_store = triton_backend.store_kv
    monkeypatch.setattr(triton_backend, "store_kv", lambda *args: (stores.append(1), real_store(*args)))
    monkeypatch.setenv(STEPWISE_CPU_ENV, "triton")
    tokens = {}
    for name, stepwise in (("auto", True), ("triton", False), ("torch", False)):
        cfg = EngineConfig(
            model=str(random_llama_path), attention_backend=name, block_size=4, num_gpu_blocks=16, max_num_seqs=2
        )
        engine = LLMEngine(cfg, loaded=random_llama, stepwise=stepwise)
        layers = engine.runner.loaded.config.num_layers
        assert layers > 1  # else "auto" and "triton" would launch alike
        engine.add_request("def add(x, y):", SamplingParams(max_tokens=4, ignore_eos=True), "a")
        stores.clear()
        engine.step()
        assert len(stores) == {"auto": 1, "triton": layers, "torch": 0}[name], name
        while engine.has_unfinished_requests():
            for out in engine.step().finished:
                tokens[name] = list(out.output_token_ids)
    assert tokens["auto"] == tokens["triton"] == tokens["torch"]
