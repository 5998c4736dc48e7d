"""Lesson 5's comparisons: what one run's numbers say against another's, in the lesson's language.

The lesson's cells write and launch the loop and say which runs they compare; the tables, verdicts
and figure labels of those comparisons are written here. Every function takes runs as
`distributed_runs.launch` returns them (a run: one `ProcessReport` per process, process 0 first),
reads each run's configuration from its reports (`config_of`), and returns a `Table`, a result
that prints itself (`print(result)`), or a figure's labelled data (`Curves`, `OuterStepTest`,
`BytesPlane`) for the lesson's `plot_*` calls. Nothing here runs a loop.

Used by lesson 5, sections 3 to 8, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from effitrain_lessons.diloco.runs import OptimizerWatch, OuterStep, row, run_name
from effitrain_lessons.shared.distributed_runs import ProcessReport, compared, config_of
from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsTable, Table

Run = list[ProcessReport]  # one run: a report per process, process 0 first

PAPER_H = 500  # the DiLoCo paper's inner steps per outer step

# One colour per setting in every figure of the lesson; the seeds of a setting share it.
COLOURS = {
    ("ddp",): "#4c72b0",
    ("local_sgd", 8): "#937860",
    ("local_sgd", 32): "#f08c2e",
    ("diloco", 8, 0.7, 0.9): "#d1495b",
    ("diloco", 32, 0.7, 0.9): "#3a9e6f",
    ("diloco", 8, 0.3, 0.9): "#8172b2",
}
OTHER_COLOURS = ("#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#8c564b", "#9467bd")
WARM_COLOUR = "#555555"  # DiLoCo started from data parallel's model


def run_colour(run: Run) -> str:
    """The colour of a run's setting (its mode, H, outer optimizer), the same in every figure."""
    config = config_of(run[0])
    mode = getattr(config, "mode", "ddp")
    if mode == "ddp":
        key = ("ddp",)
    elif mode == "local_sgd":
        key = ("local_sgd", config.k)
    else:
        key = ("diloco", config.h, config.outer_lr, config.outer_momentum)
    if key in COLOURS:
        return COLOURS[key]
    return OTHER_COLOURS[sum(map(ord, repr(key))) % len(OTHER_COLOURS)]


def _losses(runs: list[Run], digits: str = ".4f") -> str:
    """Process 0's validation loss of each run, as "0.4261 / 0.4210"."""
    return " / ".join(format_number(run[0].eval_loss, digits) for run in runs)


# Section 3 ------------------------------------------------------------------------------------


def parameter_differences(
    one_round: tuple[Run, Run], seeds: tuple[Run, Run], start, whole_run: tuple[Run, Run] | None = None
) -> Table:
    """Section 3: the largest difference of a parameter between Local SGD and DiLoCo at outer lr 1
    without momentum (`one_round`, and `whole_run` when given: each a Local SGD run and its DiLoCo
    twin), against two scales: data parallel against another seed (`seeds`), and the largest change
    of a parameter in training (data parallel's final parameters against `start`, the model every
    run started from)."""
    import torch

    initial = torch.cat([p.detach().reshape(-1) for p in start.parameters()])

    def largest(a: Run, b: Run) -> str:
        return format_number((a[0].parameters() - b[0].parameters()).abs().max().item(), ".1e")

    h = config_of(one_round[1][0]).h
    trained = (seeds[0][0].parameters() - initial).abs().max().item()
    rows = [
        [
            phrase("Local SGD and DiLoCo (lr 1, no momentum): one round of {h} steps", h=h),
            largest(*one_round),
            _losses(one_round, ".6f"),
        ]
    ]
    if whole_run is not None:
        whole = config_of(whole_run[1][0])
        rows.append(
            [
                phrase(
                    "the same, {steps} steps ({rounds} rounds)",
                    steps=whole.steps,
                    rounds=whole.steps // whole.h,
                ),
                largest(*whole_run),
                _losses(whole_run, ".6f"),
            ]
        )
    rows += [
        [
            _("for scale: data parallel against another seed (other initial weights, another data order)"),
            largest(*seeds),
            _losses(seeds, ".6f"),
        ],
        [_("for scale: the largest change of a parameter in training"), format_number(trained, ".1e"), "-"],
    ]
    return Table(["compared", "largest difference of a parameter", "validation losses"], rows)


