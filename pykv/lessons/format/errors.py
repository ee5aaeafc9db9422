"""The two errors of the lesson package: a malformed lesson file, and a value path that cannot be
read in the state a lesson step reached."""

from __future__ import annotations

from pykv.lessons.format.limits import MAX_FIELD_CHARS, MAX_PROBLEM_CHARS, clip, one_line


class LessonError(ValueError):
    """A lesson file is malformed. ``str(e)`` reads ``"<file>: <field>: <what is wrong>"``, e.g.
    ``lessons/03-x.md: steps[2] (Recompute).expect[0].equals: ...``, and is what the UI shows. One
    line, and short whatever the file holds: the field and the problem are clipped."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        path, field = one_line(path, 10 * MAX_FIELD_CHARS), one_line(field, MAX_FIELD_CHARS)
        problem = one_line(problem, MAX_PROBLEM_CHARS)
        self.path, self.field, self.problem = path, field, problem
        super().__init__(f"{path}: {field}: {problem}" if field else f"{path}: {problem}")


class PathError(ValueError):
    """A value path (``request.a.status``) names something that is not there in this state."""


class FieldError(ValueError):
    """A problem with one field of a lesson part; the loader prefixes the file and the part's place
    (``steps[1] (Title).actions[0]``) to ``field`` and raises a LessonError."""

    def __init__(self, field: str, problem: str) -> None:
        field, problem = clip(field, 4 * MAX_FIELD_CHARS), clip(problem, 4 * MAX_PROBLEM_CHARS)
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}" if field else problem)
