"""The Lab (one engine and its one history), the workload runner, completed runs and sweeps."""
