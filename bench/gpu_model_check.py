"""The GPU cost model against the GPU it runs on: one section of ``bench/gpu_check.py``.

It runs the shipped model's storm on the device, step by step, and records each step's measured time
beside the model's prediction for the same steps (this GPU, found by name, and the shipped model's
shape), then the host<->device copy bandwidths measured beside the link model's. The shipped model is
tiny, so its steps are all overhead on a real GPU: the per-step and per-layer figures of
``pykv/gpu_model/calibration.py`` are what this checks. Runs on CPU too (a dry run priced as an H100).
"""

from __future__ import annotations

import statistics
import time

STEPS = 120  # steps of the storm recorded
COPY_BYTES = 256 << 20


def _estimate(device: str, dtype: str):
    from pykv import default_model_path
    from pykv.gpu_model import ModelShape, detect_gpu, estimate
    from pykv.gpu_model.estimate import TORCH_DTYPES

    if device.startswith("cuda"):
        import torch

        name = torch.cuda.get_device_name(device)
        gpu = detect_gpu(name)
    else:
        name, gpu = "cpu (dry run)", detect_gpu("H100")
    shape = ModelShape.from_file(default_model_path() / "config.json", "the shipped model")
    return name, None if gpu is None else estimate(gpu, shape, TORCH_DTYPES.get(dtype, dtype))


def steps(out, device: str = "cuda", max_steps: int = STEPS) -> None:
    """Measured step times of a real run beside the model's prediction for the same steps."""
    from pykv import EngineConfig, LLMEngine
    from pykv.border.workload import make_workload
    from pykv.lab.workload_runner import WorkloadRunner

    config = EngineConfig(
        device=device, dtype="bfloat16" if device.startswith("cuda") else "float32", num_gpu_blocks=32
    )
    name, est = _estimate(device, config.dtype)
    if est is None:
        out(f"{name}: not in the cost model's catalogue; no prediction (add it to pykv/gpu_model/gpus.py)")
        return
    runner = WorkloadRunner(LLMEngine(config), make_workload("storm", seed=0))
    rows = []
    for _ in range(max_steps):
        if runner.done():
            break
        report = runner.step()
        rows.append((report, est.step_ms(report, config.block_size)))
    out(
        f"storm on the shipped model, {len(rows)} steps on {name} ({config.dtype}); predicted: modelled "
        f"{est.label}. Times in ms."
    )
    out(f"  {'step':>5} {'tokens':>7} {'measured step':>14} {'measured fwd':>13} {'predicted':>10}")
    for report, predicted in rows[:: max(1, len(rows) // 12)]:
        out(
            f"  {report.step:>5} {report.num_batched_tokens:>7} {report.step_time_s * 1e3:>14.3f} "
            f"{report.forward_time_s * 1e3:>13.3f} {predicted:>10.3f}"
        )
    for kind, keep in (
        ("decode-only", lambda r: all(not c.is_prefill for c in r.chunks)),
        ("with prefill", lambda r: any(c.is_prefill for c in r.chunks)),
    ):
        picked = [(r, p) for r, p in rows if r.chunks and keep(r)]
        if picked:
            measured = statistics.median(r.step_time_s * 1e3 for r, _ in picked)
            predicted = statistics.median(p for _, p in picked)
            out(
                f"  median of {len(picked)} {kind} steps: measured {measured:.3f} ms, predicted {predicted:.3f} ms "
                f"(measured / predicted {measured / predicted:.2f})"
            )


def copies(out, device: str = "cuda") -> None:
    """Pinned and pageable copy bandwidth measured beside the link model (one large copy each way)."""
    import torch

    name, est = _estimate(device, "bfloat16")
    if est is None or not device.startswith("cuda"):
        out(f"{name}: copies are measured on CUDA only")
        return
    dev = torch.empty(COPY_BYTES, dtype=torch.uint8, device=device)
    for pinned in (True, False):
        host = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=pinned)
        for direction, (dst, src) in (("h2d", (dev, host)), ("d2h", (host, dev))):
            dst.copy_(src)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(5):
                dst.copy_(src, non_blocking=pinned)
            torch.cuda.synchronize()
            measured = COPY_BYTES * 5 / (time.perf_counter() - t0) / 1e9
            modelled = COPY_BYTES / (est.copy_ms(COPY_BYTES, direction, pinned) * 1e-3) / 1e9
            out(
                f"  {'pinned  ' if pinned else 'pageable'} {direction}: measured {measured:6.1f} GB/s, modelled "
                f"{modelled:6.1f} GB/s ({est.link.name}, {est.gpu.name})"
            )
