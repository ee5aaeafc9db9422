"""Lesson YAML, read safely: PyYAML's safe loader (libyaml's parser where present) with a bounded depth,
a bounded number of values, no anchors or aliases, and no key written twice; every problem is a
FieldError with the line and column in the lesson file."""

from __future__ import annotations

from typing import Any, Callable

import yaml
from yaml.composer import ComposerError

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import (
    MAX_SCALAR_CHARS,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    MAX_YAML_NODES_PER_LESSON,
    clip,
    shown,
)

try:  # libyaml's parser when it is there: the same events, several times faster than pure Python
    from yaml.cyaml import CParser

    class _Events(yaml.composer.Composer, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """libyaml's events, composed (below: the limits) and constructed by PyYAML's safe Python code."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _Events = yaml.SafeLoader  # type: ignore[misc]  # the fallback for the class above


class _Limits:
    """Refuses anchors and aliases (a lesson never needs them; they are how a "billion laughs" file
    explodes), and values nested too deep, too many or too long (see pykv.lessons.format.limits). Each is
    checked as the document is composed, so a hostile block stops at the limit, not after parsing it all."""

    nodes_left = MAX_YAML_NODES
    depth = 0
    peek_event: Callable[[], Any]  # the composer's: _Limits is mixed into one

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        mark = event.start_mark
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _LimitError(
                None,
                None,
                "YAML anchors and aliases (&name, *name) are not allowed in a lesson; write each value out",
                mark,
            )
        if isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR_CHARS:
            raise _LimitError(None, None, f"a value of {len(event.value)} characters; at most {MAX_SCALAR_CHARS}", mark)
        self.nodes_left -= 1
        if self.nodes_left < 0:
            raise _LimitError(
                None,
                None,
                f"too many YAML values (at most {MAX_YAML_NODES} in one block and "
                f"{MAX_YAML_NODES_PER_LESSON} in a lesson)",
                mark,
            )
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise _LimitError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", mark)
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self.depth -= 1


class _LimitError(ComposerError):
    """A lesson limit hit while composing (not a syntax error)."""


class _Loader(_Limits, _Events):
    """The loader: libyaml's events where available, the limits above, duplicate keys refused."""


class _PureLoader(_Limits, yaml.SafeLoader):
    """The same in pure Python: it re-reads a block libyaml found malformed, for PyYAML's clearer
    message and line (libyaml reports where it gave up, often the next line)."""


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            twice = key in seen
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be text or a number, got {shown(key)}", key_node.start_mark
            ) from None
        if twice:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {shown(key)} is written twice", key_node.start_mark
            )
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep)


for _cls in (_Loader, _PureLoader):
    _cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class YamlBudget:
    """The YAML values a lesson has left to spend (MAX_YAML_NODES_PER_LESSON over all its blocks)."""

    def __init__(self, nodes: int = MAX_YAML_NODES_PER_LESSON) -> None:
        self.nodes = nodes


_REPARSE_CHARS = 20_000  # a malformed block up to this long is re-read by PyYAML for its message (fast enough)


def parse_yaml(text: str, field: str, first_line: int, budget: YamlBudget | None = None) -> Any:
    """One YAML block, safe-loaded within the limits above; FieldError ``field`` with the file line if not."""
    allowed = min(MAX_YAML_NODES, budget.nodes) if budget is not None else MAX_YAML_NODES
    loader = _Loader(text)
    loader.nodes_left = allowed
    try:
        return loader.get_single_data()
    except (yaml.scanner.ScannerError, yaml.parser.ParserError, yaml.reader.ReaderError) as e:
        error = e
        if "nesting depth" in str(getattr(e, "problem", "")):  # libyaml's own limit (1000), scanning ahead
            raise FieldError(field, f"not valid YAML: nested more than {MAX_YAML_DEPTH} levels deep") from None
        if _Events is not yaml.SafeLoader and len(text) <= _REPARSE_CHARS:  # ask PyYAML for a clearer message
            retry = _PureLoader(text)
            retry.nodes_left = allowed
            try:
                retry.get_single_data()
            except yaml.YAMLError as pure:
                error = pure
            except Exception:  # noqa: BLE001 - keep libyaml's message then
                pass
            finally:
                retry.dispose()
        raise _yaml_problem(error, field, first_line) from None
    except yaml.YAMLError as e:
        raise _yaml_problem(e, field, first_line) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as e:  # a constructor's own error (an int too long)
        raise FieldError(field, f"not valid YAML: {clip(str(e), 200)}") from None
    finally:
        if budget is not None:
            budget.nodes -= allowed - max(loader.nodes_left, 0)
        loader.dispose()


def _yaml_problem(e: yaml.YAMLError, field: str, first_line: int) -> FieldError:
    mark = getattr(e, "problem_mark", None)
    where = f" (line {first_line + mark.line}, column {mark.column + 1})" if mark is not None else ""
    problem = getattr(e, "problem", None) or str(e)
    return FieldError(field, f"not valid YAML: {clip(problem, 200)}{where}")
