"""Lesson 3: slide 6's Accelerator loop, watched from outside, and run as a module anywhere.

The loop itself is `train(...)`, which lesson 03 writes in a `# @save` cell; the build copies it into
`effitrain_lessons/with_accelerator/saved.py`, and this module runs that copy, so the notebook, a CPU
script and a launch on many GPUs and machines all run the learner's loop:

    python -m effitrain_lessons.with_accelerator.train_loop --cpu
    accelerate launch --num_processes 8 -m effitrain_lessons.with_accelerator.train_loop --epochs 3
    torchrun --nproc_per_node 8 -m effitrain_lessons.with_accelerator.train_loop --epochs 3

`watch_training(model)` measures a run without a line in the loop: a forward hook on the model
reads each micro-batch's loss, and a global optimizer-step hook marks each optimizer step and its
learning rate. A clock (shared/timing.py) starts at each optimizer step's first micro-batch and
stops after the step, so a run reports the median time of an optimizer step and its spread. Each
process prints its rank, `distributed_type` and `num_processes` before it trains, so a
launch that silently fell back to one process shows it.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DataLoader

from effitrain_lessons.shared.arguments import command_line, whole_numbers
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.processes import end_processes, start_workers
from effitrain_lessons.shared.tables import ShowsAsTable, Table
from effitrain_lessons.shared.timing import Clock, Times

SIZINGS = ("optimizer", "slide")


@dataclass
class LoopConfig:
    """The module's settings, each written once: `--model`, `--epochs`, ... are built from these fields."""

    model: str = field(
        default="tiny", metadata={"help": '"tiny" (offline) or a hub model such as bert-base-uncased'}
    )
    source: str = field(default="bundled", metadata={"choices": ("bundled", "hub"), "help": "the data"})
    epochs: int = 2
    batch_size: int = field(default=16, metadata={"help": "per process and micro-batch"})
    accumulation: int = field(default=2, metadata={"help": "micro-batches per optimizer step (slide 6: 2)"})
    learning_rate: float | None = field(
        default=None, metadata={"help": "1e-3 for tiny, 2e-5 for a hub model if not given"}
    )
    checkpointing: bool = field(default=True, metadata={"help": "gradient checkpointing"})
    train_rows: int | None = field(default=None, metadata={"help": "train on the first rows only"})
    seed: int = 0
    cpu: bool = field(default=False, metadata={"help": "use the CPU even if a GPU is present"})
    threads: int | None = field(
        default=None, metadata={"help": "PyTorch's CPU threads (the lessons use 1); its default if not given"}
    )
    json: str | None = field(
        default=None, metadata={"help": "write the main process's measurements to this file"}
    )

    def check(self) -> None:
        """Raise ValueError with one sentence for a setting the loop cannot use."""
        whole_numbers(epochs=self.epochs, batch_size=self.batch_size, accumulation=self.accumulation)
        if self.threads is not None:
            whole_numbers(threads=self.threads)
        if self.train_rows is not None and self.train_rows < self.batch_size:
            raise ValueError(
                phrase(
                    "train_rows must be at least one batch ({batch_size}), got {train_rows}.",
                    batch_size=self.batch_size,
                    train_rows=self.train_rows,
                )
            )


@dataclass(repr=False)  # a cell that ends with the run shows its table (ShowsAsTable), not its fields
class TrainingRun(ShowsAsTable):
    """What `watch_training` saw of one run of a loop (on this process)."""

    losses: list[float] = field(default_factory=list)  # mean micro-batch loss of each optimizer step
    # after each optimizer step (the scheduler's step included)
    learning_rates: list[float] = field(default_factory=list)
    micro_batches: int = 0
    optimizer_steps: int = 0
    eval_rows: int = 0  # rows this process's model saw in eval mode
    # each optimizer step (its micro-batches' forward and backward passes and the step itself), the
    # first ones left out as warm-up; None until a step has run
    step_times: Times | None = None

    def table(self) -> Table:
        rows = [
            [_("optimizer steps"), self.optimizer_steps],
            [_("micro-batches"), self.micro_batches],
        ]
        if self.step_times is not None:
            rows.append([_("time of an optimizer step"), str(self.step_times)])
        if self.losses:
            rows += [
                [_("loss, first step"), format_number(self.losses[0], ".4f")],
                [_("loss, last step"), format_number(self.losses[-1], ".4f")],
                [_("learning rate after the last step"), format_number(self.learning_rates[-1], ".3g")],
            ]
        return Table(["measured", "value"], rows)


