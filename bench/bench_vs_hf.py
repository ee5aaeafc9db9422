"""Output tokens/s of pykv against Hugging Face transformers on the same model and requests.

Two workloads of 32 requests cut from held-out-style text, outputs forced (EOS ignored), fp32:

  short   prompts of 16-256 tokens, outputs of 16-128 (the original benchmark)
  long    prompts of 16-400 tokens, spread log-uniformly (many short, some long), outputs of 8-160

Three ways to serve them, at each thread count:

  pykv            continuous batching over the paged cache (all 32 submitted at once), torch attention
                  (the engine's pykv_kernels/torch_paged.py, or --attention reference: pykv_kernels/reference.py)
  HF one-by-one   model.generate per request
  HF static       model.generate over batches of --hf-batch, left-padded; a batch runs until its
                  longest request is done (only requested tokens are counted)

    python -m bench.bench_vs_hf --repeat 3               # both workloads at 1 and 2 threads, best of 3
    python -m bench.bench_vs_hf --threads 1 --workload long
    python -m bench.bench_vs_hf --repeat 3 --attention reference     # the references, the "before" figures
"""

from __future__ import annotations

import argparse
import os
import random
import sysconfig
import time
from pathlib import Path

import torch

from pykv import EngineConfig, LLMEngine, SamplingParams, default_model_path
from pykv.engine.model.attention import AttentionBackend
from pykv.engine.model.loader import load_model
from pykv_kernels import reference


def make_requests(loaded, n: int, seed: int, workload: str = "short") -> list[tuple[list[int], int]]:
    rng = random.Random(seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = (stdlib / "textwrap.py").read_text() + ("" if workload == "short" else (stdlib / "argparse.py").read_text())
    ids = loaded.encode(text)
    out = []
    for _ in range(n):
        if workload == "short":
            plen, olen = rng.randint(16, 256), rng.randint(16, 128)
        else:
            plen, olen = int(round(16 * 25 ** rng.random())), rng.randint(8, 160)  # 16..400, log-uniform
        start = rng.randrange(0, len(ids) - plen)
        out.append((ids[start : start + plen], olen))
    return out


def bench_pykv(model: str, requests, max_num_seqs: int, attention: str = "torch_paged") -> tuple[float, int]:
    need = sum(len(p) + o for p, o in requests)
    cfg = EngineConfig(
        model=model,
        num_gpu_blocks=need // 16 + len(requests) + 1,
        block_size=16,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=2048,
    )
    engine = LLMEngine(cfg)
    if attention == "reference":  # the ground truth, clear and slow: the "before" of bench/results
        engine.backend = engine.runner.backend = AttentionBackend(
            "torch", reference.store_kv, reference.paged_prefill_attention, reference.paged_decode_attention
        )
    engine.generate([requests[0][0]], SamplingParams(max_tokens=4))  # warm-up
    t0 = time.perf_counter()
    outs = engine.generate(
        [p for p, _ in requests], [SamplingParams(max_tokens=o, ignore_eos=True) for _, o in requests]
    )
    return time.perf_counter() - t0, sum(len(o.output_token_ids) for o in outs)


def bench_hf(path: Path, requests, batch: int) -> tuple[float, int]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model.generate(torch.tensor([requests[0][0]]), max_new_tokens=4, do_sample=False)  # warm-up
    t0 = time.perf_counter()
    tokens = 0
    for i in range(0, len(requests), batch):
        group = requests[i : i + batch]
        width = max(len(p) for p, _ in group)
        ids = torch.zeros(len(group), width, dtype=torch.long)
        mask = torch.zeros(len(group), width, dtype=torch.long)
        for row, (p, _) in enumerate(group):  # left padding
            ids[row, width - len(p) :] = torch.tensor(p)
            mask[row, width - len(p) :] = 1
        longest = max(o for _, o in group)
        with torch.inference_mode():
            model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=longest,
                min_new_tokens=longest,
                do_sample=False,
                pad_token_id=0,
            )
        tokens += sum(o for _, o in group)
    return time.perf_counter() - t0, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--threads", default="1,2", help="torch thread counts, comma-separated (default 1,2)")
    parser.add_argument("--workload", choices=("short", "long", "both"), default="both")
    parser.add_argument("--hf-batch", type=int, default=8)
    parser.add_argument("--max-num-seqs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--attention",
        choices=("torch_paged", "reference"),
        default="torch_paged",
        help="pykv's attention: the engine's torch backend (pykv_kernels/torch_paged.py) or the slower "
        "references it is tested against (pykv_kernels/reference.py)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time each row N times, keep the fastest (a busy machine: the minimum is the least disturbed run)",
    )
    args = parser.parse_args()
    loaded = load_model(args.model)
    path = default_model_path() if args.model == "tiny" else Path(args.model)
    workloads = ("short", "long") if args.workload == "both" else (args.workload,)
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for workload in workloads:
            requests = make_requests(loaded, args.requests, args.seed, workload)
            print(
                f"\n{workload}: {len(requests)} requests, prompt tokens {sum(len(p) for p, _ in requests)} "
                f"(longest {max(len(p) for p, _ in requests)}), output tokens {sum(o for _, o in requests)}, "
                f"{threads} thread(s), fp32, CPU, pykv attention: {args.attention}, "
                f"load average {os.getloadavg()[0]:.2f}"
            )
            runs = {
                "pykv (continuous batching)": lambda: bench_pykv(
                    args.model, requests, args.max_num_seqs, args.attention
                ),
                f"HF static batches of {args.hf_batch}": lambda: bench_hf(path, requests, args.hf_batch),
                "HF one request at a time": lambda: bench_hf(path, requests, 1),
            }
            best: dict[str, tuple[float, int]] = {}
            for _ in range(args.repeat):  # rows interleaved, so a load spike does not hit one row only
                for name, run in runs.items():
                    seconds, tokens = run()
                    best[name] = min(best.get(name, (seconds, tokens)), (seconds, tokens))
            rows = [(name, *best[name]) for name in runs]
            base = rows[0][2] / rows[0][1]
            for name, seconds, tokens in rows:
                tps = tokens / seconds
                print(f"{name:32s} {seconds:8.2f} s  {tps:9.1f} output tok/s   pykv is {base / tps:5.2f}x")


if __name__ == "__main__":
    main()
