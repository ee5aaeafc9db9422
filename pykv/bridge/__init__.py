"""Bridge: reads what a real vLLM server printed (logs), scraped (Prometheus) and served (traces), and diagnoses it.

Pure: no torch, no streamlit; of the rest of pykv it imports only pykv.border.files (opening and writing the files
a user names: never a FIFO, a device or a half-written file).
"""

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.baseline import compare, load_baseline, save_baseline
from pykv.bridge.diagnose import diagnose, sniff
from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.metrics.prometheus_range import fetch_range
from pykv.bridge.traces.reader import TraceParse, TraceRequest, read_trace

__all__ = [
    "BridgeInputError",
    "Diagnosis",
    "TraceParse",
    "TraceRequest",
    "compare",
    "diagnose",
    "fetch_range",
    "load_baseline",
    "read_trace",
    "save_baseline",
    "sniff",
]
