"""Limits that several layers enforce alike."""

MAX_STEPS = 3000  # engine steps a lab session, or one lesson action, may run: bounds time and history memory