@contextlib.contextmanager
def watch_training(model: torch.nn.Module) -> Iterator[TrainingRun]:
    """Watch a training loop run inside the block on `model`, changing nothing in it.

    Every training-mode forward of `model` is a micro-batch (its `.loss` is read); every optimizer
    step, of any optimizer, ends an optimizer step (its learning rate is read once the scheduler has
    stepped: at the next optimizer step, or when the block ends). Recomputation by checkpointing
    runs the layers, never `model` itself, so it is not counted twice. Each optimizer step is timed
    from its first micro-batch's forward pass to the end of the step (`timing.Clock`: CPU time on a
    CPU, wall time between synchronizations on a GPU).
    """
    run, pending, watched = TrainingRun(), [], []
    parameter = next(model.parameters(), None)
    clock = Clock(parameter.device if parameter is not None else "cpu")
    timing = [False]  # whether the clock runs: from a step's first micro-batch to its optimizer step

    def pre_hook(module, args, kwargs):
        if module.training and torch.is_grad_enabled() and not timing[0]:
            clock.start()
            timing[0] = True

    def forward_hook(module, args, kwargs, output):
        if module.training and torch.is_grad_enabled():
            run.micro_batches += 1
            if getattr(output, "loss", None) is not None:
                pending.append(output.loss.item())
        elif not module.training:
            inputs = kwargs.get("input_ids", args[0] if args else None)
            run.eval_rows += len(inputs) if inputs is not None else 0

    def step_hook(optimizer, args, kwargs):
        if timing[0]:
            clock.stop()
            timing[0] = False
        if watched:  # the learning rate after the previous step's scheduler step
            run.learning_rates.append(watched[-1].param_groups[0]["lr"])
        watched.append(optimizer)
        run.optimizer_steps += 1
        run.losses.append(sum(pending) / len(pending) if pending else float("nan"))
        pending.clear()

    handles = [
        model.register_forward_pre_hook(pre_hook, with_kwargs=True),
        model.register_forward_hook(forward_hook, with_kwargs=True),
        register_optimizer_step_post_hook(step_hook),
    ]
    try:
        yield run
    finally:
        run.step_times = clock.times()
        for handle in handles:
            handle.remove()
        if watched:
            run.learning_rates.append(watched[-1].param_groups[0]["lr"])


def scheduler_length(
    batches_per_epoch: int, accumulation: int, epochs: int, sizing: str = "optimizer"
) -> int:
    """How many steps a learning-rate scheduler is sized for.

    "optimizer": `ceil(batches / accumulation) * epochs`, the optimizer steps the loop takes.
    "slide": `batches * epochs`, the micro-batches, as `len(dataloader) * epochs` sizes it (common in
    training code; the deck does not show its scheduler): the schedule gets `1 / accumulation` of the way.
    """
    if sizing == "optimizer":
        return math.ceil(batches_per_epoch / accumulation) * epochs
    if sizing == "slide":
        return batches_per_epoch * epochs
    raise ValueError(
        phrase("sizing must be one of {sizings}, got {sizing!r}.", sizings=SIZINGS, sizing=sizing)
    )


