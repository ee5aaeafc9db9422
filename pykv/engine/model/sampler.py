"""Next-token choice: greedy when temperature is 0, else temperature + top-p with a per-request
seeded generator (so a sampled request is reproducible too)."""

from __future__ import annotations

from typing import Sequence

import torch

from pykv.border.request import SamplingParams


def sample(
    logits: torch.Tensor,  # (num_sampled, vocab) fp32
    params: Sequence[SamplingParams],
    generators: Sequence[torch.Generator | None],
) -> list[int]:
    greedy = logits.argmax(dim=-1).tolist()
    tokens = []
    for row, (p, gen) in enumerate(zip(params, generators)):
        if p.temperature == 0:
            tokens.append(greedy[row])
            continue
        probs = torch.softmax(logits[row] / p.temperature, dim=-1)
        if p.top_p < 1.0:
            sorted_probs, order = probs.sort(descending=True)
            keep = sorted_probs.cumsum(0) - sorted_probs < p.top_p  # always keeps the top token
            probs = torch.zeros_like(probs).scatter_(0, order[keep], sorted_probs[keep])
        if not bool(torch.isfinite(probs).all()) or not float(probs.sum()) > 0:
            # SamplingParams refuses temperatures that overflow, but a step must never fail on one row: a
            # distribution multinomial cannot draw from falls back to the greedy token for this row.
            tokens.append(greedy[row])
            continue
        tokens.append(int(torch.multinomial(probs.cpu(), 1, generator=gen)))
    return tokens
