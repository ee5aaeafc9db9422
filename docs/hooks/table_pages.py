"""Reference tables read from the code's own tables: the knobs (``EngineConfig``'s table, ``pykv.border.config``),
each knob's flag per vLLM release (``pykv.border.vllm_flags``), the metrics (``pykv.border.metric_names``), the
profiles (``pykv.border.vllm_profiles``) and the course (the lesson files, through the course loader)."""

from __future__ import annotations

from docs.hooks.markdown import cell, code, table

WHERE = {"cli": "CLI", "sidebar": "sidebar", "url": "URL", "lesson": "lesson"}


def _type(k) -> str:
    kind = " \\| ".join(code(c) for c in k.choices) if k.kind == "choice" else k.kind
    return kind + (" or `None`" if k.optional else "")


def _bounds(k) -> str:
    if k.kind not in ("int", "float"):
        return ""
    text = k.range_text()
    return code(text) + (f", app ≤ {k.app_max:,}" if k.app_max is not None else "")


def _flag(k, profile_name: str) -> str:
    flags = k.vllm
    if flags.release:
        return "(the release itself)"
    if flags.pykv_only is not None:
        return "—"
    flag = flags.flag_in(profile_name)
    if flag is not None:
        return code(flag.flag) + (f" ({cell(', '.join(map(str, flag.choices)))})" if flag.choices else "")
    return cell(flags.missing_in(profile_name) or "")


def profiles_markdown() -> str:
    from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES

    rows = [
        [
            code(p.name) + (" (default)" if p.name == DEFAULT_PROFILE else ""),
            cell(p.release),
            cell(p.engine),
            cell(p.summary),
        ]
        for p in PROFILES.values()
    ]
    return table(["profile", "vLLM release", "engine", "what it follows"], rows)


def knobs_markdown() -> str:
    from pykv.border.config import knobs
    from pykv.border.vllm_profiles import PROFILES

    all_knobs = knobs()
    rows = [
        [
            code(k.name),
            cell(k.help),
            _type(k),
            code(k.default),
            _bounds(k),
            ", ".join(WHERE[w] for w in k.expose),
            "all" if k.profiles is None else ", ".join(code(p) for p in k.profiles),
        ]
        for k in all_knobs
    ]
    out = [table(["knob", "what", "type", "default", "bounds", "set from", "profiles"], rows), ""]
    out += [
        "## Each knob's flag in each vLLM release",
        "",
        "What `vllm serve` calls the knob in the release each profile follows (read in that release's "
        "`vllm/engine/arg_utils.py`), or why that release has none; — marks pykv's own knobs. The review pack and "
        "the Sweep page print the matching `vllm serve` command from this table.",
        "",
    ]
    header = ["knob"] + [f"`{p.name}` ({p.release})" for p in PROFILES.values()]
    flag_rows = [[code(k.name)] + [_flag(k, name) for name in PROFILES] for k in all_knobs]
    out += [table(header, flag_rows), "", "pykv's own knobs, and why no release has them:", ""]
    out += [f"- {code(k.name)}: {cell(k.vllm.pykv_only)}" for k in all_knobs if k.vllm.pykv_only is not None]
    return "\n".join(out)


def metrics_markdown() -> str:
    from pykv.border.metric_names import METRICS

    rows = [
        [
            code(m.name),
            " ".join(code(s) for s in m.samples),
            m.kind.value,
            cell(m.exported.value),
            cell(m.help) + (f" Buckets: {', '.join(map(str, m.buckets))}." if m.buckets else ""),
        ]
        for m in METRICS
    ]
    return table(["metric", "samples read", "kind", "exported by", "what"], rows)


def course_markdown() -> str:
    from pykv.border.vllm_profiles import DEFAULT_PROFILE
    from pykv.lessons.course.loader import load_course
    from pykv.lessons.course.workshop import course_minutes

    course = load_course()
    rows = [
        [
            f"{i}",
            f"**{cell(lesson.title)}**<br>{code(lesson.id)}",
            cell(lesson.objective),
            f"{lesson.minutes}" + (f" ({lesson.core_minutes} core)" if lesson.core_minutes is not None else ""),
            code(lesson.config.get("vllm_profile", DEFAULT_PROFILE)),
        ]
        for i, lesson in enumerate(course, 1)
    ]
    total = (
        f"{len(course)} lessons: {course_minutes(course, 'core')} minutes on the workshop path (`?path=core`), "
        f"{course_minutes(course, 'full')} in full."
    )
    return total + "\n\n" + table(["#", "lesson", "objective", "minutes", "profile"], rows)
