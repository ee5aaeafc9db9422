"""Attaching to a live vLLM: its /metrics polled, its log followed, its KV events counted, the window diagnosed."""
