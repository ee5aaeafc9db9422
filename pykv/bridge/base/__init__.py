"""What every reader and finding of the bridge shares: the one input error, the bounded line reader, the records the
readers extract, and the guess of which vLLM release printed them."""
