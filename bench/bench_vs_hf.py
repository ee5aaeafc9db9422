"""Output tokens/s of pykv against Hugging Face transformers on the same model and requests.

32 requests, prompts of 16-256 tokens cut from held-out-style text, outputs of 16-128 tokens
(forced: EOS ignored), fp32, fixed thread count. Three ways to serve them:

  pykv            continuous batching over the paged cache (all 32 submitted at once)
  HF one-by-one   model.generate per request
  HF static       model.generate over batches of --hf-batch, left-padded; a batch runs until its
                  longest request is done (only requested tokens are counted)

    python bench/bench_vs_hf.py --threads 2
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from pykv import EngineConfig, LLMEngine, SamplingParams, default_model_path
from pykv.loader import load_model


def make_requests(loaded, n: int, seed: int) -> list[tuple[list[int], int]]:
    rng = random.Random(seed)
    text = (Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py").read_text()
    ids = loaded.encode(text)
    out = []
    for _ in range(n):
        plen, olen = rng.randint(16, 256), rng.randint(16, 128)
        start = rng.randrange(0, len(ids) - plen)
        out.append((ids[start : start + plen], olen))
    return out


def bench_pykv(model: str, requests, max_num_seqs: int) -> tuple[float, int]:
    need = sum(len(p) + o for p, o in requests)
    cfg = EngineConfig(model=model, num_gpu_blocks=need // 16 + len(requests) + 1, block_size=16,
                       max_num_seqs=max_num_seqs, max_num_batched_tokens=2048)
    engine = LLMEngine(cfg)
    engine.generate([requests[0][0]], SamplingParams(max_tokens=4))  # warm-up
    t0 = time.perf_counter()
    outs = engine.generate([p for p, _ in requests],
                           [SamplingParams(max_tokens=o, ignore_eos=True) for _, o in requests])
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
            model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=longest, min_new_tokens=longest,
                           do_sample=False, pad_token_id=0)
        tokens += sum(o for _, o in group)
    return time.perf_counter() - t0, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--hf-batch", type=int, default=8)
    parser.add_argument("--max-num-seqs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_model(args.model)
    path = default_model_path() if args.model == "tiny" else Path(args.model)
    requests = make_requests(loaded, args.requests, args.seed)
    print(f"{len(requests)} requests, prompt tokens {sum(len(p) for p, _ in requests)}, "
          f"output tokens {sum(o for _, o in requests)}, {args.threads} threads, fp32, CPU")
    rows = [
        ("pykv (continuous batching)", *bench_pykv(args.model, requests, args.max_num_seqs)),
        (f"HF static batches of {args.hf_batch}", *bench_hf(path, requests, args.hf_batch)),
        ("HF one request at a time", *bench_hf(path, requests, 1)),
    ]
    base = rows[0][2] / rows[0][1]
    for name, seconds, tokens in rows:
        tps = tokens / seconds
        print(f"{name:32s} {seconds:8.2f} s  {tps:9.1f} output tok/s   pykv is {base / tps:5.2f}x")


if __name__ == "__main__":
    main()
