"""Benchmarks: scripts that print numbers (results in bench/results/). Run each from the repository root as a
module, `python -m bench.<name>`, so that it imports the installed pykv and the checkout's testkit and oracle."""
