"""Scheduling: the scheduler's shared rules, vLLM V0's and V1's steps, and the victim policies."""