def measure_schedule(
    length: int,
    batches_per_epoch: int,
    accumulation: int,
    epochs: int,
    warmup_ratio: float = 0.0,
    learning_rate: float = 1.0,
) -> list[float]:
    """The learning rate after each optimizer step of a real Accelerate loop, with a linear
    schedule (warm-up, then decay to 0) sized to `length` steps.

    The loop is slide 6's (`accumulate`, `backward`, `optimizer.step`, `scheduler.step` on every
    micro-batch) on a one-weight model and random batches: the schedule depends on how often
    the prepared scheduler steps, not on the model. Uses (and resets the accumulation of) the
    process's shared Accelerate state. Lesson 3 and its exercise measure sizings with it.
    """
    from accelerate import Accelerator
    from transformers import get_linear_schedule_with_warmup

    whole_numbers(
        length=length, batches_per_epoch=batches_per_epoch, accumulation=accumulation, epochs=epochs
    )
    accelerator = Accelerator(gradient_accumulation_steps=accumulation, cpu=True)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * length), length)
    loader = DataLoader(torch.randn(batches_per_epoch, 1), batch_size=1)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    rates = []
    for _epoch in range(epochs):
        for batch in loader:
            with accelerator.accumulate(model):
                accelerator.backward(model(batch).sum())
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                rates.append(scheduler.get_last_lr()[0])
    accelerator.gradient_accumulation_steps = 1
    return rates


def optimizer_steps_on_one_process(
    batches_per_epoch: int, accumulation: int, epochs: int, processes: int, process_index: int = 0
) -> int:
    """How many optimizer steps one of `processes` processes takes in slide 6's Accelerate loop, when
    the dataloader holds `batches_per_epoch` batches before `prepare()` shards it.

    Counted, not computed: Accelerate's own `prepare_data_loader` shards a dataloader as a launch of
    `processes` processes would for process `process_index` (all take as many batches), and the
    loop counts the micro-batches on which `accumulate` synchronizes. Runs in this one process. Lesson
    3's exercise checks predictions with it.
    """
    from accelerate import Accelerator
    from accelerate.data_loader import prepare_data_loader

    whole_numbers(
        batches_per_epoch=batches_per_epoch, accumulation=accumulation, epochs=epochs, processes=processes
    )
    if not 0 <= process_index < processes:
        raise ValueError(
            phrase(
                "process_index must be between 0 and {last}, got {index!r}.",
                last=processes - 1,
                index=process_index,
            )
        )
    accelerator = Accelerator(gradient_accumulation_steps=accumulation, cpu=True)
    model = accelerator.prepare(torch.nn.Linear(1, 1))
    shard = prepare_data_loader(
        DataLoader(torch.randn(batches_per_epoch, 1), batch_size=1),
        num_processes=processes,
        process_index=process_index,
        put_on_device=False,
    )
    steps = 0
    for _epoch in range(epochs):
        for batch in shard:
            with accelerator.accumulate(model):
                accelerator.backward(model(batch).sum())
            steps += accelerator.sync_gradients
    accelerator.gradient_accumulation_steps = 1
    return steps


def checkpointing_under_ddp(
    use_reentrant: bool, find_unused_parameters: bool = False, steps: int = 2, shared_layer: bool = False
) -> str:
    """Train the 2-layer tiny BERT, checkpointed, under DDP in 2 real processes (gloo, forked) for
    `steps` steps, and return what rank 0 met, as a learner reads it: "trains", or "stops:" and the
    first sentence of DDP's error, quoted (it is PyTorch's, in English). With `shared_layer`, the
    second layer is the first one again (weights shared, as ALBERT shares them), so one checkpointed
    layer runs twice in a step. Lesson 3."""
    whole_numbers(steps=steps)

    def job() -> list[dict]:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        from effitrain_lessons.shared.data import tokenized_mrpc
        from effitrain_lessons.shared.finetuning import fresh_model

        dist.init_process_group("gloo")
        model = fresh_model(seed=0)
        model.config.use_cache = False
        if shared_layer:
            first = model.bert.encoder.layer[0]
            model.bert.encoder.layer = torch.nn.ModuleList([first, first])
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": use_reentrant}
        )
        model.train()
        ddp = DistributedDataParallel(model, find_unused_parameters=find_unused_parameters)
        rows = tokenized_mrpc()["train"][8 * dist.get_rank() : 8 * dist.get_rank() + 8]
        try:
            for _step in range(steps):
                ddp(**rows).loss.backward()
            met = "ok"
        except RuntimeError as error:
            met = str(error).strip().split(". ")[0].rstrip(".") + "."
        return [{"met": met}]

    met = start_workers(job, num_processes=2, timeout=120)[0][0]["met"]
    return _("trains") if met == "ok" else phrase('stops: "{message}"', message=met)


