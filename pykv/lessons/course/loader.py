"""Loading lesson files: read a file (size checked first, UTF-8), split it into front matter and
steps, and parse it into a Lesson — each step parsed and checked before anything runs by the static
walk (lesson_walk.py); and the course, every lesson file of a folder. Every problem is a LessonError
naming the file and the field — ``lessons/03-x.md: steps[2] (Title).expect[0].that: ...`` — never a
traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from pykv.lessons.course.lesson_walk import LessonWalk
from pykv.lessons.course.offline import check_offline
from pykv.lessons.course.workshop import check_timing
from pykv.lessons.format.errors import FieldError, LessonError
from pykv.lessons.format.limits import MAX_FILE_BYTES, clip
from pykv.lessons.format.markdown import split_front_matter, split_steps
from pykv.lessons.format.model_base import pydantic_problems
from pykv.lessons.format.safe_yaml import YamlBudget, parse_yaml
from pykv.lessons.format.schema import FrontMatter, Lesson

COURSE_DIR = Path(__file__).resolve().parents[3] / "lessons"  # the repository's lessons/
COURSE_GLOB = "[0-9][0-9]-*.md"


def display_path(path: Path) -> str:
    """The path as a reader knows it: relative to the working directory or the repo when inside them."""
    resolved = path.resolve()
    for base in (Path.cwd(), COURSE_DIR.parent):
        try:
            return str(resolved.relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


# ---- entry points -------------------------------------------------------------------------------


def parse_lesson(text: str, path: Path | str = "<lesson>") -> Lesson:
    """A lesson from its text; ``path`` is only used in messages and kept on the Lesson. Anything
    wrong with the text, however hostile, is a LessonError naming the file (and the field where known)."""
    path = Path(path)
    name = display_path(path) if str(path) != "<lesson>" else str(path)
    try:
        return _parse(text, path)
    except FieldError as e:
        raise LessonError(name, e.field, e.problem) from None
    except LessonError:
        raise
    except Exception as e:  # noqa: BLE001 - a file must never take the course down
        raise LessonError(name, "", f"cannot be loaded: {type(e).__name__}: {clip(str(e), 200)}") from None


def _parse(text: str, path: Path) -> Lesson:
    if len(text) > MAX_FILE_BYTES:
        raise FieldError("", f"{len(text)} characters; a lesson file has at most {MAX_FILE_BYTES // 1024} KB")
    if "\x00" in text:
        raise FieldError("", "holds a NUL character: a binary file, not a Markdown lesson")
    check_offline(text)
    budget = YamlBudget()
    head, body, body_line = split_front_matter(text)
    raw = parse_yaml(head, "front matter", 2, budget)
    if not isinstance(raw, dict):
        raise FieldError("front matter", "must be a YAML mapping (id: ..., title: ..., ...)")
    try:
        front = FrontMatter.model_validate(raw)
    except ValidationError as e:
        problem = pydantic_problems(e)
        if problem.problem == "unknown field" and "." not in problem.field:
            fields = ", ".join(FrontMatter.model_fields)
            problem = FieldError(problem.field, f"unknown field; the front matter takes {fields}")
        raise problem from None
    course = LessonWalk(front, budget)
    steps = [course.step(raw_step, i) for i, raw_step in enumerate(split_steps(body, body_line))]
    check_timing(front, steps)
    return Lesson(
        id=front.id,
        title=front.title,
        summary=front.summary,
        seed=front.seed,
        config=front.config,
        workload=front.workload,
        steps=steps,
        path=path,
        objective=front.objective,
        takeaway=front.takeaway,
        minutes=front.minutes,
        core_minutes=front.core_minutes,
    )


def load_lesson(path: Path | str) -> Lesson:
    """The lesson in the file ``path``; LessonError naming the file if it is missing, too large, not
    UTF-8 text or malformed. The size is checked before the file is read, and at most that is read."""
    path = Path(path)
    try:
        if not path.is_file() and path.exists():
            raise LessonError(str(path), "", "is not a regular file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LessonError(str(path), "", f"{size} bytes; a lesson file has at most {MAX_FILE_BYTES // 1024} KB")
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise LessonError(str(path), "", "no such lesson file") from None
    except OSError as e:
        raise LessonError(str(path), "", f"cannot be read ({type(e).__name__}: {clip(str(e), 200)})") from None
    if len(data) > MAX_FILE_BYTES:
        raise LessonError(
            str(path), "", f"more than {MAX_FILE_BYTES} bytes; a lesson file has at most {MAX_FILE_BYTES // 1024} KB"
        )
    try:
        text = data.decode("utf-8-sig")  # a byte order mark, as some editors write, is dropped
    except UnicodeDecodeError as e:
        raise LessonError(str(path), "", f"is not UTF-8 text (byte {e.start}: {clip(e.reason, 80)})") from None
    return parse_lesson(text, path)


def lesson_files(directory: Path | str | None = None) -> list[Path]:
    return sorted(Path(directory or COURSE_DIR).glob(COURSE_GLOB))


def read_course(
    directory: Path | str | None = None, load: Callable[[Path], Lesson] = load_lesson
) -> tuple[list[Lesson], list[LessonError]]:
    """Every ``NN-*.md`` lesson of ``directory`` (the repo's ``lessons/`` by default) that loads, in
    file order, and one LessonError per file that does not (malformed, unreadable, or an id already
    taken), so a course list can show the rest. ``load`` reads one file (the app passes a cached one)."""
    lessons: list[Lesson] = []
    problems: list[LessonError] = []
    for path in lesson_files(directory):
        try:
            lesson = load(path)
        except LessonError as e:
            problems.append(e)
            continue
        except Exception as e:  # noqa: BLE001 - one bad file never takes the course down
            problems.append(
                LessonError(display_path(path), "", f"cannot be loaded: {type(e).__name__}: {clip(str(e), 200)}")
            )
            continue
        twin = next((other for other in lessons if other.id == lesson.id), None)
        if twin is not None:
            problems.append(
                LessonError(
                    display_path(path),
                    "id",
                    f"{lesson.id!r} is already the id of {display_path(twin.path)}; ids must be unique in the course",
                )
            )
            continue
        lessons.append(lesson)
    return lessons, problems


def load_course(directory: Path | str | None = None) -> list[Lesson]:
    """Every lesson of the course, in file order; LessonError on the first file that does not load."""
    lessons, problems = read_course(directory)
    if problems:
        raise problems[0]
    return lessons
