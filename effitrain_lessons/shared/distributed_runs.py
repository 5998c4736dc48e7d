"""A measured training run in several processes: its configuration, what each process counted, the launch.

Shared by lessons 4 and 5, which run their own training loop (a `# @save` cell each) in real
processes and measure it from outside, the same way: lesson 4's Local SGD against data parallel,
lesson 5's DiLoCo (`diloco.DiLoCoConfig` extends `RunConfig`). Neither lesson owns the machinery, so
it lives here, under the name of what it makes: distributed training runs. (Not plain `runs`: that
is what the lessons and tests call a list of runs' reports, and a module of that name would be
shadowed by it.)

- `RunConfig`: one run, the same in every process; each field is also a command-line option of the
  lesson's module (`python -m effitrain_lessons.local_sgd.runs --k 8`).
- `measured_run(config, loop)` runs `loop(config, model, train_set)` in this process and measures it
  from outside the loop: a forward pre-hook counts micro-batches and fingerprints the parameters,
  a forward hook reads each loss, and a `CommunicationCounter` sees every all-reduce:
  - data parallel (DDP) all-reduces *gradient buckets* during `backward()`: a communication hook, put
    on every `DistributedDataParallel` the loop's `accelerator.prepare` builds, sees each bucket and
    its bytes;
  - `accelerate.local_sgd.LocalSGD` (and lesson 5's outer step) all-reduces *parameters* through
    `torch.distributed.all_reduce`, which is wrapped to count.
- `launch(configs, loop)` forks real worker processes from a notebook (`effitrain_lessons.shared.processes`,
  gloo on the CPU) and returns what each process measured (`ProcessReport`); `summary` makes one
  results row of a run; `run_under_launcher` is the body of a lesson's module under `torchrun` or
  `accelerate launch`.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import hashlib
import io
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.processes import (
    end_processes,
    free_port,
    log_tail,
    preload,
    start_workers,
    write_to_log,
)
from effitrain_lessons.shared.timing import WARMUP, Ratio, Times


@dataclass(frozen=True)
class Link:
    """A simulated link between the processes, the alpha-beta model of a network: every collective
    call (an all-reduce, a barrier) takes `latency_ms` (alpha) plus its bytes at `megabits_per_s`
    (beta), one call after the other, on top of what the machine's own link takes. `Link()` adds
    nothing. The delay is added where the communication happens, once the real call is done: DDP's
    communication hook (asynchronous, so the backward pass may hide it) and
    `torch.distributed.all_reduce` / `barrier` (which block the process until the call is done)."""

    latency_ms: float = 0.0
    megabits_per_s: float = 0.0  # 0: no bandwidth limit

    def seconds(self, nbytes: int) -> float:
        """How long this link takes to carry one call of `nbytes` bytes."""
        carry = nbytes * 8 / (self.megabits_per_s * 1e6) if self.megabits_per_s else 0.0
        return self.latency_ms / 1000 + carry

    @property
    def simulated(self) -> bool:
        return bool(self.latency_ms or self.megabits_per_s)

    def describe(self) -> str:
        if not self.simulated:
            return _("this machine's own link")
        return phrase(
            "{bandwidth} Mb/s, {latency} ms a call",
            bandwidth=format_number(self.megabits_per_s, "g") if self.megabits_per_s else "∞",
            latency=format_number(self.latency_ms, "g"),
        )


@dataclass
class RunConfig:
    """One training run, the same in every process (each reads its own share of the data): plain data
    parallel. A lesson's own runs extend it (lesson 4's `LocalSGDConfig` adds Local SGD's mode and K,
    lesson 5's `DiLoCoConfig` DiLoCo's H and outer optimizer). Each field is also an option of the
    lesson's module (`--batch-size`, `--no-cpu`, ...)."""

    steps: int = field(default=160, metadata={"help": "micro-batches per process"})
    batch_size: int = field(default=16, metadata={"help": "per process and micro-batch"})
    accumulation: int = 1
    learning_rate: float = 1e-3
    layers: int = field(default=4, metadata={"help": "encoder layers of the tiny BERT"})
    seed: int = 0
    cpu: bool = field(default=True, metadata={"help": "gloo on the CPU; --no-cpu uses the GPUs"})
    bucket_mb: float = field(default=25.0, metadata={"help": "DDP's bucket_cap_mb, in MB"})
    evaluate: bool = field(
        default=True, metadata={"help": "the validation loss at the end; --no-evaluate: timing runs skip it"}
    )

    @property
    def label(self) -> str:
        """The run's name in tables, figures and the rank lines, in the language in use."""
        return self.with_accumulation(_("data parallel"))

    def with_accumulation(self, name: str) -> str:
        if self.accumulation > 1:
            return phrase("{run}, accumulation {accumulation}", run=name, accumulation=self.accumulation)
        return name

    def expected_synchronizations(self) -> int:
        """The rule the counts are checked against: data parallel all-reduces gradients at every
        micro-batch's backward (with accumulation: every optimizer step)."""
        return -(-self.steps // self.accumulation)

    @property
    def sync_every(self) -> int:
        """Micro-batches from one synchronization to the next: data parallel's accumulation steps
        (a lesson's own runs say theirs). A window of this many steps costs what a step costs on
        average (`ProcessReport.step_times`)."""
        return self.accumulation

    def check(self) -> None:
        """Raise ValueError with one sentence for a setting a run cannot use."""
        whole_numbers(
            steps=self.steps,
            batch_size=self.batch_size,
            accumulation=self.accumulation,
            layers=self.layers,
        )
        at_least_zero(bucket_mb=self.bucket_mb)
        if self.bucket_mb == 0:
            raise ValueError(phrase("bucket_mb must be above 0, got {value!r}.", value=self.bucket_mb))

    @property
    def link(self) -> Link:
        """The link the processes talk over: this machine's own (lesson 4's runs may simulate one)."""
        return Link()


def at_least_zero(**values) -> None:
    """Raise ValueError with one sentence for a value that is not a number of at least 0."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ValueError(
                phrase("{name} must be a number of at least 0, got {value!r}.", name=name, value=value)
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
    step_starts: list[float] = field(
        default_factory=list
    )  # seconds into the loop at each micro-batch's forward
    barrier_steps: list[int] = field(default_factory=list)  # the step of each barrier
    link_seconds: float = 0.0  # what the simulated link added, all calls together

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

    def step_times(self, every: int = 1, warmup: int = WARMUP) -> Times | None:
        """The wall time a step takes, measured in windows of `every` consecutive steps after `warmup`
        untimed ones: each window's time divided by `every`. A run that synchronizes every `every`
        steps (Local SGD's K) has one synchronization in each window, so a window costs what its
        steps cost on average, and the median over the windows is not fooled by a cheap step
        between two averages. None when the run was too short for one window."""
        starts = self.step_starts[warmup:]
        took = [later - earlier for earlier, later in zip(starts, starts[1:])]
        windows = tuple(
            sum(took[first : first + every]) / every for first in range(0, len(took) - every + 1, every)
        )
        return Times(windows, windows, "wall") if windows else None

    def calls_by_synchronization(self) -> dict[int, list[int]]:
        """The bytes of every collective call of each synchronization, by the step it followed:
        DDP's buckets, each parameter all-reduce, each barrier (0 bytes). LocalSGD's average on exit
        (the step EXIT) is left out: a long training pays it once."""
        calls: dict[int, list[int]] = {}
        made = [(step, size) for step, size in self.gradient_allreduces]
        made += [(self.round_steps[round_], size) for round_, size in self.parameter_allreduces]
        made += [(step, 0) for step in self.barrier_steps]
        for step, size in made:
            if step != EXIT:
                calls.setdefault(step, []).append(size)
        return calls

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

    def __init__(self, report: ProcessReport, link: Link = Link()):
        self.report = report
        self.link = link
        self.step = 0
        self.round = -1
        self._in_ddp_hook = False
        self._link_free = 0.0  # when the simulated link has carried every call handed to it

    def _carry(self, nbytes: int) -> float:
        """Hand a call of `nbytes` to the simulated link now, once this machine's own link has carried
        it: the moment it arrives. The link carries one call at a time, so a call waits for the ones
        before it."""
        cost = self.link.seconds(nbytes)
        self.report.link_seconds += cost
        self._link_free = max(time.perf_counter(), self._link_free) + cost
        return self._link_free

    @staticmethod
    def _wait_until(moment: float) -> None:
        while (left := moment - time.perf_counter()) > 0:
            time.sleep(left)

    def ddp_hook(self, state, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        self.report.gradient_allreduces.append((self.step, nbytes))
        self._in_ddp_hook = True  # its all_reduce is this bucket's, already counted
        try:
            sent = default_hooks.allreduce_hook(None, bucket)
        finally:
            self._in_ddp_hook = False
        if not self.link.simulated:
            return sent
        # The bucket arrives once the real all-reduce is done and the simulated link has carried it
        # after that. DDP waits for it only at the end of backward(): until then the backward pass
        # goes on computing.
        delivered = torch.futures.Future()

        def arrived(future):
            try:
                value = future.value()
            except Exception as error:  # the real all-reduce failed: DDP reports it
                delivered.set_exception(error)
                return
            left = self._carry(nbytes) - time.perf_counter()
            if left > 0:
                threading.Timer(left, delivered.set_result, args=(value,)).start()
            else:
                delivered.set_result(value)

        sent.add_done_callback(arrived)
        return delivered

    @contextlib.contextmanager
    def counting_all_reduce(self):
        original_all_reduce, original_barrier = torch.distributed.all_reduce, torch.distributed.barrier

        def all_reduce(tensor, *args, **kwargs):
            if self._in_ddp_hook:
                return original_all_reduce(tensor, *args, **kwargs)
            if self.round < 0 or self.report.round_steps[self.round] != self.step:
                self._new_round()  # the first all-reduce of a step that no barrier announced (DiLoCo's)
            nbytes = tensor.numel() * tensor.element_size()
            self.report.parameter_allreduces.append((self.round, nbytes))
            start = time.perf_counter()
            try:
                return original_all_reduce(tensor, *args, **kwargs)
            finally:
                if self.link.simulated:
                    self._wait_until(self._carry(nbytes))
                self.report.parameter_allreduce_seconds.append(time.perf_counter() - start)

        def barrier(*args, **kwargs):
            self._new_round()
            self.report.barrier_steps.append(self.step)
            try:
                return original_barrier(*args, **kwargs)
            finally:
                if self.link.simulated:
                    self._wait_until(self._carry(0))

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
    process evaluates its own final model on the whole validation split (no communication), unless
    `config.evaluate` is off (its validation loss is then NaN)."""
    from accelerate import PartialState

    from effitrain_lessons.shared.data import tokenized_mrpc
    from effitrain_lessons.shared.models import tiny_bert

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
    counter = CommunicationCounter(report, config.link)

    def step_starts(module, args, kwargs):
        if module.training:
            report.step_starts.append(time.perf_counter() - start)
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

    if not config.evaluate:
        return report
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


def slowest(reports: list[ProcessReport], every: int = 1) -> Times | None:
    """The time a step takes in the slowest process of a run (`ProcessReport.step_times`, windows of
    `every` steps): the one with the longest median, which the others wait for at each
    synchronization. None when the run was too short to time."""
    times = [each for each in (report.step_times(every) for report in reports) if each is not None]
    return max(times, key=lambda each: each.median) if times else None


def compared(ratio: Ratio) -> str:
    """What one time over another says, as far as the spreads allow (lessons 4 and 5 print it beside
    the ratio): clearly longer or shorter only when the whole range is on one side of 1."""
    if ratio.low > 1:
        return _("clearly longer")
    if ratio.high < 1:
        return _("clearly shorter")
    return _("not clearly apart on this machine")


def summary(reports: list[ProcessReport]) -> dict:
    """One row of the lesson's results table from the reports of one run (all processes)."""
    first = reports[0]
    config = config_of(first)
    seconds = max(report.seconds for report in reports)  # the slowest process sets the run's time
    step_time = slowest(reports, config.sync_every)
    return {
        "run": config.label,
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
        "step_time": step_time,  # Times: the median and middle half of a step's wall time
        "ms_per_step": 1000 * step_time.median if step_time else 1000 * seconds / config.steps,
        "same_in_every_process": all(
            report.synchronizations == first.synchronizations
            and report.allreduce_bytes == first.allreduce_bytes
            for report in reports
        ),
        "equal_at_end": len({report.final_fingerprint for report in reports}) == 1,
    }


def _configs_and_loops(configs, loop) -> tuple[list[RunConfig], list]:
    """Check a launch's configurations and loops (one loop for all, or one per configuration)."""
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
    return configs, loops


def _measured_reports(configs: list[RunConfig], loops: list, splits) -> list[dict]:
    """What one process runs in a launch: every configuration's loop, measured, as report dicts."""
    return [asdict(measured_run(config, each, splits)) for config, each in zip(configs, loops)]


def _collected(per_rank: list[list[dict]], count: int) -> list[list[ProcessReport]]:
    """For each configuration, one ProcessReport per process, in rank order."""
    return [[ProcessReport(**reports[i]) for reports in per_rank] for i in range(count)]


class Launching:
    """The package's part of a launch with Accelerate's own `notebook_launcher`, whatever each process
    runs: a lesson's subclass says what (`_job`, returning a list of JSON-able reports) and what to
    make of every process's reports (`_collect`, given them in rank order).

        with SomeLaunch(..., timeout=600) as measured:
            notebook_launcher(measured, num_processes=2, use_port=measured.port)

    What `notebook_launcher` does not do, this does: each process stops itself once `timeout`
    seconds have passed since the block began (the launcher then stops the others); a failure or a
    timeout becomes one sentence with the end of the processes' logs; no process outlives the block.
    Where `notebook_launcher` runs the function in this process instead (Colab without two GPUs),
    2 processes are forked as `launch` does, and one line says so.
    """

    def __init__(self, timeout: float = 300.0, cpu: bool = True):
        self.timeout = timeout
        self.cpu = cpu
        self.port = str(free_port())  # notebook_launcher's default port is fixed: two launches would meet
        self._folder: Path | None = None

    def _prepare(self) -> None:
        """Load, here and once, what every process reads: the forked processes share it."""

    def _job(self) -> list:
        raise NotImplementedError

    def _collect(self, per_rank: list[list]) -> None:
        raise NotImplementedError

    def __enter__(self):
        import logging

        from accelerate.state import AcceleratorState

        # notebook_launcher refuses to start while this process holds an Accelerator (lesson 4
        # builds one in the notebook itself); the processes start from a clean state anyway.
        AcceleratorState._reset_state(True)
        self._prepare()
        preload()  # and the modules every process imports: shared pages, not a copy in each
        # The processes are forked: a garbage collection in one would write to every object it
        # inherited, and copy each page that holds one. Frozen, those objects are left alone.
        gc.freeze()
        self._folder = Path(tempfile.mkdtemp(prefix="effitrain-launch-"))
        self._parent = os.getpid()
        self._deadline = time.monotonic() + self.timeout
        # the launcher's agent logs each failure at length; the block says it in one sentence
        self._elastic = logging.getLogger("torch.distributed.elastic")
        self._elastic_level = self._elastic.level
        self._elastic.setLevel(logging.CRITICAL)
        # notebook_launcher names the device it launches on after the first accelerator it finds,
        # and CUDA when it finds none: on a CPU it would say "Launching training on 2 CUDAs."
        import accelerate.launchers

        self._device_type = accelerate.launchers.get_current_device_type
        if self.cpu:
            accelerate.launchers.get_current_device_type = lambda: ("cpu", "MULTI_CPU")

        def measured(*args) -> None:
            """What each process runs: the launch's job, measured (see `Launching`)."""
            self._run_here(*args)

        measured.port = self.port
        self._measured = measured
        return measured

    def _run_here(self, *args) -> None:
        if os.getpid() == self._parent:  # the launcher ran it here: fork the processes ourselves
            print(
                _(
                    "notebook_launcher ran the training in this process, as it does without two GPUs on "
                    "Colab; the package forks 2 processes instead."
                )
            )
            self._forked = start_workers(self._job, 2, max(1.0, self._deadline - time.monotonic()))
            return
        rank = int(os.environ.get("RANK", "0"))
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        folder = self._folder
        (folder / f"pid{rank}").write_text(str(os.getpid()))
        log = open(folder / f"rank{rank}.log", "w", buffering=1, encoding="utf-8")
        write_to_log(log)

        def stop_when_late():
            time.sleep(max(0.0, self._deadline - time.monotonic()))
            (folder / "timed-out").touch()
            log.write("stopped: the launch ran past its time limit\n")
            os._exit(124)

        threading.Thread(target=stop_when_late, daemon=True).start()
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        try:
            reports = self._job()
        except BaseException:
            import traceback

            traceback.print_exc()
            raise
        (folder / f"rank{rank}.json").write_text(json.dumps({"world_size": world_size, "reports": reports}))
        end_processes()

    def __exit__(self, kind, error, trace) -> bool:
        folder = self._folder
        try:
            self._stop_leftovers()
            started = any(folder.glob("pid*")) or getattr(self, "_forked", None) is not None
            if isinstance(error, KeyboardInterrupt) or (error is not None and not started):
                return False  # not a training process's failure (a typo in the block): as it was
            if error is not None:
                if (folder / "timed-out").exists():
                    raise RuntimeError(
                        phrase(
                            "The processes did not finish within {timeout:.0f} s and were stopped: "
                            "try fewer steps or configurations.",
                            timeout=self.timeout,
                        )
                    ) from None
                raise RuntimeError(
                    phrase(
                        "A training process failed ({kind}); its log ends: {log}",
                        kind=type(error).__name__,
                        log=log_tail(str(folder)),
                    )
                ) from None
            forked = getattr(self, "_forked", None)
            if forked is not None:
                self._forked = None
                self._collect(forked)
                return False
            written = sorted(folder.glob("rank*.json"))
            per_rank = [json.loads(path.read_text(encoding="utf-8")) for path in written]
            if not per_rank or any(len(per_rank) != each["world_size"] for each in per_rank):
                raise RuntimeError(
                    _(
                        "The processes ended without their reports: was the function given to "
                        "notebook_launcher the one `measuring` returned?"
                    )
                )
            ranked = sorted(zip([int(path.stem[4:]) for path in written], per_rank))
            self._collect([each["reports"] for _rank, each in ranked])
            return False
        finally:
            import accelerate.launchers

            accelerate.launchers.get_current_device_type = self._device_type
            self._elastic.setLevel(self._elastic_level)
            gc.unfreeze()
            shutil.rmtree(folder, ignore_errors=True)

    def _stop_leftovers(self) -> None:
        """Kill any process of this launch still alive (the launcher stops them; this makes sure)."""
        for pid_file in self._folder.glob("pid*"):
            pid = int(pid_file.read_text())
            stat = Path(f"/proc/{pid}/stat")
            if stat.exists() and int(stat.read_text().rsplit(")", 1)[1].split()[1]) != os.getpid():
                continue  # not ours (any more)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class measuring(Launching):
    """A launch of a lesson's own training loop with Accelerate's own `notebook_launcher` (lessons 4, 5):

        with measuring(configs, train, timeout=600) as measured:
            notebook_launcher(measured, num_processes=2, use_port=measured.port)
        runs = measured.runs

    `measured` is the function each process runs: every configuration in turn, `train` measured by
    `measured_run`, each process's reports written to a folder. Leaving the block collects them into
    `runs` (one list of `ProcessReport` per configuration, rank order), as `launch` returns them.
    The rest (time limit, failures in one sentence, no process left behind) is `Launching`'s.
    """

    def __init__(self, configs: list[RunConfig], loop=None, timeout: float = 300.0):
        self.configs, self.loops = _configs_and_loops(configs, loop)
        super().__init__(timeout, cpu=all(config.cpu for config in self.configs))
        self.runs: list[list[ProcessReport]] | None = None

    def _prepare(self) -> None:
        from effitrain_lessons.shared.data import tokenized_mrpc

        self._splits = tokenized_mrpc()
        self.runs = None

    def __enter__(self):
        measured = super().__enter__()
        measured.runs = None
        return measured

    def _job(self) -> list[dict]:
        return _measured_reports(self.configs, self.loops, self._splits)

    def _collect(self, per_rank: list[list[dict]]) -> None:
        self.runs = self._measured.runs = _collected(per_rank, len(self.configs))


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
    configs, loops = _configs_and_loops(configs, loop)

    from effitrain_lessons.shared.data import tokenized_mrpc

    splits = tokenized_mrpc()  # once, here: the forked processes share it

    def job() -> list[dict]:
        return _measured_reports(configs, loops, splits)

    return _collected(start_workers(job, num_processes, timeout), len(configs))


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
