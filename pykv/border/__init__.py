"""The types at the borders: config (the one knob table), vLLM profiles and commands, requests, step
reports, snapshots, workloads, units and limits. They import nothing above them (no engine, no UI)."""
