"""Lesson 4's results in words: what its runs counted and timed, said in the lesson's language.

The lesson's cells write the loop, choose the runs and launch them (`notebook_launcher`, `launch`);
the tables, comparisons and figure labels of what those runs measured are written here. Every
function takes runs as a launch returns them (a run: one `ProcessReport` per process, process 0
first), reads each run's configuration from its reports (`config_of`), and returns a `Table`, a
result that prints itself (`print(result)`) in the language in use, or a figure's labelled data.
Nothing here runs a loop.

Used by lesson 4, sections 3 to 6, in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from effitrain_lessons.local_sgd.runs import (
    LinkTiming,
    configured,
    nothing_learned_loss,
    pick,
    predicted_seconds_per_step,
    summary,
)
from effitrain_lessons.shared.distributed_runs import ProcessReport, compared, config_of, slowest
from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsLines, Table
from effitrain_lessons.shared.timing import Times

Run = list[ProcessReport]  # one run: a report per process, process 0 first


# Section 3: communication, counted ------------------------------------------------------------


def _yes_no(answer: bool) -> str:
    return _("yes") if answer else _("NO")  # NO in capitals: the answer that needs looking into


def _ms(times: Times | None) -> str:
    """'17.8 (16.0-19.5)': the median time per step in ms, and the middle half of the windows."""
    return times.milliseconds() if times is not None else "-"


def results(runs: Sequence[Run]) -> Table:
    """Lesson 4's results table: one row per run, as counted in process 0."""
    rows = []
    for reports in runs:
        row = summary(reports)
        rows.append(
            [
                row["run"],
                row["steps"],
                row["synchronizations"],
                row["expected"],
                row["allreduce_calls"],
                format_number(row["megabytes"], ".2f"),
                row["gradient_allreduces"],
                format_number(row["eval_loss"], ".4f"),
                format_number(row["eval_accuracy"], ".3f"),
                _ms(row["step_time"]),
                _yes_no(row["same_in_every_process"]),
                _yes_no(row["equal_at_end"]),
            ]
        )
    return Table(
        [
            "run",
            "steps",
            "synchronizations",
            "rule",
            "all-reduce calls",
            "MB sent",
            "gradient all-reduces",
            "validation loss",
            "validation accuracy",
            "ms per step (middle half)",
            "same counts in every process",
            "identical parameters at the end",
        ],
        rows,
        notes=[
            _(
                "synchronizations: rounds of communication counted in process 0; rule: the optimizer steps "
                "for data parallel, floor(steps / K) + 1 for Local SGD (the + 1 is the average on exit); MB "
                "sent: all-reduced by process 0. ms per step: wall time, the median over windows of K steps "
                "(one synchronization each) after 2 warm-up steps, in the slowest process; in brackets the "
                "middle half of the windows. Two runs whose brackets overlap are not clearly apart."
            )
        ],
    )


def per_synchronization(runs: Sequence[Run]) -> Table:
    """K = 1 against data parallel, per synchronization: the MB sent and the all-reduce calls, and
    the time of a step, which holds one synchronization in both. The first run of each in `runs`,
    without accumulation; the note says whether K = 1's steps were clearly longer."""
    pair = [
        summary(pick(runs, mode="local_sgd", k=1, accumulation=1)),
        summary(pick(runs, mode="ddp", accumulation=1)),
    ]

    def each(key: str, spec: str) -> list[str]:
        return [format_number(row[key] / row["synchronizations"], spec) for row in pair]

    ratio = pair[0]["step_time"] / pair[1]["step_time"]
    return Table(
        ["per synchronization", "K = 1", "data parallel"],
        [
            [_("MB"), *each("megabytes", ".3f")],
            [_("all-reduce calls"), *each("allreduce_calls", ".0f")],
            [_("ms a step takes (one synchronization each)"), *[_ms(row["step_time"]) for row in pair]],
        ],
        notes=[
            phrase(  # the ratio's parts apart, so that a language can say it in words ("1,05 katı")
                "K = 1's step took {median:.2f}x ({low:.2f}x-{high:.2f}x) data parallel's: {verdict}.",
                median=ratio.median,
                low=ratio.low,
                high=ratio.high,
                verdict=compared(ratio),
            )
        ],
    )


