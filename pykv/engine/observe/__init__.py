"""What the engine says about itself: measured preemption costs, metrics under vLLM's names, the
observer that feeds them, and the snapshot builder."""