# Section 4 ------------------------------------------------------------------------------------


@dataclass
class Curves:
    """A loss figure's data: each run's training losses in process 0 and the steps at which it
    synchronized, under its label, each run's colour, and the figure's title (`plot_diloco_losses`)."""

    losses: dict[str, list[float]]
    outer_steps: dict[str, list[int]]
    title: str
    colours: dict[str, str] = field(default_factory=dict)


def training_curves(runs: list[Run], baseline: float) -> Curves:
    """Section 4's loss figure: each run under its name (`run_name`), ticked where it synchronized
    (data parallel, at every step, is not). The title names the one DiLoCo run that ends above
    `baseline`, the loss of a model that learned nothing, when exactly one does."""
    losses, outer_steps, colours, stuck = {}, {}, {}, []
    for run in runs:
        name, config = run_name(run), config_of(run[0])
        losses[name] = run[0].losses
        colours[name] = run_colour(run)
        if getattr(config, "mode", "ddp") != "ddp":
            outer_steps[name] = run[0].sync_steps
        if getattr(config, "mode", "ddp") == "diloco" and run[0].eval_loss > baseline:
            stuck.append(config.h)
    if len(stuck) == 1:
        title = phrase("DiLoCo at H = {h} stays on the plateau; the other runs leave it", h=stuck[0])
    else:
        title = _("training loss in process 0")
    return Curves(losses, outer_steps, title, colours)


def against_data_parallel(run: Run, data_parallel: Run) -> Curves:
    """Section 8's explorer: one DiLoCo run beside data parallel, each labelled with its validation
    loss, the title naming the run's H and outer learning rate."""
    config = config_of(run[0])
    label = phrase(
        "DiLoCo, H = {h}, outer lr {lr:g}: validation loss {loss:.3f}",
        h=config.h,
        lr=config.outer_lr,
        loss=run[0].eval_loss,
    )
    reference = phrase("data parallel: validation loss {loss:.3f}", loss=data_parallel[0].eval_loss)
    return Curves(
        {reference: data_parallel[0].losses, label: run[0].losses},
        {label: run[0].sync_steps},
        phrase("DiLoCo at H = {h}, outer lr {lr:g}, against data parallel", h=config.h, lr=config.outer_lr),
        {reference: run_colour(data_parallel), label: run_colour(run)},
    )


@dataclass
class Verdicts:
    """Section 4's verdicts: DiLoCo against Local SGD at each H, read against the noise of two seeds
    of data parallel (`spread`) and against the loss of a model that learned nothing (`baseline`).
    `print` shows them."""

    spread: float
    baseline: float
    pairs: list[tuple[int, float, float]]  # (H, Local SGD's validation loss, DiLoCo's)
    other_seeds: list[tuple[int, float]]  # (H, DiLoCo's validation loss with another seed)

    def verdict(self, gap: float) -> str:
        if abs(gap) <= self.spread:
            return _("within that spread")
        return _("DiLoCo better") if gap < 0 else _("DiLoCo worse")

    def __str__(self) -> str:
        lines = [
            phrase(
                "two seeds of data parallel differ by {spread:.4f} in validation loss: "
                "with two seeds, a smaller gap tells nothing",
                spread=self.spread,
            ),
            phrase(
                "always predicting the label frequencies scores a validation loss of {baseline:.4f}",
                baseline=self.baseline,
            ),
        ]
        for h, local, outer in self.pairs:
            lines.append(
                phrase(
                    "H = {h}: Local SGD {local:.4f}, DiLoCo {outer:.4f}, gap {gap:+.4f}: {verdict}",
                    h=h,
                    local=local,
                    outer=outer,
                    gap=outer - local,
                    verdict=self.verdict(outer - local),
                )
            )
        (h1, first), (h2, last) = self.other_seeds[0], self.other_seeds[-1]
        lines.append(
            phrase(
                "another seed of DiLoCo: {first:.4f} at H = {h1}, {last:.4f} at H = {h2}",
                first=first,
                last=last,
                h1=h1,
                h2=h2,
            )
        )
        return "\n".join(lines)


