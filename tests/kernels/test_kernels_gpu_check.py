"""bench/gpu_check.py cannot run without a GPU, but its sections can: dry-run them on CPU (Triton's
interpreter) with tiny shapes, so the one-shot GPU run does not die on a typo."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]


def load_gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_check_exits_cleanly_without_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert load_gpu_check().main() == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_gpu_check_sections_dry_run_on_cpu(monkeypatch):
    import triton.testing

    gc = load_gpu_check()
    tiny = dict(
        DEVICE="cpu",
        HEADS=4,
        KV_HEADS=2,
        HEAD_DIM=32,
        BLOCK=4,
        DECODE_BATCH=2,
        DECODE_CONTEXT=20,
        LONG_CONTEXT=40,
        PREFILL_TOKENS=24,
        STORE_TOKENS=(5,),
        COPY_BYTES=1 << 16,
    )
    for name, value in tiny.items():
        monkeypatch.setattr(gc, name, value)
    monkeypatch.setattr(triton.testing, "do_bench", lambda fn, **kw: (fn(), 1.0)[1])  # run once, pretend 1 ms
    out = gc.Report()
    bw = gc.copy_bandwidth(out)
    for section in (gc.decode, gc.split_k, gc.store):
        section(out, bw)
    gc.prefill(out)
    text = "\n".join(out.lines)
    assert "skipped" not in text and "ERROR" not in text
    assert text.count("% of BW*") == 6 + 6 + 2 and text.count("x SDPA") == 6
    errs = [float(tok) for line in out.lines if "max |err|" in line for tok in [line.rsplit(" ", 1)[-1]]]
    assert len(errs) == 3 and max(errs) < 5e-2, errs  # bf16 outputs agree to about one bf16 ulp


def test_gpu_check_playground_section_dry_runs_on_cpu(monkeypatch):
    gc = load_gpu_check()
    monkeypatch.setattr(gc, "DEVICE", "cpu")
    monkeypatch.setattr(gc, "PLAYGROUND_STEPS", 3)
    monkeypatch.setenv("PYKV_STEPWISE_CPU_BACKEND", "triton")  # "auto" in the lab on CPU: interpreted Triton, layer 0
    out = gc.Report()
    gc.playground(out)
    text = "\n".join(out.lines)
    assert "triton (interpreted on CPU, first layer; torch on the others)    3 steps" in text
    assert "\n  torch (paged SDPA) " in text
    assert "tokens identical to torch: True" in text
