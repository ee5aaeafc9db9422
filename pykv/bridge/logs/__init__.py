"""Reading a vLLM log: the message's prefix peeled, one message recognised, start-up facts grouped, the stats lines
into a bounded timeline (``parser.parse_log`` runs them in one streaming pass)."""