def diloco_against_local_sgd(
    pairs: list[tuple[Run, Run]], seeds: tuple[Run, Run], other_seeds: list[Run], baseline: float
) -> Verdicts:
    """Section 4: each (Local SGD, DiLoCo) pair at one H, judged against the gap between two seeds of
    data parallel (`seeds`); `other_seeds` are DiLoCo's runs with another seed, the first and last
    of which are shown."""
    spread = abs(seeds[0][0].eval_loss - seeds[1][0].eval_loss)
    return Verdicts(
        spread,
        baseline,
        [(config_of(outer[0]).h, local[0].eval_loss, outer[0].eval_loss) for local, outer in pairs],
        [(config_of(run[0]).h, run[0].eval_loss) for run in other_seeds],
    )


@dataclass(repr=False)
class OuterStepTest(ShowsAsTable):
    """Section 4's test of why a DiLoCo run stalls: settings at the same H that differ only in the
    outer optimizer, each run with its seeds. `print` (or the notebook) shows, per setting, the
    ceiling of its outer step, the largest outer step measured against the workers' averaged
    change, and where each seed's validation loss ended against `baseline`. `steps`, `colours` and
    `styles` are the figure's data (`plot_outer_steps`): the outer steps of each DiLoCo run, under
    its name with its seed."""

    h: int
    settings: list[tuple[str, float, list[Run]]]  # (name, ceiling, its runs: one per seed)
    ratios: dict[str, list[OuterStep]]  # each DiLoCo run's outer steps, by its name with its seed
    baseline: float
    colours: dict[str, str] = field(default_factory=dict)
    styles: dict[str, str] = field(default_factory=dict)

    @property
    def steps(self) -> dict[str, list[OuterStep]]:
        return self.ratios

    @property
    def ceiling(self) -> float:
        """The first setting's ceiling: the paper's outer optimizer."""
        return self.settings[0][1]

    def peak(self, name: str) -> float:
        return max(outer.ratio for outer in self.ratios[name])

    @property
    def title(self) -> str:
        (first, _c, first_runs), (second, _d, second_runs) = self.settings[:2]
        return phrase(
            "At H = {h} the outer step grows to {peak:.1f} times the workers' averaged change with {first}, "
            "to {other:.1f} with {second} (the larger of the seeds)",
            h=self.h,
            peak=max(self.peak(run_name(run)) for run in first_runs),
            first=first,
            other=max(self.peak(run_name(run)) for run in second_runs),
            second=second,
        )

    def where(self, loss: float) -> str:
        return _("above") if loss > self.baseline else _("below")

    def table(self) -> Table:
        rows = []
        for name, ceiling, runs in self.settings:
            peaks = [
                format_number(self.peak(run_name(run)), ".1f")
                if run_name(run) in self.ratios
                else _("1 (an average)")
                for run in runs
            ]
            rows.append(
                [
                    name,
                    format_number(ceiling, "g"),
                    " / ".join(peaks),
                    " / ".join(format_number(run[0].eval_loss, ".4f") for run in runs),
                    " / ".join(self.where(run[0].eval_loss) for run in runs),
                ]
            )
        return Table(
            [
                phrase("outer optimizer at H = {h}", h=self.h),
                "ceiling of the outer step",
                "largest outer step ÷ averaged change",
                "validation loss",
                "against a model that learned nothing",
            ],
            rows,
            notes=[
                phrase(
                    "one value per seed, seed 0 first; ceiling: lr / (1 − momentum), where the outer step "
                    "settles when every round's change is the same; a model that learned nothing: "
                    "{baseline:.4f}",
                    baseline=self.baseline,
                )
            ],
        )


def outer_optimizer(run: Run) -> str:
    """A run's outer optimizer in words: "lr 0.7, momentum 0.9 (the paper's)", "lr 1, no momentum
    (Local SGD)"."""
    config = config_of(run[0])
    if getattr(config, "mode", "ddp") != "diloco":
        return _("lr 1, no momentum (Local SGD)")
    said = phrase("lr {lr:g}, momentum {momentum:g}", lr=config.outer_lr, momentum=config.outer_momentum)
    if (config.outer_lr, config.outer_momentum) == (0.7, 0.9):
        said = phrase("{optimizer} (the paper's)", optimizer=said)
    return said


