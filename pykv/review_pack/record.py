"""RunRecord: one run to review, whichever front end made it: a config, the whole history of snapshots
and the engine's Prometheus text after the last one, with what the link back into the lab needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykv.border.config import EngineConfig
from pykv.border.snapshot import Snapshot
from pykv.border.workload import Workload
from pykv.engine.max_model_len import fit_max_model_len
from pykv.gpu_model import DEFAULT_TARGET, Target
from pykv.lab.lab import Lab
from pykv.review_pack.deep_link import app_address, link_caveats, playground_query


@dataclass(frozen=True)
class RunRecord:
    """A run to review: ``snapshots`` is its whole history (steps 0..N), ``metrics_text`` the engine's
    Prometheus text after the last of them."""

    config: EngineConfig
    snapshots: tuple[Snapshot, ...]
    metrics_text: str
    workload: Workload | None = None
    preset: str | None = None  # the preset the workload came from (None: a file, a lesson, none)
    preset_args: dict = field(default_factory=dict)  # preset arguments other than its defaults (n, max_tokens)
    seed: int = 0  # the workload's seed
    manual_requests: int = 0  # requests added by hand (the Playground's Add request)
    done: bool = True  # every request finished
    note: str | None = None  # why the run stopped where it did, when that is not its end
    view_step: int | None = None  # the step the app showed when the pack was asked for
    app_link: str | None = None  # a link into the app that stands for the run instead (a lesson's step)
    lab_root: str | None = None  # the lab's address, links made absolute under it (None: unknown, links relative)
    max_model_len: int | None = None  # the length the engine ran with (pykv fits an unset one to the pool)
    target: Target = DEFAULT_TARGET  # the GPU + model the pack's modelled section prices the schedule on

    @property
    def last(self) -> Snapshot:
        return self.snapshots[-1]

    @property
    def file_workload(self) -> bool:
        """The workload came from a file or a lesson, which no Playground link can name."""
        return self.workload is not None and self.preset is None

    @property
    def link(self) -> str | None:
        """The Playground link to the run's last step (absolute under ``lab_root``, else relative), or None where no
        link can name the workload."""
        if self.file_workload:
            return None
        return app_address(playground_query(self.config, self.preset, self.last.step), self.lab_root)

    def link_caveats(self) -> list[str]:
        return link_caveats(self.config, self.file_workload, self.seed, self.preset_args, self.manual_requests)


def metrics_from_snapshot(snapshot: Snapshot) -> str:
    """Prometheus-style text rebuilt from a snapshot's samples (a snapshot keeps no HELP, TYPE or histogram
    buckets), for a history whose engine is gone."""
    lines = [f"# rebuilt from the snapshot of step {snapshot.step}: samples only, no HELP/TYPE or buckets"]
    lines += [f"{name} {value!r}" for name, value in sorted(snapshot.metrics.items())]
    return "\n".join(lines) + "\n"


def record_from_lab(lab: Lab, **extra) -> RunRecord:
    """The Lab's whole history (to its head) as a RunRecord; ``extra`` sets other fields. Never steps or
    replays the engine: the metrics text is the live engine's when it stands at the head, else it is
    rebuilt from the last snapshot."""
    snapshots = tuple(lab.snapshots)
    engine = lab.live_engine
    if engine is not None and engine.step_count == snapshots[-1].step:
        metrics = engine.metrics.exposition()
    else:
        metrics = metrics_from_snapshot(snapshots[-1])
    assert lab.loaded is not None  # the Lab's first engine loaded it
    fitted, _ = fit_max_model_len(lab.config, lab.loaded.config.max_position_embeddings, snapshots[-1].bytes_per_block)
    values: dict[str, Any] = dict(
        config=lab.config,
        snapshots=snapshots,
        metrics_text=metrics,
        workload=lab.workload,
        preset=lab.preset,
        seed=lab.seed,
        manual_requests=len(lab.manual),
        done=lab.engine_done(),
        view_step=lab.cursor,
        max_model_len=fitted,
    )
    return RunRecord(**(values | extra))
