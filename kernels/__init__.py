"""Attention kernels over pykv's paged KV cache, each beside the torch reference it must match."""