def outer_step_test(
    watcher: OptimizerWatch, runs: dict[str, Run], settings: list[list[str]], baseline: float
) -> OuterStepTest:
    """Section 4: the runs named in each list of `settings` (in `runs`, as the lesson names its runs;
    a list holds the seeds of one setting, seed 0 first), with the outer steps `watcher` saw in
    their DiLoCo runs (a Local SGD run has none: its average is an outer step of exactly 1)."""
    chosen, ratios, colours, styles, h = [], {}, {}, {}, None
    for names in settings:
        seeds = [runs[name] for name in names]
        config = config_of(seeds[0][0])
        if getattr(config, "mode", "ddp") == "diloco":
            ceiling, h = config.outer_lr / (1 - config.outer_momentum), config.h
        else:  # Local SGD: lr 1, no momentum
            ceiling = 1.0
        chosen.append((outer_optimizer(seeds[0]), ceiling, seeds))
        for index, (name, run) in enumerate(zip(names, seeds)):
            if getattr(config_of(run[0]), "mode", "ddp") == "diloco":
                ratios[run_name(run)] = watcher.read(name).outer_steps
                colours[run_name(run)] = run_colour(run)
                styles[run_name(run)] = "-" if index == 0 else "--"
    return OuterStepTest(h, chosen, ratios, baseline, colours, styles)


@dataclass
class WarmStarts:
    """DiLoCo runs started from data parallel's model after `warm_steps` steps: the bytes each
    process sent in all (data parallel's included) and its validation loss. `print` shows them."""

    runs: list[Run]
    warm_steps: int
    megabytes_per_step: float  # data parallel's, per process

    @property
    def megabytes(self) -> list[float]:
        return [self.warm_steps * self.megabytes_per_step + run[0].allreduce_bytes / 1e6 for run in self.runs]

    def __str__(self) -> str:
        return "\n".join(
            phrase(
                "seed {seed}: {warm} steps of data parallel ({before:.2f} MB), then DiLoCo at H = {h} "
                "({after:.2f} MB): {mb:.2f} MB sent, validation loss {loss:.4f}",
                seed=config_of(run[0]).seed,
                warm=self.warm_steps,
                before=self.warm_steps * self.megabytes_per_step,
                h=config_of(run[0]).h,
                after=run[0].allreduce_bytes / 1e6,
                mb=mb,
                loss=run[0].eval_loss,
            )
            for run, mb in zip(self.runs, self.megabytes)
        )


def after_warm_start(runs: list[Run], data_parallel: Run, warm_steps: int) -> WarmStarts:
    """Section 4: DiLoCo `runs` that each started from `data_parallel`'s model after `warm_steps`
    steps, with data parallel's bytes of those steps counted in."""
    return WarmStarts(runs, warm_steps, row(data_parallel)["megabytes"] / config_of(data_parallel[0]).steps)


