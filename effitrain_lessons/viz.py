"""The old home of every lesson's figures, kept so that a notebook that imports from here still runs.

Each lesson's figures now sit beside the module that measures the lesson (`checkpointing_figures`
beside `checkpointing`, `local_sgd_figures` beside `local_sgd`, ...), and their common style is in
`plotting`. Importing a figure from here gives it, with a FutureWarning that says where it lives
now (`effitrain_lessons.moved`); this module goes in the next minor version.
"""

from __future__ import annotations

from effitrain_lessons.moved import moved_names

_FIGURES = {
    "effitrain_lessons.plotting": ("STATUS_COLOURS", "MEMORY_COLOURS"),
    "effitrain_lessons.checkpointing_figures": (
        "plot_memory_breakdown",
        "plot_checkpoint_graph",
        "plot_segments_tradeoff",
        "segments_explorer",
        "draw_checkpointing_memory",
    ),
    "effitrain_lessons.trainer_figures": ("plot_trainer_vs_accelerator", "plot_checkpointing_cost"),
    "effitrain_lessons.train_loop_figures": ("plot_loop_curves", "plot_schedules"),
    "effitrain_lessons.local_sgd_figures": (
        "draw_data_parallel_and_local_sgd",
        "plot_sync_timeline",
        "plot_local_sgd_sweep",
        "plot_loss_against_bytes",
        "local_sgd_explorer",
    ),
    "effitrain_lessons.diloco_figures": ("draw_diloco", "plot_diloco_losses", "diloco_explorer"),
    "effitrain_lessons.plan_figures": (
        "PLAN_COLOURS",
        "plot_memory_estimates",
        "plan_explorer",
        "plot_recompute_pareto",
    ),
}
MOVED = {name: module for module, names in _FIGURES.items() for name in names}
__getattr__ = moved_names(__name__, MOVED)
