"""A measured training run in several processes: its configuration, what each process counted, the launch.

Shared by lessons 4 and 5, which run their own training loop (a `# @save` cell each) in real
processes and measure it from outside, the same way: lesson 4's Local SGD against data parallel,
lesson 5's DiLoCo (`diloco.DiLoCoConfig` extends `RunConfig`). Neither lesson owns the machinery, so
it lives here, under the name of what it makes: distributed training runs. (Not plain `runs`: that
is what the lessons and tests call a list of runs' reports, and a module of that name would be
shadowed by it.)

- `RunConfig`: one run, the same in every process; each field is also a command-line option of the
  lesson's module (`python -m effitrain_lessons.local_sgd --k 8`).
- `measured_run(config, loop)` runs `loop(config, model, train_set)` in this process and measures it
  from outside the loop: a forward pre-hook counts micro-batches and fingerprints the parameters,
  a forward hook reads each loss, and a `CommunicationCounter` sees every all-reduce:
  - data parallel (DDP) all-reduces *gradient buckets* during `backward()`: a communication hook, put
    on every `DistributedDataParallel` the loop's `accelerator.prepare` builds, sees each bucket and
    its bytes;
  - `accelerate.local_sgd.LocalSGD` (and lesson 5's outer step) all-reduces *parameters* through
    `torch.distributed.all_reduce`, which is wrapped to count.
- `launch(configs, loop)` forks real worker processes from a notebook (`effitrain_lessons.processes`,
  gloo on the CPU) and returns what each process measured (`ProcessReport`); `summary` makes one
  results row of a run; `run_under_launcher` is the body of a lesson's module under `torchrun` or
  `accelerate launch`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import sys
import time
from dataclasses import asdict, dataclass, field

import torch

from effitrain_lessons.arguments import whole_numbers
from effitrain_lessons.i18n import _, phrase
from effitrain_lessons.processes import end_processes, start_workers

MODES = ("ddp", "local_sgd")


@dataclass
class RunConfig:
    """One training run, the same in every process (each reads its own share of the data). Each field
    is also an option of the lesson's module, `python -m effitrain_lessons.local_sgd` (`--batch-size`,
    `--no-cpu`, ...). The modes are lesson 4's; lesson 5's `DiLoCoConfig` adds its own."""

    mode: str = field(
        default="local_sgd",
        metadata={"choices": MODES, "help": "ddp: gradients every step; local_sgd: parameters every k steps"},
    )
    k: int = field(default=8, metadata={"help": "LocalSGD's local_sgd_steps"})
    steps: int = field(default=160, metadata={"help": "micro-batches per process"})
    batch_size: int = field(default=16, metadata={"help": "per process and micro-batch"})
    accumulation: int = 1
    learning_rate: float = 1e-3
    layers: int = field(default=4, metadata={"help": "encoder layers of the tiny BERT"})
    seed: int = 0
    cpu: bool = field(default=True, metadata={"help": "gloo on the CPU; --no-cpu uses the GPUs"})

    @property
    def label(self) -> str:
        """The run's name in tables, figures and the rank lines, in the language in use."""
        name = _("data parallel") if self.mode == "ddp" else phrase("Local SGD, K={k}", k=self.k)
        if self.accumulation > 1:
            return phrase("{run}, accumulation {accumulation}", run=name, accumulation=self.accumulation)
        return name

    def expected_synchronizations(self) -> int:
        """The rule the counts are checked against: data parallel all-reduces gradients at every
        micro-batch's backward (with accumulation: every optimizer step); LocalSGD averages
        parameters every k calls of `step()` and once more on exit: floor(steps / k) + 1."""
        if self.mode == "ddp":
            return -(-self.steps // self.accumulation)
        return self.steps // self.k + 1

    def check(self) -> None:
        """Raise ValueError with one sentence for a setting a run cannot use."""
        if self.mode not in MODES:
            raise ValueError(
                phrase("mode must be one of {modes}, got {mode!r}.", modes=MODES, mode=self.mode)
            )
        whole_numbers(
            k=self.k,
            steps=self.steps,
            batch_size=self.batch_size,
            accumulation=self.accumulation,
            layers=self.layers,
        )


@dataclass
class ProcessReport:
    """What one process measured in one run."""

    rank: int
    num_processes: int
    distributed_type: str
    config: dict
    config_type: str = "RunConfig"  # the class of the configuration (see config_of)
    losses: list[float] = field(default_factory=list)  # each micro-batch's loss in this process
    gradient_allreduces: list[tuple[int, int]] = field(default_factory=list)  # (step, bytes) per DDP bucket
    # (round, bytes) per all_reduce call
    parameter_allreduces: list[tuple[int, int]] = field(default_factory=list)
    # how long each of those calls took
    parameter_allreduce_seconds: list[float] = field(default_factory=list)
    round_steps: list[int] = field(default_factory=list)  # the step at which each barrier-started round began
    fingerprints: list[str] = field(default_factory=list)  # digest of all parameters after each step
    final_fingerprint: str = ""  # after the run (for LocalSGD: after its last average, on exit)
    final_parameters: str = ""  # every parameter after the run, float32 bytes in base64 (see `parameters`)
    eval_loss: float = float("nan")
    eval_accuracy: float = float("nan")
    seconds: float = 0.0

    @property
    def allreduce_calls(self) -> int:
        return len(self.gradient_allreduces) + len(self.parameter_allreduces)

    @property
    def allreduce_bytes(self) -> int:
        return sum(size for _when, size in self.gradient_allreduces + self.parameter_allreduces)

    @property
    def synchronizations(self) -> int:
        """Rounds of communication: steps at which DDP all-reduced gradients, plus rounds in which
        parameters were all-reduced (each LocalSGD average starts with a barrier; the average on
        exit is one more round)."""
        return len(self.sync_steps)

    @property
    def sync_steps(self) -> list[int]:
        """The step of each synchronization (-1: LocalSGD's average on exit, in lesson runs)."""
        gradient_steps = {step for step, _size in self.gradient_allreduces}
        parameter_rounds = {round_ for round_, _size in self.parameter_allreduces}
        return sorted(list(gradient_steps) + [self.round_steps[r] for r in parameter_rounds])

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 20 micro-batches (less noisy than the last one)."""
        tail = self.losses[-20:]
        return sum(tail) / len(tail) if tail else float("nan")

    def parameters(self) -> torch.Tensor:
        """Every parameter after the run, flattened into one float32 vector (to compare runs)."""
        return torch.frombuffer(bytearray(base64.b64decode(self.final_parameters)), dtype=torch.float32)

    def describe(self) -> str:
        return phrase(
            "process {rank} of {num_processes}: distributed_type={distributed_type}, "
            "num_processes={num_processes}",
            rank=self.rank,
            num_processes=self.num_processes,
            distributed_type=self.distributed_type,
        )


EXIT = -1  # the step recorded for LocalSGD's average on exit


class CommunicationCounter:
    """Counts all-reduces in this process while active: DDP's gradient buckets through a
    communication hook, and every `torch.distributed.all_reduce` call (LocalSGD's averages)."""

    def __init__(self, report: ProcessReport):
        self.report = report
        self.step = 0
        self.round = -1
        self._in_ddp_hook = False

    def ddp_hook(self, state, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        buffer = bucket.buffer()
        self.report.gradient_allreduces.append((self.step, buffer.numel() * buffer.element_size()))
        self._in_ddp_hook = True  # its all_reduce is this bucket's, already counted
        try:
            return default_hooks.allreduce_hook(None, bucket)
        finally:
            self._in_ddp_hook = False

    @contextlib.contextmanager
    def counting_all_reduce(self):
        original_all_reduce, original_barrier = torch.distributed.all_reduce, torch.distributed.barrier

        def all_reduce(tensor, *args, **kwargs):
            if self._in_ddp_hook:
                return original_all_reduce(tensor, *args, **kwargs)
            if self.round < 0 or self.report.round_steps[self.round] != self.step:
                self._new_round()  # the first all-reduce of a step that no barrier announced (DiLoCo's)
            self.report.parameter_allreduces.append((self.round, tensor.numel() * tensor.element_size()))
            start = time.perf_counter()
            try:
                return original_all_reduce(tensor, *args, **kwargs)
            finally:
                self.report.parameter_allreduce_seconds.append(time.perf_counter() - start)

        def barrier(*args, **kwargs):
            self._new_round()
            return original_barrier(*args, **kwargs)

        torch.distributed.all_reduce, torch.distributed.barrier = all_reduce, barrier
        try:
            yield
        finally:
            torch.distributed.all_reduce, torch.distributed.barrier = original_all_reduce, original_barrier

    @contextlib.contextmanager
    def watching_loop(self):
        """While active: put the counting communication hook on every DistributedDataParallel built
        (the loop's `accelerator.prepare` builds one when there are several processes), and mark
        what `LocalSGD` does when its block exits (its last average) as the step EXIT."""
        from accelerate.local_sgd import LocalSGD
        from torch.nn.parallel import DistributedDataParallel

        original_init, original_exit = DistributedDataParallel.__init__, LocalSGD.__exit__
        counter = self

        def init(ddp, *args, **kwargs):
            original_init(ddp, *args, **kwargs)
            ddp.register_comm_hook(None, counter.ddp_hook)

        def exit_(local_sgd, *exc):
            counter.step = EXIT
            return original_exit(local_sgd, *exc)

        DistributedDataParallel.__init__, LocalSGD.__exit__ = init, exit_
        try:
            yield
        finally:
            DistributedDataParallel.__init__, LocalSGD.__exit__ = original_init, original_exit

    def _new_round(self) -> None:
        self.round += 1
        self.report.round_steps.append(self.step)


def fingerprint(model: torch.nn.Module) -> str:
    """A digest of every parameter's bytes: equal only when the parameters are bit-identical."""
    digest = hashlib.blake2b(digest_size=8)
    for parameter in model.parameters():
        digest.update(parameter.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def measured_run(config: RunConfig, loop, splits=None) -> ProcessReport:
    """Run `loop(config, model, train_set)` (the lesson's `train`) in this process and measure it from
    outside: a forward pre-hook counts micro-batches and fingerprints the parameters each previous
    step left, a forward hook reads each loss, and the counter sees every all-reduce. Then every
    process evaluates its own final model on the whole validation split (no communication)."""
    from accelerate import PartialState

    from effitrain_lessons.data import tokenized_mrpc
    from effitrain_lessons.models import tiny_bert

    config.check()
    state = PartialState(cpu=config.cpu)
    report = ProcessReport(
        rank=state.process_index,
        num_processes=state.num_processes,
        distributed_type=state.distributed_type.value,
        config=asdict(config),
        config_type=type(config).__name__,
    )
    splits = splits if splits is not None else tokenized_mrpc()
    torch.manual_seed(config.seed)  # the same starting weights in every process
    model = tiny_bert(num_hidden_layers=config.layers, dropout=False)
    counter = CommunicationCounter(report)

    def step_starts(module, args, kwargs):
        if module.training:
            if counter.step != 0:
                report.fingerprints.append(fingerprint(module))  # what the previous step left
            counter.step += 1

    def step_loss(module, args, kwargs, output):
        if module.training:
            report.losses.append(output.loss.item())

    hooks = [
        model.register_forward_pre_hook(step_starts, with_kwargs=True),
        model.register_forward_hook(step_loss, with_kwargs=True),
    ]
    start = time.perf_counter()
    try:
        with counter.watching_loop(), counter.counting_all_reduce():
            loop(config, model, splits["train"])
    finally:
        for hook in hooks:
            hook.remove()
    if state.use_distributed:
        torch.distributed.barrier()
    report.seconds = time.perf_counter() - start
    report.final_fingerprint = fingerprint(model)
    report.final_parameters = base64.b64encode(
        torch.cat([parameter.detach().cpu().float().reshape(-1) for parameter in model.parameters()])
        .numpy()
        .tobytes()
    ).decode()
    report.fingerprints.append(report.final_fingerprint)

    model.eval()
    validation = splits["validation"][:]
    with torch.no_grad():
        batch = {name: column.to(state.device) for name, column in validation.items()}
        outputs = model(**batch)
    report.eval_loss = outputs.loss.item()
    report.eval_accuracy = (outputs.logits.argmax(-1) == batch["labels"]).float().mean().item()
    return report


def config_of(report: ProcessReport) -> RunConfig:
    """The configuration a report was measured with, as its own class (lesson 5's `DiLoCoConfig`
    extends `RunConfig`)."""
    types = {kind.__name__: kind for kind in (RunConfig, *RunConfig.__subclasses__())}
    return types[report.config_type](**report.config)


def summary(reports: list[ProcessReport]) -> dict:
    """One row of the lesson's results table from the reports of one run (all processes)."""
    first = reports[0]
    config = config_of(first)
    seconds = max(report.seconds for report in reports)  # the slowest process sets the run's time
    return {
        "run": config.label,
        "k": config.k if config.mode == "local_sgd" else None,
        "steps": config.steps,
        "synchronizations": first.synchronizations,
        "expected": config.expected_synchronizations(),
        "allreduce_calls": first.allreduce_calls,
        "megabytes": first.allreduce_bytes / 1e6,
        "gradient_allreduces": len(first.gradient_allreduces),
        "final_loss": sum(report.final_loss for report in reports) / len(reports),
        "eval_loss": first.eval_loss,
        "eval_accuracy": first.eval_accuracy,
        "seconds": seconds,
        "ms_per_step": 1000 * seconds / config.steps,
        "same_in_every_process": all(
            report.synchronizations == first.synchronizations
            and report.allreduce_bytes == first.allreduce_bytes
            for report in reports
        ),
        "equal_at_end": len({report.final_fingerprint for report in reports}) == 1,
    }


def launch(
    configs: list[RunConfig], loop=None, num_processes: int = 2, timeout: float = 300.0
) -> list[list[ProcessReport]]:
    """Run `loop(config, model, train_set)` (a lesson's `train`) for every configuration in
    `num_processes` real processes forked from this one (gloo, CPU), measured by `measured_run`.
    Forked, the processes run the function as the notebook defines it now, edits included.
    `loop` may also be a list with one loop per configuration (lesson 5 runs lesson 4's beside its own).

    Returns, for each configuration, one `ProcessReport` per process (rank order). The processes
    are started once and run the configurations one after the other. When a process fails or the
    whole launch takes longer than `timeout` seconds, every process is stopped and RuntimeError
    says why; no process outlives the call. Needs `fork` (Linux, macOS); used by lessons 4 and 5.
    """
    configs = list(configs)
    if not configs:
        raise ValueError(_("launch needs at least one RunConfig."))
    loops = list(loop) if isinstance(loop, (list, tuple)) else [loop] * len(configs)
    if len(loops) != len(configs) or not all(callable(each) for each in loops):
        raise TypeError(
            _(
                "launch needs the training loop too: launch(configs, train), "
                "with train(config, model, train_set), or one such loop per configuration."
            )
        )
    for config in configs:
        config.check()

    from effitrain_lessons.data import tokenized_mrpc

    splits = tokenized_mrpc()  # once, here: the forked processes share it

    def job() -> list[dict]:
        return [asdict(measured_run(config, each, splits)) for config, each in zip(configs, loops)]

    per_rank = start_workers(job, num_processes, timeout)
    return [
        [ProcessReport(**per_rank[rank][i]) for rank in range(num_processes)] for i in range(len(configs))
    ]


def write_whole(text: str) -> None:
    """Write `text` to standard output in one system call where a file is behind it: processes that
    share one output would otherwise interleave, since print() writes a text and its newline apart."""
    sys.stdout.flush()
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, io.UnsupportedOperation):  # captured output: a notebook, pytest
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    os.write(descriptor, text.encode())


def run_under_launcher(config: RunConfig, saved_loop) -> int:
    """The body of a lesson's module under a launcher: check `config`, import the lesson's saved loop
    (`saved_loop()` returns it), run it in this process with `measured_run`, print what this process
    counted; a bad setting is one sentence on stderr and exit code 2. Lessons 4 and 5 use it."""
    try:
        config.check()
        report = measured_run(config, saved_loop())
    except ValueError as error:
        print(phrase("error: {message}", message=error), file=sys.stderr)
        end_processes()
        return 2
    line = phrase(
        "[rank {rank}] {run}: {synchronizations} synchronizations, {calls} all-reduce calls, "
        "{bytes:,} bytes; validation loss {loss:.4f}, accuracy {accuracy:.3f}",
        rank=report.rank,
        run=config.label,
        synchronizations=report.synchronizations,
        calls=report.allreduce_calls,
        bytes=report.allreduce_bytes,
        loss=report.eval_loss,
        accuracy=report.eval_accuracy,
    )
    write_whole(f"{report.describe()}\n{line}\n")
    end_processes()
    return 0