@dataclass
class BytesPlane:
    """Every run on one plane, bytes sent per process against validation loss
    (`plot_bytes_against_loss(plane.band, plane.points, title=plane.title, target=plane.target)`).
    Data parallel is a band between its seeds along its run; `print` says where each run ended
    against where data parallel's seeds ended."""

    band: dict[str, list[list[tuple[float, float]]]]
    points: dict[str, list[tuple[float, float]]]
    steps: int  # data parallel's
    megabytes_per_step: float  # data parallel's, per process
    h: int  # the DiLoCo run weighed against data parallel: the one with the largest H
    synchronizations: int  # that run's
    same_bytes: list[float]  # each data parallel seed's loss after as many steps: the same bytes
    times: float  # how many times fewer bytes than data parallel that DiLoCo run sent
    matched: bool = False  # each of its seeds ended where data parallel's seeds ended
    colours: dict[str, str] = field(default_factory=dict)  # each point's setting's colour

    @property
    def target(self) -> tuple[float, float]:
        """Where data parallel's seeds ended: (low, high)."""
        low, high = sorted(curve[-1][1] for curve in next(iter(self.band.values())))
        return low, high

    @property
    def title(self) -> str:
        if self.matched:
            return phrase(
                "DiLoCo at H = {h} ends where data parallel ends, with {times:.0f} times fewer bytes",
                h=self.h,
                times=self.times,
            )
        return _("Validation loss against the bytes each process sent")

    def where(self, loss: float) -> str:
        low, high = self.target
        if low <= loss <= high:
            return _("inside the band")
        return _("below the band") if loss < low else _("above the band")

    def __str__(self) -> str:
        low, high = self.target
        lines = [
            phrase(
                "data parallel after {steps} steps ({mb:.2f} MB): {low:.4f} to {high:.4f}",
                steps=self.steps,
                mb=self.megabytes_per_step * self.steps,
                low=low,
                high=high,
            ),
            # with DiLoCo's bytes, data parallel takes as many steps as DiLoCo synchronized
            phrase(
                "with DiLoCo at H = {h}'s bytes, data parallel takes {steps} steps: validation loss {losses}",
                h=self.h,
                steps=self.synchronizations,
                losses=" / ".join(format_number(loss, ".4f") for loss in self.same_bytes),
            ),
        ]
        for label, pairs in self.points.items():
            lines.append(
                phrase(
                    "{run}: {mb:.2f} MB, validation loss {losses}: {where}",
                    run=label,
                    mb=pairs[0][0],
                    losses=" / ".join(format_number(loss, ".4f") for _mb, loss in pairs),
                    where=" / ".join(self.where(loss) for _mb, loss in pairs),
                )
            )
        return "\n".join(lines)


def bytes_and_losses(
    data_parallel: list[Run], along: list[dict[int, float]], runs: list[list[Run]], warm: WarmStarts
) -> BytesPlane:
    """Section 4: data parallel's seeds (`data_parallel`, with the validation losses `along` each run
    that `OptimizerWatch` read, {step: loss}) as a band, and each group of `runs` (the seeds of one
    setting) and the warm-started runs as points. The DiLoCo group with the largest H is the one the
    title and the printout weigh against data parallel."""
    per_step = row(data_parallel[0])["megabytes"] / config_of(data_parallel[0][0]).steps
    band = {
        _("data parallel, two seeds, along the run"): [
            [(step * per_step, loss) for step, loss in losses.items()] for losses in along
        ]
    }
    points, colours = {}, {}
    for group in runs:
        label = run_name(group[0], seed=False)
        if len(group) == 2:
            label = phrase("{run}, two seeds", run=label)
        points[label] = [(row(run)["megabytes"], run[0].eval_loss) for run in group]
        colours[label] = run_colour(group[0])
    warm_label = phrase("warm start, then {run}", run=run_name(warm.runs[0], seed=False))
    if len(warm.runs) == 2:
        warm_label = phrase("{run}, two seeds", run=warm_label)
    points[warm_label] = [(mb, run[0].eval_loss) for mb, run in zip(warm.megabytes, warm.runs)]
    colours[warm_label] = WARM_COLOUR

    diloco = [group for group in runs if getattr(config_of(group[0][0]), "mode", "ddp") == "diloco"]
    largest = max(diloco, key=lambda group: config_of(group[0][0]).h)
    same = row(largest[0])["synchronizations"]
    plane = BytesPlane(
        band,
        points,
        steps=config_of(data_parallel[0][0]).steps,
        megabytes_per_step=per_step,
        h=config_of(largest[0][0]).h,
        synchronizations=same,
        same_bytes=[losses[same] for losses in along],
        times=row(data_parallel[0])["megabytes"] / row(largest[0])["megabytes"],
        colours=colours,
    )
    low, high = plane.target
    plane.matched = all(low <= run[0].eval_loss <= high for run in largest)
    return plane


# Sections 5 to 7 ------------------------------------------------------------------------------


