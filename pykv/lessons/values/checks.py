"""Evaluating ``expect`` checks against a step's state, and filling ``{{ path | filter }}`` templates
in narration.

Comparison rules (what an instructor would expect from YAML):
  - numbers compare as numbers (1 == 1.0; floats within 1e-9 relative);
  - request ids are text, so ``0`` written in YAML matches the id ``"0"`` (also inside lists);
  - at_least / at_most / greater_than / less_than need two numbers, else the check fails and says so;
  - contains works on lists (an item), text (a substring) and mappings (a key).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from pykv.border.units import fmt_bytes
from pykv.lessons.format.errors import FieldError, PathError
from pykv.lessons.format.markdown import outside_code
from pykv.lessons.format.step_blocks import Check, ValueOf
from pykv.lessons.values.paths import Scope, resolve


@dataclass(frozen=True)
class CheckResult:
    description: str  # e.g. "request.a.status equals 'running'"
    passed: bool
    actual: object  # the value read (None when it could not be read: see error)
    expected: object  # the operand, value_of resolved
    why: str | None = None  # the lesson's explanation, shown beside the check
    error: str | None = None  # why it could not be evaluated (a missing value, a failed action)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _like(expected: Any, actual: Any) -> Any:
    """Write ``expected`` the way ``actual`` is written where YAML loses the difference (ids as text)."""
    if isinstance(actual, str) and _number(expected) and float(expected).is_integer():
        return str(int(expected))
    if isinstance(actual, (list, tuple)) and isinstance(expected, list) and len(actual) == len(expected):
        return [_like(e, a) for e, a in zip(expected, actual)]
    return expected


def _equal(actual: Any, expected: Any) -> bool:
    if _number(actual) and _number(expected):
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(_equal(a, e) for a, e in zip(actual, expected))
    return _like(expected, actual) == actual


def compare(op: str, actual: Any, expected: Any) -> tuple[bool, str | None]:
    """(passed, why it could not be compared)."""
    if op == "equals":
        return _equal(actual, expected), None
    if op == "not_equals":
        return not _equal(actual, expected), None
    if op == "is_none":
        return (actual is None) == bool(expected), None
    if op in ("contains", "not_contains"):
        if isinstance(actual, (list, tuple)):
            found = any(_equal(item, expected) for item in actual)
        elif isinstance(actual, str):
            found = str(expected) in actual
        elif isinstance(actual, dict):
            found = _like(expected, next(iter(actual), "")) in actual
        else:
            return False, f"{op} needs a list, text or mapping; the value is {actual!r}"
        return found == (op == "contains"), None
    if not (_number(actual) and _number(expected)):
        return False, f"{op} compares numbers; got {actual!r} and {expected!r}"
    return {
        "at_least": actual >= expected,
        "at_most": actual <= expected,
        "greater_than": actual > expected,
        "less_than": actual < expected,
    }[op], None


def operand_value(operand: Any, scope: Scope) -> Any:
    if not isinstance(operand, ValueOf):
        return operand
    value = resolve(operand.value_of, scope)
    if operand.times is None:
        return value
    if not _number(value):
        raise PathError(f"{operand.value_of} is {value!r}; 'times' needs a number")
    return value * operand.times


def evaluate(check: Check, scope: Scope) -> CheckResult:
    """One check in one state. Never raises: a value that cannot be read fails the check with ``error``."""
    description = check.describe()
    expected = None if isinstance(check.operand, ValueOf) else check.operand
    try:
        expected = operand_value(check.operand, scope)
        actual = resolve(check.that, scope)
    except PathError as e:
        return CheckResult(description, False, None, expected, check.why, str(e))
    passed, problem = compare(check.op, actual, expected)
    return CheckResult(description, passed, actual, expected, check.why, problem)


# ---- narration templates ------------------------------------------------------------------------

TEMPLATE = re.compile(r"\{\{([^{}\n]*?)\}\}")  # no braces inside: linear even on a line of 10,000 "{{"


FILTERS: dict[str, Callable[[float], str]] = {
    "ms": lambda v: f"{v * 1e3:.2f} ms",  # seconds -> milliseconds
    "us": lambda v: f"{v * 1e6:.1f} µs",  # seconds -> microseconds
    "s": lambda v: f"{v:.3f} s",
    "bytes": fmt_bytes,  # 1536 -> "1.5 KiB"
    "pct": lambda v: f"{v * 100:.1f}%",  # a fraction -> percent
    "int": lambda v: f"{round(v)}",
}


def format_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def format_short(value: Any, max_items: int = 12) -> str:
    """``format_value`` with a long list cut to its first ``max_items`` and its length (a check's value on a page)."""
    if isinstance(value, (list, tuple)) and len(value) > max_items:
        return format_value(list(value[:max_items]))[:-1] + f", … ({len(value)} items)]"
    return format_value(value)


def parse_template(expr: str) -> tuple[str, str | None]:
    """``" request.a.swap_s | ms "`` -> ("request.a.swap_s", "ms"); FieldError on an unknown filter."""
    name: str | None
    path, _, name = expr.partition("|")
    path, name = path.strip(), name.strip() or None
    if name is not None and name not in FILTERS:
        raise FieldError("", f"{{{{{expr}}}}} uses unknown filter {name!r}; use one of {', '.join(FILTERS)}")
    return path, name


def template_paths(markdown: str) -> list[tuple[str, str | None]]:
    """Every (path, filter) in the narration's templates, outside code blocks (for load-time checks)."""
    found: list[tuple[str, str | None]] = []

    def collect(text: str) -> str:
        found.extend(parse_template(m.group(1)) for m in TEMPLATE.finditer(text))
        return text

    outside_code(markdown, collect)
    return found


def render(markdown: str, scope: Scope) -> tuple[str, list[str]]:
    """(the narration with its templates filled, the templates that could not be filled)."""
    errors: list[str] = []

    def fill(m: re.Match) -> str:
        try:
            path, name = parse_template(m.group(1))
            value = resolve(path, scope)
            if name is None:
                return format_value(value)
            if not _number(value):
                raise PathError(f"{path} is {value!r}; the {name!r} filter needs a number")
            return FILTERS[name](value)
        except (PathError, FieldError) as e:
            errors.append(f"narration {m.group(0)}: {e}")
            return f"`⚠ {m.group(1).strip()}: {e}`"

    return outside_code(markdown, lambda text: TEMPLATE.sub(fill, text)), errors
