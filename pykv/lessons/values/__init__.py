"""What a lesson reads off a step: value paths (``paths``, checked at load by ``path_checks``), the roots that are no
engine state (``sizing``, ``tokens``, ``run_summary``), and the ``expect`` checks and ``{{ }}`` templates over them
(``checks``). Light: nothing here imports the engine."""