def compare_bucketing(per_tensor: Run, bucketed: Run, data_parallel: Run) -> Table:
    """Section 5: per synchronization, the calls, kB and time in all-reduce of one call per tensor
    against one flat buffer (the same run otherwise), with data parallel's calls and kB; the note
    says how many times fewer calls the buffer made, and its time against the per-tensor one as far
    as their spreads allow."""
    each, flat, ddp = row(per_tensor), row(bucketed), row(data_parallel)
    ratio = flat["sync_time"] / each["sync_time"]
    return Table(
        ["per synchronization", "one call per tensor", "one flat buffer", "data parallel"],
        [
            [
                _("all-reduce calls"),
                format_number(each["calls_per_sync"], ".0f"),
                format_number(flat["calls_per_sync"], ".0f"),
                format_number(ddp["allreduce_calls"] / ddp["synchronizations"], ".0f"),
            ],
            [
                _("kB sent"),
                format_number(each["kilobytes_per_sync"], ".0f"),
                format_number(flat["kilobytes_per_sync"], ".0f"),
                format_number(ddp["kilobytes_per_sync"], ".0f"),
            ],
            [
                _("ms in all-reduce (middle half)"),
                each["sync_time"].milliseconds(),
                flat["sync_time"].milliseconds(),
                "-",
            ],
        ],
        notes=[
            phrase(
                "one flat buffer: {calls:.0f} times fewer calls; its time in all-reduce per "
                "synchronization was {median:.2f}x ({low:.2f}x-{high:.2f}x) the per-tensor time: {verdict}",
                calls=each["calls_per_sync"] / flat["calls_per_sync"],
                # the ratio's parts apart, so that a language can say it in words ("1,05 katı")
                median=ratio.median,
                low=ratio.low,
                high=ratio.high,
                verdict=compared(ratio),
            )
        ],
    )


def compare_precision(full: Run, half: Run, spread: float) -> Table:
    """Section 6: the same DiLoCo run with its pseudo-gradient all-reduced in two precisions: kB per
    sync, MB sent and validation loss; the note weighs the change of loss against `spread`, the gap
    between two seeds of data parallel."""
    first, second = row(full), row(half)
    moved = second["eval_loss"] - first["eval_loss"]
    return Table(
        ["pseudo-gradient", "kB per sync", "MB sent", "validation loss"],
        [
            [
                config_of(run[0]).precision,
                format_number(r["kilobytes_per_sync"], ".0f"),
                format_number(r["megabytes"], ".2f"),
                format_number(r["eval_loss"], ".4f"),
            ]
            for run, r in ((full, first), (half, second))
        ],
        notes=[
            phrase(
                "{half} sends {ratio:.2f} of {full}'s bytes; the validation loss moved by {moved:+.4f}, "
                "{against} the {spread:.4f} between two seeds of data parallel",
                half=config_of(half[0]).precision,
                full=config_of(full[0]).precision,
                ratio=second["megabytes"] / first["megabytes"],
                moved=moved,
                against=_("less than") if abs(moved) < spread else _("no less than"),
                spread=spread,
            )
        ],
    )


def in_proportion(data_parallel: Run, runs: list[Run]) -> Table:
    """Section 7: synchronizations and MB per 1000 steps of data parallel and of each DiLoCo run,
    how many times less than data parallel each sends, and what the paper's H = 500 would send
    with the bytes per sync of the last run in each precision."""
    ddp = row(data_parallel)
    per_step = ddp["megabytes"] / ddp["steps"]
    lines = [[_("data parallel"), ddp["synchronizations"], format_number(per_step * 1000, ".1f"), "1"]]
    per_sync = {}
    for run in runs:
        r = row(run)
        lines.append(
            [
                run_name(run),
                r["synchronizations"],
                format_number(r["megabytes"] / r["steps"] * 1000, ".1f"),
                format_number(per_step / (r["megabytes"] / r["steps"]), ".0f"),
            ]
        )
        per_sync[config_of(run[0]).precision] = r["kilobytes_per_sync"] / 1000
    for precision, megabytes in per_sync.items():
        lines.append(
            [
                phrase("H = 500, {precision} (from the bytes per sync above)", precision=precision),
                "-",
                format_number(megabytes / PAPER_H * 1000, ".2f"),
                format_number(per_step / (megabytes / PAPER_H), ".0f"),
            ]
        )
    return Table(["run", "synchronizations", "MB per 1000 steps", "times less than data parallel"], lines)
