"""The app's page CSS, in one place: the compact layout every page shares, and the lesson page's extras."""

PAGE_CSS = """<style>
[data-testid="stMainBlockContainer"], .block-container {padding-top: 3.2rem; padding-bottom: 1rem;}
[data-testid="stMetric"] {padding: 0;} [data-testid="stMetricValue"] {font-size: 1.35rem;}
/* a metric's label and value wrap instead of ending in "...": "Preemption bill (modelled H100-SXM + Llama-3.1-8B)"
   is the whole label at any width (Streamlit truncates both to one line) */
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *, [data-testid="stMetricValue"],
[data-testid="stMetricValue"] * {white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; overflow-wrap: anywhere; height: auto !important;}
[data-testid="stMetricLabel"] p {line-height: 1.25;}
/* a row of metrics in one flex box (metric_row): equal shares, as columns would give, but never narrower than a
   label's longest word ("Preemptions"): a narrow column wraps the row rather than break words */
[class*="st-key-metric_row_"] > [data-testid="stElementContainer"] {flex: 1 1 0; min-width: 6.5rem;}
/* a class page's long poll (follow_push): an element that shows nothing, so it takes no row and no gap */
.st-key-class_follow {display: none;}
</style>"""
LESSON_DOTS_CSS = """<style>
.st-key-lesson_dots button {padding: 0 0.2rem; min-height: 1.6rem;} .st-key-lesson_dots p {font-size: 1.1rem;}
</style>"""
PRESENTER_CSS = """<style>
.st-key-lesson_text p, .st-key-lesson_text li {font-size: 1.45rem; line-height: 1.5;}
.st-key-lesson_text h3 {font-size: 2.1rem;} .st-key-lesson_text code {font-size: 1.25rem;}
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
[data-testid="stMainBlockContainer"] {padding-top: 1.5rem; padding-bottom: 1rem;}
/* the step's engine log, as tall as its lines (a room cannot scroll it): the room's type, smaller at 720p */
.st-key-projector_narration p, .st-key-projector_narration li {font-size: 1.15rem; line-height: 1.4;}
/* each chart is drawn for 720p and for 1080p (projector_chart): the one the screen is large enough for is shown */
@media (max-width: 1799.98px), (max-height: 999.98px) {
  [class*="_for1080p"], :has(> [class*="_for1080p"]) {display: none;}
}
@media (min-width: 1800px) and (min-height: 1000px) {
  [class*="_for720p"], :has(> [class*="_for720p"]) {display: none;}
}
@media (max-height: 800px) {  /* a 720p projector: the same share of the screen's height as 1080p's type */
  .st-key-lesson_text p, .st-key-lesson_text li {font-size: 1rem; line-height: 1.4;}
  .st-key-lesson_text h3 {font-size: 1.35rem;} .st-key-lesson_text code {font-size: 0.9rem;}
  [data-testid="stMainBlockContainer"] {padding-top: 0.75rem;}
  .st-key-projector_takeaway p {font-size: 0.9rem; line-height: 1.35;}
  .st-key-projector_narration p, .st-key-projector_narration li {font-size: 0.8rem; line-height: 1.25;}
  .st-key-lesson_text {gap: 0.55rem;}
  /* an earlier step's token diff: no room at 720p (its wrapper too, or the gap stays) */
  [class*="st-key-projector_old_tokens_"], :has(> [class*="st-key-projector_old_tokens_"]) {display: none;}
}
</style>"""  # the projector: one screen for the room (no page list, tighter margins)


def current_dot_css(index: int) -> str:
    """Highlights the progress dot of the lesson step on screen."""
    return f"<style>.st-key-lesson_dot_{index} p {{color: var(--st-primary-color, #FF4B4B); font-weight: 700;}}</style>"
