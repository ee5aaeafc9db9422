"""What the server does once, while uvicorn imports app.py and before it serves anyone.

- Warm the heavy imports (numpy, pandas, plotly, torch, transformers, Triton's interpreter, the pages app.py
  imports itself): ten tabs opened at once on a fresh server ran ten first imports of numpy and torch in ten
  script threads, and six of them drew "partially initialized module 'numpy'" instead of the app.
- Guard the HTTP server's connections (server_guard.py).
- Print class mode's passphrase when the server made one (pykv/classroom/host_keys.py).
"""

from __future__ import annotations

import importlib
import logging
import os
import time

from pykv.engine.model.attention import prepare_stepwise_attention
from pykv.ui.session import server_guard
from pykv.ui.session.classroom import server_keys

# Imported before the first session runs, in this order (Triton's interpreter is switched on first: on a CPU it must
# be on before anything imports triton). The pages themselves are imported by app.py (session/ is below pages/).
WARM_MODULES = (
    "numpy",
    "pandas",
    "plotly.graph_objects",
    "plotly.io",
    "torch",
    "transformers",
    "pykv_kernels.triton_backend",
    "pykv.ui.session.classroom",
    "pykv.ui.session.follow_push",
)

_log = logging.getLogger("pykv")


def warm_imports(modules: tuple[str, ...] = WARM_MODULES) -> list[str]:
    """Import ``modules`` now, on this one thread; the ones that could not be (an optional package): named. Triton
    only where it will run (Triton's interpreter on, or CUDA): imported compiled on a CPU, it could not be switched to
    the interpreter for an engine that asks for it later."""
    prepare_stepwise_attention()
    missing = []
    for name in modules:
        if name.startswith("pykv_kernels.triton") and not _triton_runs():
            continue
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def before_serving() -> None:
    """The guard, the passphrase, the imports (see the module's docstring)."""
    start = time.perf_counter()
    guard = server_guard.install()
    server_keys()
    missing = warm_imports()
    _log.info(
        "pykv server ready in %.1f s: %s%s",
        time.perf_counter() - start,
        guard or "no uvicorn to guard",
        f"; not installed: {', '.join(missing)}" if missing else "",
    )


def _triton_runs() -> bool:
    if os.environ.get("TRITON_INTERPRET"):
        return True
    import torch

    return bool(torch.cuda.is_available())
