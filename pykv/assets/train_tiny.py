"""Train pykv's shipped default model ("tiny") from text every machine has offline.

Corpus: the Python standard library's own source (found through ``sysconfig``), split by a hash of
each file's path into train (~98%) and held-out (~2%) files. Tokenizer: byte-level BPE trained with
``tokenizers``. Model: ``transformers.LlamaForCausalLM`` with grouped-query attention, so the KV
cache has a realistic shape (4 query heads share each KV head). Output: a normal Hugging Face
checkpoint folder (config.json, model.safetensors, tokenizer files) plus a model card.

Seeded end to end; about an hour on 2 CPU cores::

    python -m pykv.assets.train_tiny --out pykv/assets/tiny
"""

from __future__ import annotations

import argparse
import json
import math
import sysconfig
import time
import zlib
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

EOS = "<|endoftext|>"
CARD_PROMPTS = ["def ", "class ", "import ", "    def __init__(self", "for i in range(", "if __name__ =="]


def corpus_files() -> list[Path]:
    """Every stdlib .py file outside tests and site-packages, in a stable order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = ("site-packages", "test", "tests", "idle_test", "__pycache__")
    files = [p for p in root.rglob("*.py") if not any(part in skip for part in p.relative_to(root).parts)]
    return sorted(files, key=lambda p: str(p.relative_to(root)))


def is_held_out(path: Path) -> bool:
    return zlib.crc32(path.name.encode()) % 50 == 0


def train_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS, unk_token=None)


def encode_all(tokenizer: PreTrainedTokenizerFast, texts: list[str]) -> torch.Tensor:
    ids: list[int] = []
    for text in texts:
        ids.extend(tokenizer(text)["input_ids"])
        ids.append(tokenizer.eos_token_id)
    return torch.tensor(ids, dtype=torch.long)


def random_windows(data: torch.Tensor, batch: int, seq_len: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, data.numel() - seq_len - 1, (batch,), generator=gen)
    return torch.stack([data[s : s + seq_len + 1] for s in starts.tolist()])  # (batch, seq_len + 1)


@torch.no_grad()
def held_out_loss(model: LlamaForCausalLM, data: torch.Tensor, seq_len: int, max_windows: int = 64) -> float:
    model.eval()
    n = min(max_windows, (data.numel() - 1) // seq_len)
    losses = []
    for i in range(n):
        window = data[i * seq_len : i * seq_len + seq_len + 1].unsqueeze(0)
        losses.append(model(input_ids=window[:, :-1], labels=window[:, :-1]).loss.item())
    model.train()
    return sum(losses) / len(losses)


@torch.no_grad()
def greedy_samples(
    model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast, max_new_tokens: int = 48
) -> dict[str, str]:
    model.eval()
    out: dict[str, str] = {}
    for prompt in CARD_PROMPTS:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        gen = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        # transformers types decode() as str | list[str]: one sequence (a 1-D tensor) decodes to a str
        out[prompt] = tokenizer.decode(gen[0], skip_special_tokens=True)  # type: ignore[assignment]
    model.train()
    return out


def write_card(out: Path, cfg: LlamaConfig, stats: dict, samples: dict[str, str]) -> None:
    lines = [
        "# pykv tiny — the shipped default model",
        "",
        "A Llama-architecture causal LM trained by `python -m pykv.assets.train_tiny` on the Python",
        "standard library's source (CPython 3.11 on the build machine), seeded. It exists so pykv has",
        "a real model producing real tokens with no download. It writes code-shaped text; it is",
        "not a useful code assistant.",
        "",
        "| | |",
        "|---|---|",
        f"| parameters | {stats['parameters']:,} |",
        f"| layers / hidden / MLP | {cfg.num_hidden_layers} / {cfg.hidden_size} / {cfg.intermediate_size} |",
        f"| query heads / KV heads / head dim | {cfg.num_attention_heads} / {cfg.num_key_value_heads} / "
        f"{cfg.hidden_size // cfg.num_attention_heads} |",
        f"| vocabulary (byte-level BPE) | {cfg.vocab_size} |",
        f"| context | {cfg.max_position_embeddings} |",
        f"| training tokens seen | {stats['tokens_seen']:,} "
        f"({stats['steps']} steps of {stats['batch']}x{stats['seq_len']}) |",
        f"| corpus tokens (train / held-out) | {stats['train_tokens']:,} / {stats['held_out_tokens']:,} |",
        f"| held-out loss (nats/token) | {stats['held_out_loss']:.3f} "
        f"(perplexity {math.exp(stats['held_out_loss']):.1f}) |",
        f"| training time | {stats['train_seconds'] / 60:.1f} min on {stats['threads']} CPU threads |",
        "",
        "## Greedy continuations",
        "",
    ]
    for prompt, text in samples.items():
        lines += [f"Prompt `{prompt!r}`:", "", "```python", text, "```", ""]
    (out / "README.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "tiny")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    files = corpus_files()
    train_texts = [p.read_text(encoding="utf-8", errors="replace") for p in files if not is_held_out(p)]
    held_texts = [p.read_text(encoding="utf-8", errors="replace") for p in files if is_held_out(p)]
    print(f"{len(train_texts)} train files, {len(held_texts)} held-out files", flush=True)

    tokenizer = train_tokenizer(train_texts, args.vocab_size)
    train_ids, held_ids = encode_all(tokenizer, train_texts), encode_all(tokenizer, held_texts)
    print(f"{train_ids.numel():,} train tokens, {held_ids.numel():,} held-out tokens", flush=True)

    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=256,
        intermediate_size=704,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_theta": 10000.0, "rope_type": "default"},  # transformers 5 (rope_theta was 4.x's)
        tie_word_embeddings=True,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, args.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min(1.0, (s + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / args.steps)))),
    )
    gen = torch.Generator().manual_seed(args.seed)
    start = time.perf_counter()
    for step in range(args.steps):
        batch = random_windows(train_ids, args.batch, args.seq_len, gen)
        loss = model(input_ids=batch[:, :-1], labels=batch[:, :-1]).loss
        # labels are shifted inside the model, so the window's last token is never predicted: fine.
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 100 == 0 or step == args.steps - 1:
            elapsed = time.perf_counter() - start
            print(
                f"step {step:5d}  loss {loss.item():.3f}  lr {sched.get_last_lr()[0]:.2e}  {elapsed / 60:.1f} min",
                flush=True,
            )
    train_seconds = time.perf_counter() - start

    stats = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_seen": args.steps * args.batch * args.seq_len,
        "steps": args.steps,
        "batch": args.batch,
        "seq_len": args.seq_len,
        "train_tokens": train_ids.numel(),
        "held_out_tokens": held_ids.numel(),
        "held_out_loss": held_out_loss(model, held_ids, args.seq_len),
        "train_seconds": train_seconds,
        "threads": args.threads,
    }
    samples = greedy_samples(model, tokenizer)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    write_card(args.out, cfg, stats, samples)
    (args.out / "training_stats.json").write_text(json.dumps(stats, indent=2))
    print(json.dumps(stats, indent=2))
    for prompt, text in samples.items():
        print(f"--- {prompt!r}\n{text}")


if __name__ == "__main__":
    main()
