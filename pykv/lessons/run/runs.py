"""Side runs: a lesson's ``run:`` action runs a workload to completion on an engine of its own (the
lesson's Lab is not touched) and keeps a RunSummary of what it cost, read by ``run.NAME.FIELD``."""

from __future__ import annotations

import statistics

from pykv.border.config import EngineConfig
from pykv.border.limits import MAX_STEPS
from pykv.border.workload import Workload
from pykv.engine.model.loader import LoadedModel
from pykv.gpu_model.schedule import run_totals
from pykv.lab.completed_run import run_to_completion
from pykv.lessons.run.run_cache import cached_run
from pykv.lessons.values.paths import LESSON_TARGET
from pykv.lessons.values.run_summary import RunSummary


def side_run(
    name: str, config: EngineConfig, workload: Workload, loaded: LoadedModel, max_steps: int = MAX_STEPS
) -> RunSummary:
    """Run ``workload`` to completion on a fresh engine (or recall that run's summary: ``run_cache``);
    ValueError if it does not end within ``max_steps``."""
    config = config.replace(log_stats_interval=None)
    return cached_run(
        name, config, workload, loaded, max_steps, lambda: _measure(name, config, workload, loaded, max_steps)
    )


def _measure(name: str, config: EngineConfig, workload: Workload, loaded: LoadedModel, max_steps: int) -> RunSummary:
    run = run_to_completion(config, workload, loaded, max_steps)
    if not run.done:
        raise ValueError(
            f"side run {name!r} did not finish within {max_steps} engine steps; give it a smaller "
            "workload or a larger pool."
        )

    def median(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    totals = run.totals()
    est = LESSON_TARGET.estimate()
    modelled = run_totals(est, run.reports, config.block_size, totals.output_tokens)
    return RunSummary(
        name=name,
        config=config.model_dump(),
        device=config.device,
        **totals.as_row(),
        modelled_target=est.label,
        modelled_s=modelled.modelled_s,
        modelled_tokens_per_s=modelled.tokens_per_s,
        modelled_recompute_s=modelled.recompute_s,
        modelled_swap_s=modelled.swap_s,
        modelled_delay_to_others_s=modelled.delay_to_others_s,
        ttft_p50_s=median([o.ttft_s for o in run.outputs]),
        tpot_p50_s=median([o.tpot_s for o in run.outputs]),
        outputs={o.request_id: list(o.output_token_ids) for o in run.outputs},
        metrics=run.engine.metrics.as_dict(),
        preemption_records=run.engine.preemptions(),
    )
