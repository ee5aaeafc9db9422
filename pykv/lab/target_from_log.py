"""The modelled target a server's diagnosis points to: the model its log names (``--model``, a Hugging Face id or a
path) matched to the cost model's catalogue (``pykv.gpu_model.MODELS``), or None with the reason, for the page's
picker to take over. A log does not name its GPU: that stays the picker's.

Matching: the name's last path part, lower-case, must contain a catalogue name (``llama-3.1-8b`` in
``meta-llama/Meta-Llama-3.1-8B-Instruct``); the longest such name wins (``llama-3.1-70b`` over nothing shorter that
also fits). No nearest-size guess: pricing a 14B model as a 7B one would be a silent error."""

from __future__ import annotations

from dataclasses import dataclass

from pykv.gpu_model import MODELS


@dataclass(frozen=True)
class LogModel:
    named: str | None  # what the log said (None: it named none)
    catalogue: str | None  # the catalogue's name for it (None: not in the catalogue)

    def note(self) -> str:
        if self.named is None:
            return "the log does not name its model: pick the one it serves"
        if self.catalogue is None:
            return (
                f"the log names {self.named}, which the cost model's catalogue does not have: pick the nearest "
                "shape (same family, same size if there is one); the figures are then that model's"
            )
        return f"the log names {self.named}: priced as {MODELS[self.catalogue]}"


def log_model(named: str | None) -> LogModel:
    if not named:
        return LogModel(None, None)
    base = named.strip().rstrip("/").rsplit("/", 1)[-1].lower().replace("meta-llama-", "llama-")
    fits = [key for key in MODELS if key in base]
    return LogModel(named, max(fits, key=len) if fits else None)
