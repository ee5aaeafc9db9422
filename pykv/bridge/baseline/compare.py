"""A new diagnosis against a saved baseline, in a person's words.

Rules (each one a false all-clear seen before):

- "same as the baseline" only when both sides have every judged figure (preemptions per minute, generation
  throughput) and each is within the tolerance; a figure missing on either side is "not comparable: <what is
  missing>", named in the verdict, never skipped;
- a preemption count with no time span (a counter read once: "at least N since start-up") is a floor: shown, never
  compared as a rate;
- a different engine, model or release is said first: the figures then differ by server as well as by load;
- the config changes (in the server's flags) and the findings that went away or appeared are listed;
- labels, never internal keys; numbers formatted, never raw floats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykv.bridge.base.release_guess import release_key
from pykv.bridge.baseline.figures import FIGURES, figures, preemption_count_text
from pykv.bridge.diagnosis import Diagnosis

MAX_TEXT = 120  # a string read from a baseline file, as shown
CONFIG_FLAGS = {  # ServerConfig's keys as the server's own flags
    "version": "release printed",
    "model": "--model",
    "swap_space_gib": "--swap-space (GiB)",
    "kv_offloading_size_gib": "--kv-offloading-size (GiB)",
}


@dataclass(frozen=True)
class FigureRow:
    label: str
    baseline: str
    now: str
    change: str  # "+12%", "within 10%", "not comparable: ...", "not judged"


@dataclass
class Comparison:
    verdict: str  # one line
    rows: list[FigureRow]
    warnings: list[str] = field(default_factory=list)  # different engine / release / model
    config_changes: list[str] = field(default_factory=list)  # "--max-num-seqs 128 -> 256"
    findings_gone: list[str] = field(default_factory=list)  # titles
    findings_new: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The comparison as text: the verdict, then :meth:`details`."""
        return [self.verdict, *self.details()]

    def details(self) -> list[str]:
        """Under the verdict (the CLI's): a different server first, the figures, the config and the findings."""
        out = [f"  warning: {w}" for w in self.warnings]
        out += [f"  {r.label}: {r.baseline} -> {r.now} ({r.change})" for r in self.rows]
        out += [f"  config changed: {c}" for c in self.config_changes]
        out += [f"  finding gone: {t}" for t in self.findings_gone] + [f"  finding new: {t}" for t in self.findings_new]
        return out


def compare(diagnosis: Diagnosis, baseline: dict, tolerance: float = 0.10) -> Comparison:
    now, before = figures(diagnosis), baseline.get("figures") or {}
    rows: list[FigureRow] = []
    better: list[str] = []
    worse: list[str] = []
    same: list[str] = []
    missing: list[str] = []
    for spec in FIGURES:
        old, new = _number(before.get(spec.key)), now.get(spec.key)
        base_text, now_text = _shown(spec, old), _shown(spec, new)
        if old is None or new is None:
            why = _why_missing(spec, old is None, new is None, before, now)
            rows.append(FigureRow(spec.label, base_text, now_text, f"not comparable: {why}"))
            if spec.lower_is_better is not None:
                missing.append(why)
            continue
        if spec.lower_is_better is None:
            rows.append(FigureRow(spec.label, base_text, now_text, _pct(old, new) + " (shown, not judged)"))
            continue
        moved = abs(new - old) > tolerance * max(abs(old), 1e-9) or (old == 0 and new > 0)
        said = f"{spec.label} {base_text} -> {now_text}"
        if not moved:
            same.append(spec.label)
            rows.append(FigureRow(spec.label, base_text, now_text, f"within {tolerance:.0%}"))
            continue
        (better if (new < old) == spec.lower_is_better else worse).append(f"{said} ({_pct(old, new)})")
        rows.append(FigureRow(spec.label, base_text, now_text, _pct(old, new)))
    rows.insert(1, FigureRow("preemptions counted", preemption_count_text(before), preemption_count_text(now), "—"))
    verdict = _verdict(better, worse, same, missing, tolerance)
    gone, new_ids = _findings(diagnosis, baseline)
    return Comparison(
        verdict, rows, _warnings(diagnosis, baseline), _config_changes(diagnosis, baseline), gone, new_ids
    )


