"""The review pack: one self-contained HTML page (and a zip beside it) that shows what a run, a sweep or a
lesson did, for someone who was not there: the configuration and the matching vLLM command, the
workload and a link back into the lab, the figures, the preemption bill, the requests, the metrics and
the logs. No Streamlit here: the CLI (``python -m pykv report``) and the three pages' buttons call it.

    RunRecord (config, snapshots, metrics text) ──> run_pack ──┐
    SweepSpec + SweepResult ─────────────────────> sweep_pack ─┼─> ReviewPack ──> render_html -> bytes
    Lesson + played StepStates ──────────────────> lesson_pack ┘             └──> build_zip  -> bytes
"""

from pykv.review_pack.bundle import build_zip
from pykv.review_pack.lesson import lesson_pack
from pykv.review_pack.page import ReviewPack, Section, render_html
from pykv.review_pack.record import RunRecord, record_from_lab
from pykv.review_pack.run import run_pack
from pykv.review_pack.sweep import sweep_pack

__all__ = [
    "ReviewPack",
    "RunRecord",
    "Section",
    "build_zip",
    "lesson_pack",
    "record_from_lab",
    "render_html",
    "run_pack",
    "sweep_pack",
]
