"""The paged KV cache: the block pool, the KV manager and what it owns (the swap space, the offloading
tier), the KV budget, and the tensors the blocks index (the cache engine)."""
