"""The course's lessons, in order: the one list every part of the course reads.

Each `Lesson` says where the lesson lives (its master `lessons/<name>.ipynb`, its editions
`notebooks/<name>.ipynb`, its package `effitrain_lessons.<slug>`), what it is called in each
language, how long it takes, which graded questions it asks, which figure functions its cells call,
and how long a Run All may take on a laptop CPU. The tests, the benchmarks, the browser tests, the
layer rules, lesson 00's course map and the READMEs' lesson tables read this table or are checked
against it; `effitrain info --lessons --json` prints it.

Adding a lesson starts here (README, "Adding a lesson").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

PACKAGE = "effitrain_lessons"


@dataclass(frozen=True)
class Lesson:
    number: str  # two digits: "00"
    slug: str  # the lesson's topic, and its package's name: "first_principles"
    file: str  # the notebook's stem, the same in lessons/ and notebooks/: "01_checkpointing_first_principles"
    title_en: str  # as lesson 00's course map and the READMEs' lesson tables name it
    title_tr: str
    minutes: int  # reading, running the cells, the quiz and the exercises
    questions: tuple[str, ...]  # the graded questions, in the order the lesson asks them
    figures: tuple[str, ...]  # the figure functions of its package that its cells call
    budget_s: float = 60.0  # Run All on a 2-core laptop CPU, at most (make bench)
    slides: str = ""  # the course slides it follows ("1-2"), or "" beyond the deck

    @property
    def package(self) -> str:
        """The lesson's sub-package, dotted: its measuring code, figures, quiz and `# @save` code."""
        return f"{PACKAGE}.{self.slug}"

    @property
    def notebook(self) -> str:
        """The edition's file name, in notebooks/ (English), notebooks/tr/ and their solutions/."""
        return f"{self.file}.ipynb"

    def as_dict(self) -> dict:
        return {**asdict(self), "package": self.package, "notebook": self.notebook}


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "00",
        "start_here",
        "00_start_here",
        "Start here",
        "Buradan başlayın",
        minutes=20,
        questions=("q_bytes", "q_score_bytes", "q_trade_places"),
        figures=("plot_saved_by_shape",),
    ),
    Lesson(
        "01",
        "first_principles",
        "01_checkpointing_first_principles",
        "Gradient checkpointing from first principles",
        "Gradyan kontrol noktalarının temelleri",
        minutes=45,
        questions=("q_checkpoint_block", "q_keep_matmuls", "q_choose_segments"),
        figures=("plot_checkpoint_graph", "plot_memory_breakdown", "draw_checkpointing_memory"),
        slides="1-2",
    ),
    Lesson(
        "02",
        "with_trainer",
        "02_checkpointing_with_trainer",
        "Gradient checkpointing with `Trainer`",
        "`Trainer` ile gradyan kontrol noktaları",
        minutes=45,
        questions=("q_memory_budget", "q_step_flops"),
        figures=("plot_checkpointing_cost", "plot_trainer_vs_accelerator"),
        slides="3-4",
    ),
    Lesson(
        "03",
        "with_accelerator",
        "03_checkpointing_with_accelerator",
        "Gradient checkpointing with `Accelerator`",
        "`Accelerator` ile gradyan kontrol noktaları",
        minutes=40,
        questions=("q_steps_per_process", "q_half_memory"),
        figures=("plot_schedules", "plot_loop_curves"),
        slides="5-6",
    ),
    Lesson(
        "04",
        "local_sgd",
        "04_local_sgd",
        "Local SGD",
        "Yerel SGD",
        minutes=45,
        questions=("q_predict_syncs", "q_crossover_k"),
        figures=(
            "draw_data_parallel_and_local_sgd",
            "plot_local_sgd_sweep",
            "plot_sync_timeline",
            "plot_loss_against_bytes",
            "plot_link_timings",
        ),
        slides="7-9",
    ),
    Lesson(
        "05",
        "diloco",
        "05_diloco",
        "From Local SGD to DiLoCo",
        "Yerel SGD'den DiLoCo'ya",
        minutes=45,
        questions=("q_outer_momentum", "q_communication"),
        figures=("draw_diloco", "plot_diloco_losses", "plot_outer_steps", "plot_bytes_against_loss"),
    ),
    Lesson(
        "06",
        "will_it_fit",
        "06_will_it_fit",
        "Will it fit?",
        "Sığar mı?",
        minutes=50,
        questions=("q_layer_bytes", "q_checkpointed_bytes"),
        figures=("plot_memory_estimates", "plot_recompute_pareto"),
    ),
    Lesson(
        "07",
        "own_model",
        "07_checkpoint_your_own_model",
        "Checkpointing your own model",
        "Kendi modelinize kontrol noktası uygulamak",
        minutes=40,
        questions=("q_choose_blocks", "q_predict_peak"),
        figures=("plot_peaks",),
    ),
    Lesson(
        "08",
        "mixed_precision",
        "08_mixed_precision",
        "Mixed precision, measured",
        "Karma hassasiyeti ölçmek",
        minutes=45,
        questions=("q_autocast_bytes",),
        figures=("plot_saved_by_tokens", "plot_gradient_magnitudes"),
    ),
    Lesson(
        "09",
        "sharding",
        "09_sharding",
        "Sharding: what checkpointing cannot shrink",
        "Bölüştürme: kontrol noktalarının küçültemediği baytlar",
        minutes=45,
        questions=("q_sharded_most",),
        figures=("plot_per_process",),
    ),
)


def lesson(which: str) -> Lesson:
    """The lesson `which` names: its number ("04", "4"), its file name or its slug.

    Raises ValueError with the lessons there are when it names none.
    """
    text = str(which).strip()
    for each in LESSONS:
        if text in (each.number, each.file, each.slug, each.notebook) or (
            text.isdigit() and int(text) == int(each.number)
        ):
            return each
    known = ", ".join(each.number for each in LESSONS)
    raise ValueError(f"There is no lesson {text[:80]!r}: the lessons are {known}.")
