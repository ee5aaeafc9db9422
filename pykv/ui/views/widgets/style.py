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
/* code is drawn at 0.75em of its text (an expander's "Token diff tokens.sys"): never under the floor's 0.875rem */
[data-testid="stMain"] code {font-size: max(0.875rem, 0.75em);}
/* the room's type in px: a 1080p projector's rem is larger (below), and the prose keeps the size it fits at */
.st-key-lesson_text p, .st-key-lesson_text li {font-size: 23px; line-height: 1.5;}
.st-key-lesson_text h3 {font-size: 34px;} .st-key-lesson_text code {font-size: 20px;}
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
[data-testid="stMainBlockContainer"] {padding-top: 1.5rem; padding-bottom: 1rem;}
/* the step's engine log, as tall as its lines (a room cannot scroll it): the room's type, smaller at 720p */
.st-key-projector_narration p, .st-key-projector_narration li {font-size: 19px; line-height: 1.4;}
/* an earlier step's token diff: no room (its wrapper too, or the gap stays); at 1080p the floor's larger type took
   the room its folded box had */
[class*="st-key-projector_old_tokens_"], :has(> [class*="st-key-projector_old_tokens_"]) {display: none;}
/* each chart is drawn for 720p and for 1080p (projector_chart): the one the screen is large enough for is shown */
@media (max-width: 1799.98px), (max-height: 999.98px) {
  [class*="_for1080p"], :has(> [class*="_for1080p"]) {display: none;}
}
@media (min-width: 1800px) and (min-height: 1000px) {
  [class*="_for720p"], :has(> [class*="_for720p"]) {display: none;}
  /* the back row's floor (testkit.projector.FLOOR_PX): Streamlit's smallest type (metric labels, buttons, captions,
     the page's controls) is 0.875rem, which this rem makes 18 px at 1080p (16 px made it 14) */
  html {font-size: calc(18px / 0.875);}
  .st-key-lesson_text {gap: 16px;}  /* the type grew, not the room between the text's parts (1rem: 16 px was) */
}
@media (max-height: 800px) {  /* a 720p projector: the same share of the screen's height as 1080p's type */
  .st-key-lesson_text p, .st-key-lesson_text li {font-size: 16px; line-height: 1.4;}
  .st-key-lesson_text h3 {font-size: 22px;} .st-key-lesson_text code {font-size: 14.5px;}
  [data-testid="stMainBlockContainer"] {padding-top: 0.75rem;}
  .st-key-projector_takeaway p {font-size: 14.5px; line-height: 1.35;}
  /* no smaller than 720p's floor (testkit.projector.FLOOR_PX) */
  .st-key-projector_narration p, .st-key-projector_narration li {font-size: 14px; line-height: 1.2;}
  .st-key-lesson_text {gap: 0.55rem;}
  .st-key-lesson_text :is(th, td) {padding: 0.25rem 0.5rem; line-height: 1.35;}  /* identifiers take two lines a row */
}
</style>"""  # the projector: one screen for the room (no page list, tighter margins)


def current_dot_css(index: int) -> str:
    """Highlights the progress dot of the lesson step on screen."""
    return f"<style>.st-key-lesson_dot_{index} p {{color: var(--st-primary-color, #FF4B4B); font-weight: 700;}}</style>"