def agreement(reports: Run, steps: int | None = None) -> str:
    """One character per step: '=' where every process held bit-identical parameters after the
    step, '.' where they differed."""
    fingerprints = [report.fingerprints[:steps] for report in reports]
    return "".join("=" if len(set(step)) == 1 else "." for step in zip(*fingerprints))


@dataclass(frozen=True, repr=False)
class Agreement(ShowsAsLines):
    """Each run's `agreement`, after its run's label."""

    strips: dict[str, str]  # the run's label -> its agreement

    def lines(self) -> list[str]:
        width = max(len(label) for label in self.strips) + 1
        return [f"{label + ':':{width}} {strip}" for label, strip in self.strips.items()]


def agreement_by_run(runs: Sequence[Run], steps: int | None = None) -> Agreement:
    """Where the processes of each run agreed over its first `steps` steps, labelled with the run."""
    return Agreement({config_of(run[0]).label: agreement(run, steps) for run in runs})


def sync_steps(runs: Sequence[Run], megabytes: bool = False) -> dict[str, list[int]]:
    """The steps after which process 0 of each run synchronized, by the run's label (with the MB it
    all-reduced, when `megabytes`): what `plot_sync_timeline` draws."""
    drawn = {}
    for run in runs:
        label = config_of(run[0]).label
        if megabytes:
            label = phrase("{run}: {mb:.1f} MB", run=label, mb=run[0].allreduce_bytes / 1e6)
        drawn[label] = run[0].sync_steps
    return drawn


# Section 4: what fewer synchronizations cost ----------------------------------------------------


@dataclass(frozen=True, repr=False)
class LossesCompared(ShowsAsLines):
    """The final validation loss of Local SGD at one K against two data-parallel runs (two seeds),
    and the loss of a model that learned nothing."""

    k: int
    local: float
    data_parallel: float
    other_seed: float
    nothing_learned: float
    tolerance: float = 0.05  # how far from data parallel the lesson still calls "as good"

    def lines(self) -> list[str]:
        return [
            phrase(
                "validation loss: data parallel {ddp:.4f} (another seed: {other_order:.4f}), "
                "Local SGD K = {k} {local:.4f}",
                ddp=self.data_parallel,
                other_order=self.other_seed,
                k=self.k,
                local=self.local,
            ),
            phrase(
                "K = {k} against data parallel: {gap:.4f} (tolerance {tolerance:g}); "
                "two data-parallel runs differ by {spread:.4f}",
                k=self.k,
                gap=abs(self.local - self.data_parallel),
                tolerance=self.tolerance,
                spread=abs(self.data_parallel - self.other_seed),
            ),
            phrase(
                "a model that learned nothing (it predicts the labels' frequencies): {loss:.2f}",
                loss=self.nothing_learned,
            ),
        ]


def losses_compared(runs: Sequence[Run], k: int = 8, tolerance: float = 0.05) -> LossesCompared:
    """The first Local SGD run at `k` in `runs` against the first two data-parallel runs (two
    seeds), all without accumulation, in process 0's validation loss."""
    data_parallel = [run for run in runs if configured(run, mode="ddp", accumulation=1)][:2]
    if len(data_parallel) < 2:
        raise ValueError(_("losses_compared needs two data-parallel runs (two seeds) to compare with."))
    local = pick(runs, mode="local_sgd", k=k, accumulation=1)
    return LossesCompared(
        k,
        local[0].eval_loss,
        data_parallel[0][0].eval_loss,
        data_parallel[1][0].eval_loss,
        nothing_learned_loss(),
        tolerance,
    )


# Section 5: a slow link -------------------------------------------------------------------------


