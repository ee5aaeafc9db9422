"""The engine: ``LLMEngine`` (schedule -> run -> postprocess) and its model runner. Inside, an import
only goes down: the engine's own modules -> observe/ -> sched/ -> kv/ -> model/."""
