"""A sweep's values as people type them: ``16:128:16`` (start:stop:step, stop included) or ``16,32,64``, counted
before anything is listed, bounded, and refused in one line when they cannot be read."""

from __future__ import annotations

MAX_SWEEP_VALUES = 64  # values on one axis
MAX_SWEEP_VALUE = 100_000  # any one value (the config's own bounds then apply per axis)
MAX_VALUES_TEXT = 1_000  # characters of a values string


def _quote(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def _ints(parts: list[str], text: str) -> list[int]:
    try:
        numbers = []
        for part in parts:
            part = part.strip()
            if not part or len(part) > 12:  # 12 digits is far past any bound: no int() of 5,000 digits
                raise ValueError
            numbers.append(int(part))
        return numbers
    except ValueError:
        raise ValueError(
            f"Cannot read values {_quote(text)}: use start:stop:step (e.g. 16:128:16) or a list "
            "(16,32,64) of whole numbers."
        ) from None


def count_values(text: str) -> int:
    """How many values ``text`` gives, computed without listing them (``1:10**8:1`` costs nothing);
    ValueError if the text cannot be read. :func:`parse_values` then bounds the count."""
    if not isinstance(text, str):
        raise ValueError(f"Sweep values must be text, got {type(text).__name__}.")
    if len(text) > MAX_VALUES_TEXT:
        raise ValueError(f"The values text is {len(text):,} characters; at most {MAX_VALUES_TEXT:,}.")
    if not text.strip():
        raise ValueError("No values given: use start:stop:step (e.g. 16:128:16) or a list (16,32,64).")
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(f"Cannot read values {_quote(text)}: a range is start:stop:step, e.g. 16:128:16.")
        start, stop, step = _ints(parts, text)
        if step < 1:
            raise ValueError(f"In {_quote(text)} the step must be a positive whole number, got {step}.")
        if stop < start:
            raise ValueError(
                f"{_quote(text)} gives no values: in start:stop:step the stop must not be below the start."
            )
        return (stop - start) // step + 1
    parts = text.split(",")
    _ints(parts, text)  # at most 500 short parts: MAX_VALUES_TEXT bounds them
    return len(parts)


def parse_values(text: str) -> tuple[int, ...]:
    """``16:128:16`` (start:stop:step, stop included) or ``16,32,64``: at most MAX_SWEEP_VALUES values,
    each 1..MAX_SWEEP_VALUE. The count is checked before any value is listed."""
    count = count_values(text)
    if count > MAX_SWEEP_VALUES:
        raise ValueError(
            f"{_quote(text)} gives {count:,} values; a sweep takes at most {MAX_SWEEP_VALUES}. "
            "Use a bigger step or fewer values."
        )
    if ":" in text:
        start, stop, step = _ints(text.split(":"), text)
        values = tuple(range(start, stop + 1, step))
    else:
        values = tuple(_ints(text.split(","), text))
    check_values(values)
    return values


def check_values(values: tuple) -> None:
    if not values or any(
        isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_SWEEP_VALUE for v in values
    ):
        shown = ", ".join(repr(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
        raise ValueError(f"Sweep values must be positive integers up to {MAX_SWEEP_VALUE:,}, got [{shown}].")
    if len(values) > MAX_SWEEP_VALUES:
        raise ValueError(f"A sweep takes at most {MAX_SWEEP_VALUES} values, got {len(values)}.")
