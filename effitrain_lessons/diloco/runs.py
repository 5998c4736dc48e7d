"""Lesson 5: from Local SGD to DiLoCo, on the real processes of lesson 4.

The algorithm is the lesson's own: `train(config, model, train_set)`, lesson 4's loop with an outer
step every H inner steps, written in a `# @save` cell (built into
`effitrain_lessons/diloco/saved.py`). It runs and is measured as lesson 4's loop is, by
`effitrain_lessons.shared.distributed_runs`, which the two lessons share: `launch` forks the processes,
`measured_run` counts every all-reduce from outside the loop and fingerprints the parameters. This
module adds the configuration (`DiLoCoConfig`: H, the outer optimizer, bucketing, the precision of
the pseudo-gradient, Streaming DiLoCo's fragments), the rule its synchronizations follow, the
lesson's table, and `OptimizerWatch`, which measures each outer step against the averaged
pseudo-gradient (and data parallel's validation loss along its run) from outside the loop, through
PyTorch's global optimizer step hooks. Its figures are in `diloco_figures`.

The same loop runs as a module under a launcher:

    torchrun --nproc_per_node 2 -m effitrain_lessons.diloco.runs --h 8 --steps 96
    accelerate launch --multi_gpu --num_processes 8 -m effitrain_lessons.diloco.runs \\
        --no-cpu --h 500 --steps 5000
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from effitrain_lessons.shared.arguments import command_line, whole_numbers
from effitrain_lessons.shared.distributed_runs import (
    ProcessReport,
    RunConfig,
    config_of,
    run_under_launcher,
    summary,
)
from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.tables import Table
from effitrain_lessons.shared.timing import Times

PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass
class DiLoCoConfig(RunConfig):
    """One run of lesson 5's loop: data parallel (`mode="ddp"`, as in lesson 4) or DiLoCo. The
    defaults are the DiLoCo paper's outer optimizer (SGD, lr 0.7, Nesterov momentum 0.9); its H is
    500, the lesson's runs are short and use 8 to 32. Lesson 4's `k` is not used: H is `h`."""

    mode: str = field(
        default="diloco",
        metadata={
            "choices": ("ddp", "diloco"),
            "help": "ddp: gradients every step; diloco: an outer step every h steps",
        },
    )
    h: int = field(default=8, metadata={"help": "H: inner steps between outer steps"})
    outer_lr: float = field(default=0.7, metadata={"help": "the outer SGD's learning rate"})
    outer_momentum: float = field(
        default=0.9, metadata={"help": "the outer SGD's Nesterov momentum (0: none)"}
    )
    bucketed: bool = field(
        default=True,
        metadata={
            "help": "all-reduce the pseudo-gradient as one flat buffer; --no-bucketed: one call per tensor"
        },
    )
    precision: str = field(
        default="fp32",
        metadata={"choices": PRECISIONS, "help": "the dtype the pseudo-gradient is all-reduced in"},
    )
    fragments: int = field(
        default=1,
        metadata={"help": "Streaming DiLoCo: sync one of this many fragments every h / fragments steps"},
    )

    def describe(self) -> str:
        """The run's name without its seed: "DiLoCo, H = 8", with what differs from the paper's
        outer optimizer, bucketing and precision ("DiLoCo, H = 8, outer lr 0.3", "..., per tensor")."""
        if self.mode == "ddp":
            return _("data parallel")
        name = phrase("DiLoCo, H = {h}", h=self.h)
        if self.outer_lr == 1 and self.outer_momentum == 0:
            name = phrase("{run}, outer lr 1, no momentum", run=name)
        elif self.outer_momentum == 0.9 and self.outer_lr != 0.7:
            name = phrase("{run}, outer lr {lr:g}", run=name, lr=self.outer_lr)
        elif (self.outer_lr, self.outer_momentum) != (0.7, 0.9):
            name = phrase(
                "{run}, outer lr {lr:g}, momentum {momentum:g}",
                run=name,
                lr=self.outer_lr,
                momentum=self.outer_momentum,
            )
        if not self.bucketed:
            name = phrase("{run}, per tensor", run=name)
        if self.precision != "fp32":
            name = f"{name}, {self.precision}"
        if self.fragments > 1:
            name = phrase("{run}, {fragments} fragments", run=name, fragments=self.fragments)
        return name

    @property
    def label(self) -> str:
        if self.seed:
            # other initial weights, another data order
            return phrase("{run}, seed {seed}", run=self.describe(), seed=self.seed)
        return self.describe()

    def expected_synchronizations(self) -> int:
        """Data parallel: one per step. DiLoCo: one outer step every H inner steps, floor(steps / H)
        (nothing on exit); with F fragments one fragment every H / F steps, floor(steps / (H / F))."""
        if self.mode == "ddp":
            return super().expected_synchronizations()
        return self.steps // (self.h // self.fragments)

    @property
    def sync_every(self) -> int:
        """Steps from one synchronization to the next: H (streaming: H / fragments)."""
        return self.h // self.fragments if self.mode == "diloco" else super().sync_every

    def check(self) -> None:
        if self.mode not in ("ddp", "diloco"):
            raise ValueError(
                phrase("mode must be one of {modes}, got {mode!r}.", modes=("ddp", "diloco"), mode=self.mode)
            )
        whole_numbers(
            h=self.h,
            steps=self.steps,
            batch_size=self.batch_size,
            layers=self.layers,
            fragments=self.fragments,
        )
        if self.accumulation != 1:
            raise ValueError(_("Lesson 5's loop does not accumulate gradients: leave accumulation at 1."))
        if self.precision not in PRECISIONS:
            raise ValueError(
                phrase(
                    "precision must be one of {precisions}, got {precision!r}.",
                    precisions=PRECISIONS,
                    precision=self.precision,
                )
            )
        if self.h % self.fragments:
            raise ValueError(
                phrase(
                    "H must be a multiple of the number of fragments, got H={h} and {fragments} fragments.",
                    h=self.h,
                    fragments=self.fragments,
                )
            )
        if not self.outer_lr > 0 or not 0 <= self.outer_momentum < 1:
            raise ValueError(
                phrase(
                    "The outer learning rate must be above 0 and the momentum in [0, 1), got lr "
                    "{lr!r} and momentum {momentum!r}.",
                    lr=self.outer_lr,
                    momentum=self.outer_momentum,
                )
            )


def label_frequency_loss(split: str = "validation") -> float:
    """The validation loss of a model that learned nothing: the cross-entropy of always predicting the
    label frequencies of `split` of the bundled data. A run whose loss sits near it is on the plateau
    (lesson 5, section 4)."""
    import torch

    from effitrain_lessons.shared.data import tokenized_mrpc

    labels = torch.as_tensor(tokenized_mrpc()[split]["labels"])
    frequencies = torch.bincount(labels).double() / labels.numel()
    frequencies = frequencies[frequencies > 0]
    return float(-(frequencies * frequencies.log()).sum())


def run_name(run: list[ProcessReport], seed: bool = True) -> str:
    """The lesson's name for a run in its tables, figures and sentences: "data parallel", "Local SGD,
    H = 8" (lesson 4's K is this lesson's H), "DiLoCo, H = 32", with what differs from the paper's
    outer optimizer, bucketing and precision (`DiLoCoConfig.describe`), and the seed when it is not
    0 and `seed` is asked for."""
    config = config_of(run[0])
    mode = getattr(config, "mode", "ddp")
    if mode == "local_sgd":
        name = phrase("Local SGD, H = {h}", h=config.k)
    elif mode == "ddp":
        name = _("data parallel")
    else:
        name = config.describe()
    if seed and config.seed:
        name = phrase("{run}, seed {seed}", run=name, seed=config.seed)
    return name


def sync_times(reports: list[ProcessReport]) -> Times | None:
    """The time spent in the all-reduce calls of each synchronization, in the process that arrived
    last at it (the others also wait for it there): one sample per synchronization, as `Times`
    (wall time). None for data parallel, whose gradient all-reduces run inside `backward()` and
    are not timed."""
    rounds = []
    for report in reports:
        per_round: dict[int, float] = {}
        for (round_, _size), seconds in zip(report.parameter_allreduces, report.parameter_allreduce_seconds):
            per_round[round_] = per_round.get(round_, 0.0) + seconds
        rounds.append(per_round)
    if not rounds or not rounds[0]:
        return None
    samples = tuple(min(per_round.get(r, float("inf")) for per_round in rounds) for r in rounds[0])
    return Times(samples, samples, "wall")


def row(reports: list[ProcessReport]) -> dict:
    """A run's summary (`distributed_runs.summary`, as lesson 4 shows it), with what lesson 5 adds:
    calls, bytes and time per synchronization."""
    out = summary(reports)
    syncs = max(out["synchronizations"], 1)
    timed = sync_times(reports)
    out.update(
        calls_per_sync=out["allreduce_calls"] / syncs,
        kilobytes_per_sync=1000 * out["megabytes"] / syncs,
        sync_time=timed,
        ms_per_sync=1000 * timed.median if timed else float("nan"),
    )
    return out


def results(runs: list[list[ProcessReport]]) -> Table:
    """Lesson 5's results table: one row per run, as counted in process 0. A run whose processes end
    with different parameters (Streaming DiLoCo between fragments) shows every process's validation
    loss: one of them alone can match another run's by chance (0.4261 and 0.4261 were 0.42612 and
    0.42605 in process 0, while process 1 of the streaming run ended at 0.4326)."""
    rows, apart = [], False
    for reports in runs:
        r = row(reports)
        apart = apart or not r["equal_at_end"]
        rows.append(
            [
                run_name(reports),
                r["steps"],
                r["synchronizations"],
                r["expected"],
                r["allreduce_calls"],
                format_number(r["calls_per_sync"], ".0f"),
                format_number(r["megabytes"], ".2f"),
                format_number(r["kilobytes_per_sync"], ".0f"),
                r["sync_time"].milliseconds() if r["sync_time"] else "-",
                # processes that end apart (streaming) each have their own loss: all of them, not one
                format_number(r["eval_loss"], ".4f")
                if r["equal_at_end"]
                else " / ".join(format_number(report.eval_loss, ".4f") for report in reports),
                _("yes") if r["equal_at_end"] else _("NO"),
            ]
        )
    return Table(
        [
            "run",
            "steps",
            "synchronizations",
            "rule",
            "all-reduce calls",
            "calls per sync",
            "MB sent",
            "kB per sync",
            "ms in all-reduce per sync (middle half)",
            "validation loss",
            "identical parameters at the end",
        ],
        rows,
        notes=[
            _(
                "Counted in process 0. rule: one per step for data parallel, floor(steps / H) for DiLoCo "
                "(there is no average on exit). ms in all-reduce per sync: wall time, the median over the "
                "synchronizations in the process that arrived last, the middle half in brackets (data "
                "parallel's all-reduces run inside backward and are not timed)."
            )
        ]
        + (
            [
                _(
                    "validation loss: where the processes end with different parameters, each "
                    "process's own, process 0 first."
                )
            ]
            if apart
            else []
        ),
    )


@dataclass
class OuterStep:
    """One outer step as a process saw it: the inner step it followed, the norm of the averaged
    pseudo-gradient the outer optimizer read as its gradient, and the norm of the step it took (the
    global parameters after it minus before it). Both over the tensors it stepped (one fragment when
    streaming)."""

    step: int
    pseudo_gradient_norm: float
    outer_step_norm: float

    @property
    def ratio(self) -> float:
        """How many times the averaged change the outer step moved the global parameters: 1 for
        Local SGD (lr 1, no momentum)."""
        return self.outer_step_norm / self.pseudo_gradient_norm


@dataclass
class Watched:
    """What `OptimizerWatch` saw in one process of one run: each outer step, the validation loss
    after the inner steps it was asked to evaluate at ({step: loss}), and the model's state dict
    after the steps it was asked to keep ({step: state dict}: a model to start another run from)."""

    outer_steps: list[OuterStep] = field(default_factory=list)
    validation_losses: dict[int, float] = field(default_factory=dict)
    kept: dict[int, dict] = field(default_factory=dict)


class OptimizerWatch:
    """Watches the optimizers of lesson 5's loop from outside it, in every process of a launch.

    `watch(loop, name)` returns the loop wrapped: while it runs, PyTorch's global optimizer step hooks
    see every `step()`. An optimizer over the model's own parameters is the inner one: its steps are
    counted, after the steps listed in `evaluate_at` the model's validation loss is read (with
    data parallel, the parameters every process shares), and after those in `keep_at` its state
    dict is kept (a warm start for another run). Any other optimizer is the outer one, over
    the global copy: before its step the norm of the gradients it reads (the averaged
    pseudo-gradient) and a copy of the parameters are taken, after it the norm of the change. Each
    process writes what it saw to a file of this watch's folder; `read(name)` returns it, after
    `launch`. Nothing inside the loop measures."""

    def __init__(self):
        import tempfile

        self._folder = tempfile.TemporaryDirectory(prefix="effitrain-diloco-")
        self._validation = None

    def _path(self, name: str, rank: int, kind: str = "json") -> str:
        import hashlib
        import os

        return os.path.join(self._folder.name, f"{hashlib.sha1(name.encode()).hexdigest()}-{rank}.{kind}")

    def watch(self, loop, name: str, evaluate_at=(), keep_at=()):
        """`loop` (a lesson's `train(config, model, train_set)`), watched under `name`; the model's
        validation loss is read after each inner step listed in `evaluate_at`, and its state dict
        kept after each one listed in `keep_at`."""
        evaluate_at, keep_at = frozenset(evaluate_at), frozenset(keep_at)
        if evaluate_at and self._validation is None:
            from effitrain_lessons.shared.data import tokenized_mrpc

            self._validation = tokenized_mrpc()["validation"][:]  # once, here: the forks share it

        def watched(config, model, train_set):
            import json

            import torch
            from torch.optim.optimizer import (
                register_optimizer_step_post_hook,
                register_optimizer_step_pre_hook,
            )

            seen = Watched()
            own = {id(parameter) for parameter in model.parameters()}
            inner_steps, before = [0], {}

            def is_inner(optimizer):
                return any(id(p) in own for group in optimizer.param_groups for p in group["params"])

            def pre(optimizer, args, kwargs):
                if is_inner(optimizer):
                    return
                stepped = [
                    p for group in optimizer.param_groups for p in group["params"] if p.grad is not None
                ]
                before["stepped"] = stepped
                before["values"] = [p.detach().clone() for p in stepped]
                before["norm"] = _norm([p.grad for p in stepped])

            def post(optimizer, args, kwargs):
                if is_inner(optimizer):
                    inner_steps[0] += 1
                    if inner_steps[0] in evaluate_at:
                        seen.validation_losses[inner_steps[0]] = self._validation_loss(model)
                    if inner_steps[0] in keep_at:
                        seen.kept[inner_steps[0]] = {
                            key: value.detach().clone() for key, value in model.state_dict().items()
                        }
                    return
                moved = [p.detach() - old for p, old in zip(before["stepped"], before["values"])]
                seen.outer_steps.append(OuterStep(inner_steps[0], before["norm"], _norm(moved)))

            handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
            try:
                loop(config, model, train_set)
            finally:
                for handle in handles:
                    handle.remove()
            rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
            if seen.kept:
                torch.save(seen.kept, self._path(name, rank, "pt"))
            with open(self._path(name, rank), "w") as file:
                json.dump(
                    {
                        "outer_steps": [vars(outer) for outer in seen.outer_steps],
                        "validation_losses": seen.validation_losses,
                    },
                    file,
                )

        return watched

    def _validation_loss(self, model) -> float:
        import torch

        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                device = next(model.parameters()).device
                return model(**{k: v.to(device) for k, v in self._validation.items()}).loss.item()
        finally:
            model.train(was_training)

    def read(self, name: str, rank: int = 0) -> Watched:
        """What process `rank` saw in the run watched under `name`."""
        import json
        import os

        import torch

        with open(self._path(name, rank)) as file:
            saved = json.load(file)
        kept = self._path(name, rank, "pt")
        return Watched(
            [OuterStep(**outer) for outer in saved["outer_steps"]],
            {int(step): loss for step, loss in saved["validation_losses"].items()},
            torch.load(kept) if os.path.exists(kept) else {},
        )


def outer_step_ratios(h: int, steps: int, outer_lr: float = 0.7, outer_momentum: float = 0.9) -> list[float]:
    """How many times the workers' averaged change each outer step of a run moves the global
    parameters, when that change is the same in every round: the outer step of lesson 5's loop
    (`outer_step`, with the loop's outer SGD) run in this process for the `steps // h` outer steps
    of a run of `steps` steps at H = `h`. Lesson 5's exercise checks a prediction with it."""
    from types import SimpleNamespace

    import torch

    from effitrain_lessons.diloco.saved import outer_step

    whole_numbers(h=h, steps=steps)
    generator = torch.Generator().manual_seed(0)
    global_parameters = [torch.randn(8, 4, generator=generator), torch.randn(16, generator=generator)]
    change = [torch.randn(t.shape, generator=generator) for t in global_parameters]  # the same each round
    outer_optimizer = torch.optim.SGD(
        global_parameters, lr=outer_lr, momentum=outer_momentum, nesterov=outer_momentum > 0
    )
    config = SimpleNamespace(bucketed=True, precision="fp32")
    ratios = []
    for _round in range(steps // h):
        before = [t.clone() for t in global_parameters]
        workers_ended = [t - moved for t, moved in zip(global_parameters, change)]
        outer_step(workers_ended, global_parameters, outer_optimizer, config)
        ratios.append(_norm([t - old for t, old in zip(global_parameters, before)]) / _norm(change))
    return ratios


def _norm(tensors) -> float:
    return float(sum(float(tensor.double().pow(2).sum()) for tensor in tensors) ** 0.5)


def _lesson_05_loop():
    from effitrain_lessons.diloco.saved import train

    return train


def main(argv: list[str] | None = None) -> int:
    """Run lesson 5's loop (its `# @save` cell) in this process under a launcher, counting all-reduces."""
    config = command_line(
        DiLoCoConfig,
        argv,
        prog="python -m effitrain_lessons.diloco.runs",
        description="Lesson 05's training with DiLoCo (or plain data parallel), counting its "
        "all-reduces. Start it with torchrun or accelerate launch for several processes.",
    )
    return run_under_launcher(config, _lesson_05_loop)


if __name__ == "__main__":
    sys.exit(main())
