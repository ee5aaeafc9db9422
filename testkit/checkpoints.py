"""Small Hugging Face checkpoints made on the fly, for loader and correctness tests."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "for i in range(10):\n    print(i)\n",
    "import os\nimport sys\n",
] * 4


def save_tokenizer(folder: Path, vocab_size: int = 320) -> None:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.save(str(folder / "tokenizer.json"))


def make_checkpoint(folder: Path, model_type: str = "llama", seed: int = 0, **overrides) -> Path:
    """A randomly initialised Llama or Qwen2 checkpoint folder with GQA, saved by transformers.

    The init scale is raised above transformers' default so that greedy argmax choices are decisive
    (random models at std 0.02 have near-tied logits, where any rounding difference flips a token).
    """
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    save_tokenizer(folder)
    kwargs = dict(
        vocab_size=320,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.2,
        eos_token_id=0,
        bos_token_id=0,
    )
    kwargs.update(overrides)
    torch.manual_seed(seed)
    if model_type == "llama":
        model = LlamaForCausalLM(LlamaConfig(**kwargs))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**kwargs))
    model.save_pretrained(folder, safe_serialization=True)
    return folder