def _verdict(better: list[str], worse: list[str], same: list[str], missing: list[str], tolerance: float) -> str:
    parts = []
    if worse and not better:
        parts.append("worse than the baseline: " + ", ".join(worse))
    elif better and not worse:
        parts.append("better than the baseline: " + ", ".join(better))
    elif better:
        parts.append("mixed: better " + ", ".join(better) + "; worse " + ", ".join(worse))
    if same and (better or worse or missing):
        parts.append(f"the same (within {tolerance:.0%}) on " + " and ".join(same))
    if missing:
        parts.append("not comparable: " + "; ".join(missing))
    if not parts:
        return f"same as the baseline (within {tolerance:.0%}) on " + " and ".join(same)
    return "; ".join(parts)


def _why_missing(spec, old_missing: bool, new_missing: bool, before: dict, now: dict) -> str:
    """What is missing, and on which side; a floor since start-up said as such."""
    sides = []
    for missing, figs, who in ((new_missing, now, "this input"), (old_missing, before, "the baseline")):
        if not missing:
            continue
        count = _number(figs.get("preemptions_at_least"))
        if spec.key == "preemptions_per_min" and count is not None:
            sides.append(f"{who} counts at least {count:,.0f} preemptions since start-up (a floor, not a rate)")
        else:
            sides.append(f"{who} has {spec.missing}")
    return " and ".join(sides)


def _warnings(diagnosis: Diagnosis, baseline: dict) -> list[str]:
    out = []
    old_engine, new_engine = _text(baseline.get("engine")), diagnosis.engine
    if old_engine and new_engine and old_engine != new_engine:
        out.append(
            f"different engines: the baseline ran vLLM's {old_engine.upper()} engine, this server "
            f"{new_engine.upper()}: they schedule, preempt and report differently"
        )
    rng = baseline.get("release_range")
    low, high = diagnosis.release.low, diagnosis.release.high
    if isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, str) for v in rng) and low and high:
        apart = _key(rng[1]) < _key(low) or _key(high) < _key(rng[0])
    else:
        apart = _text(baseline.get("release")) not in (None, diagnosis.release.text)
    if apart:
        out.append(
            f"different releases: the baseline is vLLM {_text(baseline.get('release'))}, this server "
            f"{diagnosis.release.text}: a change of release changes the figures too"
        )
    old_model, new_model = _text(baseline.get("model")), getattr(diagnosis.config, "model", None)
    if old_model and new_model and old_model != new_model:
        out.append(
            f"different models: the baseline served {old_model}, this server {new_model}: "
            "their KV per token and speed differ"
        )
    return out


def _config_changes(diagnosis: Diagnosis, baseline: dict) -> list[str]:
    stored = baseline.get("config")
    old: dict = stored if isinstance(stored, dict) else {}
    new = diagnosis.config.to_json_dict()
    changes = []
    for key, value in new.items():
        if key not in old or old[key] == value:
            continue
        flag = CONFIG_FLAGS.get(key) or "--" + key.replace("_", "-")
        changes.append(f"{flag} {_value(old[key])} -> {_value(value)}")
    return changes


def _findings(diagnosis: Diagnosis, baseline: dict) -> tuple[list[str], list[str]]:
    old_ids = [i for i in baseline.get("findings") or [] if isinstance(i, str)]
    stored = baseline.get("finding_titles")
    titles = {k: _text(v) for k, v in (stored if isinstance(stored, dict) else {}).items() if isinstance(k, str)}
    now = {f.id: f.title for f in diagnosis.findings}
    gone = [titles.get(i) or _humane(i) for i in old_ids if i not in now]
    new = [title for i, title in now.items() if i not in old_ids]
    return gone, new


def _humane(key: str) -> str:
    """A finding's id, from a baseline saved without titles, as words: "preemption storm"."""
    return key[:MAX_TEXT].replace("_", " ")


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) else None


def _value(value: object) -> str:
    if value is None:
        return "not read"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return _text(value) or str(value)[:MAX_TEXT]


def _shown(spec, value: float | None) -> str:
    return "not read" if value is None else spec.show(value)


def _pct(old: float, new: float) -> str:
    if old == 0:
        return "from zero" if new else "no change"
    return f"{(new - old) / abs(old):+.0%}"


def _key(version: str) -> tuple:
    return release_key(version[:MAX_TEXT])