def link_table(timings: Sequence[LinkTiming]) -> Table:
    """Lesson 4's slow-link table: per link, the time per step of data parallel and of Local SGD at
    each K (median and middle half, the slowest process), the model's crossover K* and where Local
    SGD was measured clearly faster."""
    ks = sorted(timings[0].local_sgd)
    return Table(
        [
            "link",
            "data parallel",
            *[phrase("Local SGD, K = {k}", k=k) for k in ks],
            "model: faster for K above",
            "measured",
        ],
        [
            [
                f"{timing.name}: {timing.link.describe()}",
                _ms(timing.data_parallel),
                *[_ms(timing.local_sgd[k][0]) for k in ks],
                format_number(timing.model_crossover, ".2f"),
                timing.describe_crossover(),
            ]
            for timing in timings
        ],
        notes=[
            _(
                "ms per step, measured on the simulated link: the median over windows of K steps, in "
                "brackets their middle half, in the slowest process. model: K* = the link's time for "
                "one average over its time for one step of data parallel (latency + bytes / bandwidth "
                "for each call counted). measured: where Local SGD's whole range of times stayed below "
                "data parallel's."
            )
        ],
    )


@dataclass(frozen=True, repr=False)
class SmallBuckets(ShowsAsLines):
    """Data parallel in small buckets on a slow link: its time per step, measured and predicted with
    nothing hidden, against one bucket; and how much of the link's time the backward pass hid."""

    link: str  # the link's name
    buckets: float  # gradient buckets a step
    measured: Times  # time per step in small buckets, on the link
    predicted: float  # the model's, nothing hidden (seconds)
    one_bucket: Times  # time per step in one bucket, on the same link
    own_link: Times  # time per step in small buckets, on this machine's own link

    def lines(self) -> list[str]:
        return [
            phrase(
                "data parallel in {buckets:.0f} buckets a step, link {link}: {measured} per step, "
                "{predicted:.1f} predicted with nothing hidden; one bucket: {one}",
                buckets=self.buckets,
                link=self.link,
                measured=self.measured.milliseconds(),
                predicted=1000 * self.predicted,
                one=self.one_bucket.milliseconds(),
            ),
            phrase(
                "the backward pass hid {hidden:.1f} ms of the link's {link:.1f} ms a step (medians)",
                hidden=max(0.0, 1000 * (self.predicted - self.measured.median)),  # noise can make it < 0
                link=1000 * (self.predicted - self.own_link.median),
            ),
        ]


def small_buckets(fast: Run, slow: Run, timing: LinkTiming) -> SmallBuckets:
    """Data parallel in small buckets: its run on this machine's own link (`fast`) and on `timing`'s
    link (`slow`), against `timing`'s data parallel in one bucket."""
    first = slow[0]
    return SmallBuckets(
        link=timing.name,
        buckets=len(first.gradient_allreduces) / len(first.step_starts),
        measured=slowest(slow),
        predicted=predicted_seconds_per_step(fast[0], first, timing.link),
        one_bucket=timing.data_parallel,
        own_link=slowest(fast),
    )


# Section 6: gradient accumulation -----------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Accumulated(ShowsAsLines):
    """A Local SGD run with gradient accumulation: its synchronizations against the rule, the steps
    after which process 0 made them, and how many gradients it all-reduced."""

    run: str
    synchronizations: int
    steps: int
    k: int
    sync_steps: list[int]
    gradient_allreduces: int

    def lines(self) -> list[str]:
        return [
            phrase(
                "{run}: {syncs} synchronizations (floor({steps} / {k}) + 1 = {expected}), "
                "at steps {at} (-1: on exit); gradient all-reduces: {gradients}",
                run=self.run,
                syncs=self.synchronizations,
                steps=self.steps,
                k=self.k,
                expected=self.steps // self.k + 1,
                at=self.sync_steps,
                gradients=self.gradient_allreduces,
            )
        ]


def with_accumulation(run: Run) -> Accumulated:
    """What process 0 of a Local SGD run with gradient accumulation counted."""
    config, first = config_of(run[0]), run[0]
    return Accumulated(
        config.label,
        first.synchronizations,
        config.steps,
        config.k,
        first.sync_steps,
        len(first.gradient_allreduces),
    )
