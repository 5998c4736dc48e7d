"""Lesson 4: Local SGD with Accelerate on real processes, with its communication counted from outside.

The training loop is the lesson's own: `train(config, model, train_set)`, slide 9's loop, written in
a `# @save` cell (built into `effitrain_lessons/local_sgd/saved.py`). The lesson runs it with
`effitrain_lessons.shared.distributed_runs`, which lesson 5 shares: `launch(configs, train,
num_processes=2)` forks real worker processes from a notebook (gloo on the CPU), runs that loop for
every configuration in them one after the other, and returns what each process measured: its rank
and `distributed_type`, the losses, and every all-reduce it made, counted by instrumentation around
the loop rather than by formula or by lines in it. This module adds what is lesson 4's own: its
runs' configuration (`LocalSGDConfig`, with section 5's simulated link), a run's row (`summary`),
the slow-link timings and their alpha-beta model (`link_timings`, `crossover`), and
`model_crossover_on`, which the exercise's check runs on a link the lesson did not show. What the
lesson prints of its runs is in `reports`, what it draws in `figures`.

The same loop runs as a module under a launcher on many GPUs and machines:

    torchrun --nproc_per_node 8 -m effitrain_lessons.local_sgd.runs --k 8 --steps 200
    accelerate launch --multi_gpu --num_processes 8 -m effitrain_lessons.local_sgd.runs --k 8 --steps 200
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from effitrain_lessons.shared import distributed_runs
from effitrain_lessons.shared.arguments import command_line, whole_numbers
from effitrain_lessons.shared.i18n import phrase
from effitrain_lessons.shared.timing import WARMUP, Ratio, Times


def nothing_learned_loss() -> float:
    """The validation loss of a model that learned nothing but how often each label occurs in the
    training rows (it predicts those frequencies for every pair): the loss a run that broke would end
    near. Lesson 4 draws it as the top of its loss axis, so a few thousandths do not look like a trend."""
    from effitrain_lessons.shared.data import tokenized_mrpc

    splits = tokenized_mrpc()
    frequencies = torch.bincount(splits["train"][:]["labels"]).double()
    frequencies /= frequencies.sum()
    return float(-frequencies.log()[splits["validation"][:]["labels"]].mean())


MODES = ("ddp", "local_sgd")


@dataclass
class LocalSGDConfig(distributed_runs.RunConfig):
    """One run of lesson 4's loop: data parallel (`mode="ddp"`), or Local SGD, which averages the
    parameters every `k` steps. Each field is also an option of `python -m
    effitrain_lessons.local_sgd.runs` (`--k`, `--batch-size`, `--no-cpu`, ...)."""

    mode: str = field(
        default="local_sgd",
        metadata={"choices": MODES, "help": "ddp: gradients every step; local_sgd: parameters every k steps"},
    )
    k: int = field(default=8, metadata={"help": "LocalSGD's local_sgd_steps"})
    # A simulated link (see `distributed_runs.Link`): 0 and 0 leave the machine's own link alone.
    latency_ms: float = field(
        default=0.0, metadata={"help": "simulated link: ms added to every collective call"}
    )
    megabits_per_s: float = field(
        default=0.0, metadata={"help": "simulated link: bandwidth in Mb/s (0: no bandwidth limit)"}
    )

    @property
    def label(self) -> str:
        if self.mode == "ddp":
            return super().label
        return self.with_accumulation(phrase("Local SGD, K = {k}", k=self.k))

    def expected_synchronizations(self) -> int:
        """Data parallel: as `RunConfig` says. LocalSGD averages parameters every k calls of `step()`
        and once more on exit: floor(steps / k) + 1."""
        if self.mode == "ddp":
            return super().expected_synchronizations()
        return self.steps // self.k + 1

    @property
    def sync_every(self) -> int:
        """Micro-batches from one synchronization to the next: K for Local SGD."""
        return self.k if self.mode == "local_sgd" else super().sync_every

    @property
    def link(self) -> distributed_runs.Link:
        """The simulated link of section 5 (this machine's own when both fields are 0)."""
        return distributed_runs.Link(self.latency_ms, self.megabits_per_s)

    def check(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                phrase("mode must be one of {modes}, got {mode!r}.", modes=MODES, mode=self.mode)
            )
        whole_numbers(k=self.k)
        distributed_runs.at_least_zero(latency_ms=self.latency_ms, megabits_per_s=self.megabits_per_s)
        super().check()


def configured(reports: list[distributed_runs.ProcessReport], **fields) -> bool:
    """Whether the run of `reports` was configured with these `fields` (`mode="ddp"`, `k=8`, ...)."""
    config = distributed_runs.config_of(reports[0])
    return all(getattr(config, name, None) == value for name, value in fields.items())


def pick(
    runs: Sequence[list[distributed_runs.ProcessReport]], **fields
) -> list[distributed_runs.ProcessReport]:
    """The first of `runs` (as a launch returns them) configured with these `fields`:
    `pick(runs, mode="local_sgd", k=8, accumulation=1)`."""
    for reports in runs:
        if configured(reports, **fields):
            return reports
    raise ValueError(phrase("No run has {fields}.", fields=fields))


def summary(reports: list[distributed_runs.ProcessReport]) -> dict:
    """One row of the lesson's results table from the reports of one run (all processes): the shared
    `distributed_runs.summary`, with the run's K (None for data parallel)."""
    row = distributed_runs.summary(reports)
    config = distributed_runs.config_of(reports[0])
    k = config.k if getattr(config, "mode", "ddp") == "local_sgd" else None
    return {"run": row.pop("run"), "k": k, **row}


WINDOWS = 2  # timed windows of K steps in each run on a simulated link (data parallel: twice as many)


def timed_steps(sync_every: int, windows: int = WINDOWS) -> int:
    """The steps a run needs for `windows` timed windows of `sync_every` steps after the warm-up
    (`ProcessReport.step_times`); a step's time is read at the next step's start: one more."""
    return WARMUP + windows * sync_every + 1


def link_sweep(
    links: Mapping[str, distributed_runs.Link], ks: Sequence[int], windows: int = WINDOWS, **settings
) -> dict[tuple[str, int | None], LocalSGDConfig]:
    """One run per link and K: data parallel (K None) and Local SGD at each K in `ks`, each just long
    enough to time `windows` windows of its K steps (data parallel: twice as many single steps), on
    the simulated link (`settings`: other LocalSGDConfig fields, the same for all)."""
    sweep = {}
    for name, link in links.items():
        for k in (None, *ks):
            mode = {"mode": "ddp"} if k is None else {"mode": "local_sgd", "k": k}
            sweep[name, k] = LocalSGDConfig(
                **mode,
                steps=timed_steps(1, 2 * windows) if k is None else timed_steps(k, windows),
                latency_ms=link.latency_ms,
                megabits_per_s=link.megabits_per_s,
                **{"evaluate": False, **settings},  # timed, not evaluated
            )
    return sweep


def link_seconds_per_step(report: distributed_runs.ProcessReport, link: distributed_runs.Link) -> float:
    """What `link` adds to a step of a run like `report`, if nothing hides it: its time for the
    collective calls of one synchronization (latency + bytes / bandwidth each, the mean over the
    run's synchronizations), over the steps from one synchronization to the next."""
    syncs = report.calls_by_synchronization()
    if not syncs:
        return 0.0
    per_sync = sum(sum(link.seconds(size) for size in calls) for calls in syncs.values()) / len(syncs)
    return per_sync / distributed_runs.config_of(report).sync_every


def predicted_seconds_per_step(
    fast: distributed_runs.ProcessReport,
    slow: distributed_runs.ProcessReport,
    link: distributed_runs.Link,
) -> float:
    """The alpha-beta model: the median time per step of the same training on this machine's own link
    (`fast`), plus `link`'s time for the collective calls the run on the link counted (`slow`,
    `link_seconds_per_step`), none hidden."""
    own = fast.step_times(distributed_runs.config_of(fast).sync_every)
    return own.median + link_seconds_per_step(slow, link)


def crossover(
    local_sgd: distributed_runs.ProcessReport, data_parallel: distributed_runs.ProcessReport, link
) -> float:
    """The K beyond which the alpha-beta model has Local SGD faster than data parallel on `link`,
    if compute is the same in both: the link's time for one average (its calls as `local_sgd`
    counted them) over its time for one step of data parallel (as `data_parallel` counted them).
    Less bandwidth brings it down toward 1; more latency raises it toward the calls an average
    makes over the calls a step makes."""

    def per_sync(report) -> float:
        syncs = report.calls_by_synchronization()
        return sum(sum(link.seconds(size) for size in calls) for calls in syncs.values()) / len(syncs)

    return per_sync(local_sgd) / (
        per_sync(data_parallel) / distributed_runs.config_of(data_parallel).sync_every
    )


@dataclass
class LinkTiming:
    """Lesson 4's timing on one link: the time per step measured (`Times`, seconds) and the model's
    (seconds), for data parallel and for Local SGD at each K, and the model's crossover."""

    name: str
    link: distributed_runs.Link
    data_parallel: Times  # measured on the link
    data_parallel_model: float  # seconds per step, the alpha-beta model's
    local_sgd: dict[int, tuple[Times, float]]  # per K: measured, the model's
    model_crossover: float  # the K beyond which the model has Local SGD faster (`crossover`)

    def against_data_parallel(self, k: int) -> Ratio:
        """Local SGD's time per step at `k` over data parallel's, with the range their spreads allow."""
        return self.local_sgd[k][0] / self.data_parallel

    @property
    def measured_crossover(self) -> tuple[int | None, int] | None:
        """(the largest K measured not clearly faster, the smallest K measured clearly faster) than
        data parallel, such that every larger K was clearly faster too; (None, K) when even the
        smallest K was; None when the largest was not. Clearly: the whole range of the ratio of the
        two times below 1 (`Ratio`)."""
        ks = sorted(self.local_sgd)
        faster = [self.against_data_parallel(k).high < 1 for k in ks]
        for index, k in enumerate(ks):
            if all(faster[index:]):
                return (ks[index - 1] if index else None, k)
        return None

    def describe_crossover(self) -> str:
        """Where Local SGD was measured clearly faster, to follow "link A:"."""
        found = self.measured_crossover
        if found is None:
            return phrase("not clearly faster at any K up to {k}", k=max(self.local_sgd))
        below, at = found
        if below is None:
            return phrase("clearly faster from K = {k}", k=at)
        return phrase("clearly faster from K = {at}, not at K = {below}", below=below, at=at)


def fast_runs(measured: Iterable[tuple[LocalSGDConfig, list]]) -> dict:
    """From (configuration, reports) pairs, the first run of each K (None: data parallel) on this
    machine's own link, without accumulation and with DDP's default buckets: the model's compute."""
    fast = {}
    for config, reports in measured:
        plain = config.accumulation == 1 and config.bucket_mb == LocalSGDConfig.bucket_mb
        if plain and not config.link.simulated:
            fast.setdefault(config.k if config.mode == "local_sgd" else None, reports)
    return fast


def link_timings(
    links: Mapping[str, distributed_runs.Link],
    sweep: Mapping[tuple[str, int | None], LocalSGDConfig],
    runs: Sequence[list[distributed_runs.ProcessReport]],
    measured_fast: Iterable[tuple[LocalSGDConfig, list]],
) -> list[LinkTiming]:
    """Each link's timing from a `link_sweep` launched in order (`runs`). The model takes its
    compute time from runs of the same K on this machine's own link (`measured_fast`: the
    (configuration, reports) pairs of an earlier launch, see `fast_runs`). Times are the slowest
    process's (`distributed_runs.slowest`)."""
    measured = dict(zip(sweep, runs))
    fast = fast_runs(measured_fast)
    timings = []
    for name, link in links.items():
        ks = sorted(k for each, k in sweep if each == name and k is not None)
        missing = [k for k in (None, *ks) if k not in fast]
        if missing:
            raise ValueError(
                phrase(
                    "The model needs a run on this machine's own link for each K; none for {missing}.",
                    missing=missing,
                )
            )
        timed = {k: _timed(measured[name, k], fast[k][0], link) for k in (None, *ks)}
        timings.append(
            LinkTiming(
                name,
                link,
                *timed.pop(None),
                timed,
                crossover(measured[name, ks[-1]][0], measured[name, None][0], link),
            )
        )
    return timings


def _timed(on_link: list, fast: distributed_runs.ProcessReport, link) -> tuple[Times, float]:
    """A run on `link`: its slowest process's time per step, and the model's."""
    every = distributed_runs.config_of(on_link[0]).sync_every
    return distributed_runs.slowest(on_link, every), predicted_seconds_per_step(fast, on_link[0], link)


def model_crossover_on(link: distributed_runs.Link, **settings) -> int:
    """The smallest whole K from which section 5's alpha-beta model has Local SGD faster than data
    parallel on `link`, with section 2's loop in 2 processes: the whole K above `crossover`'s K*. The
    calls and their bytes are counted in a short launch of each (`settings`: other LocalSGDConfig
    fields, e.g. layers, batch_size), so the answer depends on the loop, not on how busy the machine
    is. Lesson 4's exercise checks a prediction with it."""
    from effitrain_lessons.local_sgd.saved import train

    short = {"evaluate": False, **settings}
    data_parallel, local_sgd = distributed_runs.launch(
        [
            LocalSGDConfig(mode="ddp", steps=2, **short),
            LocalSGDConfig(mode="local_sgd", k=2, steps=2, **short),
        ],
        train,
        num_processes=2,
    )
    return math.floor(crossover(local_sgd[0], data_parallel[0], link)) + 1


def _lesson_04_loop():
    from effitrain_lessons.local_sgd.saved import train

    return train


def main(argv: list[str] | None = None) -> int:
    """Run lesson 4's loop (its `# @save` cell) in this process under a launcher, counting all-reduces."""
    config = command_line(
        LocalSGDConfig,
        argv,
        prog="python -m effitrain_lessons.local_sgd.runs",
        description="Lesson 04's training with Local SGD (or plain data parallel), counting its "
        "all-reduces. Start it with torchrun or accelerate launch for several processes.",
    )
    return distributed_runs.run_under_launcher(config, _lesson_04_loop)


if __name__ == "__main__":
    sys.exit(main())
