"""Groups start-up capacity lines into one StartupFact per start-up (or per worker under tensor parallelism)."""

from __future__ import annotations

from pykv.bridge.base.records import StartupFact

_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class StartupCollector:
    def __init__(self) -> None:
        self.facts: list[StartupFact] = []

    def add(self, facts: dict, line: int, error: bool) -> None:
        current = self.facts[-1] if self.facts else None
        # A fact already known means a new start-up (a restart) or the next worker's copy of the same line.
        if current is None or current.startup_error or any(getattr(current, key) is not None for key in facts):
            current = StartupFact()
            self.facts.append(current)
        for key, value in facts.items():
            setattr(current, key, value)
        current.startup_error = current.startup_error or error
        current.lines.append(line)

    def finish(self, config_block_size: int | None) -> list[StartupFact]:
        for fact in self.facts:
            fill_derived(fact, config_block_size)
        return self.facts


def fill_derived(fact: StartupFact, config_block_size: int | None) -> None:
    """Block size and KV tokens follow from the others: blocks x block size = tokens = concurrency x max_model_len."""
    if fact.block_size is None:
        fact.block_size = config_block_size
    if fact.block_size is None and fact.num_gpu_blocks:
        tokens: float | None = fact.kv_cache_tokens
        if tokens is None and fact.max_concurrency is not None and fact.max_model_len:
            tokens = fact.max_concurrency * fact.max_model_len
        if tokens:
            estimate = tokens / fact.num_gpu_blocks
            nearest = min(_BLOCK_SIZES, key=lambda size: abs(size - estimate))
            if abs(nearest - estimate) <= 0.05 * nearest:  # concurrency is printed to 2 decimals: allow rounding
                fact.block_size = nearest
    if fact.kv_cache_tokens is None and fact.num_gpu_blocks is not None and fact.block_size is not None:
        fact.kv_cache_tokens = fact.num_gpu_blocks * fact.block_size
    if (
        fact.max_concurrency is None
        and not fact.startup_error
        and fact.kv_cache_tokens is not None
        and fact.max_model_len
    ):
        fact.max_concurrency = round(fact.kv_cache_tokens / fact.max_model_len, 2)