DDP_CASES = {
    N_("each layer once"): {},
    N_("each layer once, find_unused_parameters=True"): {"find_unused_parameters": True},
    N_("one layer run twice (shared weights)"): {"shared_layer": True},
}


def reentrant_under_ddp(cases: Mapping[str, Mapping] = DDP_CASES) -> Table:
    """`checkpointing_under_ddp` for each case (label -> its keyword arguments) and both forms of
    checkpointing: one row per case, one column per `use_reentrant`. Lesson 3."""
    return Table(
        ["model and DDP", "use_reentrant=True", "use_reentrant=False"],
        [
            [_(label), *(checkpointing_under_ddp(reentrant, **case) for reentrant in (True, False))]
            for label, case in cases.items()
        ],
    )


def main(argv: list[str] | None = None) -> int:
    """Run lesson 03's loop (its `# @save` cell) with the settings on the command line."""
    config = command_line(
        LoopConfig,
        argv,
        prog="python -m effitrain_lessons.with_accelerator.train_loop",
        description="Lesson 03's Accelerator loop: fine-tune BERT on MRPC-style data with activation "
        "checkpointing and accumulation. Launch with accelerate launch or torchrun for "
        "several processes.",
    )
    try:
        config.check()
        from accelerate import PartialState

        from effitrain_lessons.shared.finetuning import fresh_model, learning_rate_for, lesson_data
        from effitrain_lessons.with_accelerator.saved import train

        if config.threads is not None:
            torch.set_num_threads(config.threads)
        state = PartialState(cpu=config.cpu)
        print(
            phrase(
                "process {rank} of {num_processes}: distributed_type={distributed_type}, device={device}",
                rank=state.process_index,
                num_processes=state.num_processes,
                distributed_type=state.distributed_type.value,
                device=state.device,
            ),
            flush=True,
        )
        data = lesson_data(config.model, config.source)
        train_set = data.splits["train"]
        if config.train_rows is not None:
            train_set = train_set.select(range(min(config.train_rows, len(train_set))))
        model = fresh_model(config.model, seed=config.seed)
        learning_rate = (
            config.learning_rate if config.learning_rate is not None else learning_rate_for(config.model)
        )
        with watch_training(model) as run:
            metrics = train(
                model,
                train_set,
                data.splits["validation"],
                epochs=config.epochs,
                batch_size=config.batch_size,
                accumulation=config.accumulation,
                learning_rate=learning_rate,
                checkpointing=config.checkpointing,
                seed=config.seed,
                cpu=config.cpu,
            )
    except (ValueError, RuntimeError) as error:
        print(phrase("error: {message}", message=error), file=sys.stderr)
        end_processes()
        return 2
    if state.is_main_process:
        print(run.table(), flush=True)
        print(
            phrase(
                "validation accuracy {accuracy:.3f}, F1 {f1:.3f}",
                accuracy=metrics["accuracy"],
                f1=metrics["f1"],
            ),
            flush=True,
        )
        if config.json:
            with open(config.json, "w", encoding="utf-8") as handle:
                json.dump({**asdict(run), **metrics, "num_processes": state.num_processes}, handle, indent=1)
    end_processes()
    return 0


if __name__ == "__main__":
    sys.exit(main())
