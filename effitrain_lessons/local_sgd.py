"""Lesson 4: Local SGD with Accelerate on real processes, with its communication counted from outside.

The training loop is the lesson's own: `train(config, model, train_set)`, slide 9's loop, written in a
`#@save` cell (built into `effitrain_lessons/lesson_code/lesson_04.py`). `launch(configs, train,
num_processes=2)` forks real worker processes from a notebook (gloo on the CPU), runs that loop for
every configuration in them one after the other, and returns what each process measured: its rank
and `distributed_type`, the losses, and every all-reduce it made, counted by instrumentation around
the loop rather than by formula or by lines in it:

- data parallel (DDP) all-reduces *gradient buckets* during `backward()`: a communication hook, put on
  every `DistributedDataParallel` the loop's `accelerator.prepare` builds, sees each bucket and its bytes;
- `accelerate.local_sgd.LocalSGD` all-reduces (averages) *parameters* every `local_sgd_steps` calls of
  `step()` and once more on exit, through `torch.distributed.all_reduce`, which is wrapped to count.

The same loop runs as a module under a launcher on many GPUs and machines:

    torchrun --nproc_per_node 8 -m effitrain_lessons.local_sgd --k 8 --steps 200
    accelerate launch --multi_gpu --num_processes 8 -m effitrain_lessons.local_sgd --k 8 --steps 200
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import multiprocessing
import os
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from effitrain_lessons.arguments import command_line, whole_numbers
from effitrain_lessons.device import end_processes
from effitrain_lessons.i18n import _, phrase
from effitrain_lessons.tables import Table

MODES = ("ddp", "local_sgd")


@dataclass
class RunConfig:
    """One training run, the same in every process (each reads its own share of the data). Each field
    is also an option of `python -m effitrain_lessons.local_sgd` (`--batch-size`, `--no-cpu`, ...)."""

    mode: str = field(default="local_sgd", metadata={
        "choices": MODES, "help": "ddp: gradients every step; local_sgd: parameters every k steps"})
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
            raise ValueError(phrase("mode must be one of {modes}, got {mode!r}.", modes=MODES, mode=self.mode))
        whole_numbers(k=self.k, steps=self.steps, batch_size=self.batch_size, accumulation=self.accumulation,
                      layers=self.layers)


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
    parameter_allreduces: list[tuple[int, int]] = field(default_factory=list)  # (round, bytes) per all_reduce call
    parameter_allreduce_seconds: list[float] = field(default_factory=list)  # how long each of those calls took
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
        return sum(size for _, size in self.gradient_allreduces + self.parameter_allreduces)

    @property
    def synchronizations(self) -> int:
        """Rounds of communication: steps at which DDP all-reduced gradients, plus rounds in which
        parameters were all-reduced (each LocalSGD average starts with a barrier; the average on
        exit is one more round)."""
        return len(self.sync_steps)

    @property
    def sync_steps(self) -> list[int]:
        """The step of each synchronization (-1: LocalSGD's average on exit, in lesson runs)."""
        gradient_steps = {step for step, _ in self.gradient_allreduces}
        parameter_rounds = {round_ for round_, _ in self.parameter_allreduces}
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
        return phrase("process {rank} of {num_processes}: distributed_type={distributed_type}, "
                      "num_processes={num_processes}", rank=self.rank, num_processes=self.num_processes,
                      distributed_type=self.distributed_type)


EXIT = -1  # the step recorded for LocalSGD's average on exit


class _CommunicationCounter:
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
    report = ProcessReport(rank=state.process_index, num_processes=state.num_processes,
                           distributed_type=state.distributed_type.value, config=asdict(config),
                           config_type=type(config).__name__)
    splits = splits if splits is not None else tokenized_mrpc()
    torch.manual_seed(config.seed)  # the same starting weights in every process
    model = tiny_bert(num_hidden_layers=config.layers, dropout=False)
    counter = _CommunicationCounter(report)

    def step_starts(module, args, kwargs):
        if module.training:
            if counter.step != 0:
                report.fingerprints.append(fingerprint(module))  # what the previous step left
            counter.step += 1

    def step_loss(module, args, kwargs, output):
        if module.training:
            report.losses.append(output.loss.item())

    hooks = [model.register_forward_pre_hook(step_starts, with_kwargs=True),
             model.register_forward_hook(step_loss, with_kwargs=True)]
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
    report.final_parameters = base64.b64encode(torch.cat(
        [parameter.detach().cpu().float().reshape(-1) for parameter in model.parameters()]).numpy().tobytes()).decode()
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
            report.synchronizations == first.synchronizations and report.allreduce_bytes == first.allreduce_bytes
            for report in reports
        ),
        "equal_at_end": len({report.final_fingerprint for report in reports}) == 1,
    }


def agreement(reports: list[ProcessReport], steps: int | None = None) -> str:
    """One character per step: '=' where every process held bit-identical parameters after the
    step, '.' where they differed."""
    fingerprints = [report.fingerprints[:steps] for report in reports]
    return "".join("=" if len(set(step)) == 1 else "." for step in zip(*fingerprints))


def _yes_no(answer: bool) -> str:
    return _("yes") if answer else _("NO")  # NO in capitals: the answer that needs looking into


def results(runs: list[list[ProcessReport]]) -> Table:
    """Lesson 4's results table: one row per run, as counted in process 0."""
    rows = []
    for reports in runs:
        row = summary(reports)
        rows.append([row["run"], row["steps"], row["synchronizations"], row["expected"], row["allreduce_calls"],
                     f"{row['megabytes']:.2f}", row["gradient_allreduces"], f"{row['eval_loss']:.4f}",
                     f"{row['eval_accuracy']:.3f}", f"{row['ms_per_step']:.1f}",
                     _yes_no(row["same_in_every_process"]), _yes_no(row["equal_at_end"])])
    return Table(
        ["run", "steps", "synchronizations", "rule", "all-reduce calls", "MB sent", "gradient all-reduces",
         "validation loss", "validation accuracy", "ms per step", "same counts in every process",
         "identical parameters at the end"],
        rows,
        notes=[_("synchronizations: rounds of communication counted in process 0; rule: the optimizer steps for "
                 "data parallel, floor(steps / K) + 1 for Local SGD (the + 1 is the average on exit); MB sent: "
                 "all-reduced by process 0.")])


# ---------------------------------------------------------------------------------------------
# Launching real processes from a notebook
# ---------------------------------------------------------------------------------------------


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _child(rank: int, world_size: int, port: int, folder: str, job, threads: int) -> None:
    log = open(Path(folder) / f"rank{rank}.log", "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr = log
    os.dup2(log.fileno(), 2)  # torch's C++ warnings too: they belong in the log, not under the notebook's cell
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
    )
    torch.set_num_threads(threads)
    # A forked child inherits the parent's Accelerate state; start from a clean one.
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    PartialState._reset_state()
    try:
        reports = job()
    except BaseException:
        import traceback

        traceback.print_exc()
        raise
    (Path(folder) / f"rank{rank}.json").write_text(json.dumps(reports), encoding="utf-8")
    end_processes()


def _preload() -> None:
    """Import here, once, what every worker needs: forked workers then share these pages with this
    process instead of each importing (and holding) its own copy, and start training at once."""
    import accelerate.local_sgd  # noqa: F401
    import torch.distributed  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel  # noqa: F401

    from effitrain_lessons.models import tiny_bert  # noqa: F401  (transformers' BERT)


def start_workers(job, num_processes: int, timeout: float) -> list[list[dict]]:
    """Fork `num_processes` workers that each run `job()` (returning a list of report dicts) and
    collect what each returned; stop them all on failure or timeout."""
    if not can_fork():
        raise RuntimeError(_(
            "This platform cannot fork processes (Windows): run the lesson's training in a terminal instead, "
            "with torchrun --nproc_per_node 2 -m effitrain_lessons.local_sgd --cpu."
        ))
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or not 2 <= num_processes <= 8:
        raise ValueError(phrase("num_processes must be a whole number from 2 to 8, got {num_processes!r}.",
                                num_processes=num_processes))
    threads = max(1, (os.cpu_count() or 1) // num_processes)
    _preload()
    with tempfile.TemporaryDirectory(prefix="effitrain-localsgd-") as folder:
        context = torch.multiprocessing.start_processes(
            _child, args=(num_processes, _free_port(), folder, job, threads),
            nprocs=num_processes, join=False, start_method="fork",
        )
        deadline = time.monotonic() + timeout
        try:
            while not context.join(timeout=0.5):
                if time.monotonic() > deadline:
                    raise TimeoutError
        except TimeoutError:
            raise RuntimeError(phrase("The processes did not finish within {timeout:.0f} s and were stopped: "
                                      "try fewer steps or configurations.", timeout=timeout)) from None
        except Exception as error:  # a process raised or died: torch has stopped the others
            raise RuntimeError(phrase("A training process failed ({kind}); its log ends: {log}",
                                      kind=type(error).__name__, log=_log_tail(folder))) from None
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
                process.join(timeout=5)
        return [json.loads((Path(folder) / f"rank{rank}.json").read_text()) for rank in range(num_processes)]


def launch(configs: list[RunConfig], loop=None, num_processes: int = 2, timeout: float = 300.0) -> list[list[ProcessReport]]:
    """Run `loop(config, model, train_set)` (lesson 4's `train`) for every configuration in
    `num_processes` real processes forked from this one (gloo, CPU), measured by `measured_run`.
    Forked, the processes run the function as the notebook defines it now, edits included.
    `loop` may also be a list with one loop per configuration (lesson 5 runs lesson 4's beside its own).

    Returns, for each configuration, one `ProcessReport` per process (rank order). The processes
    are started once and run the configurations one after the other. When a process fails or the
    whole launch takes longer than `timeout` seconds, every process is stopped and RuntimeError
    says why; no process outlives the call. Needs `fork` (Linux, macOS); used by lesson 4.
    """
    configs = list(configs)
    if not configs:
        raise ValueError(_("launch needs at least one RunConfig."))
    loops = list(loop) if isinstance(loop, (list, tuple)) else [loop] * len(configs)
    if len(loops) != len(configs) or not all(callable(each) for each in loops):
        raise TypeError(_("launch needs the training loop too: launch(configs, train), "
                          "with train(config, model, train_set), or one such loop per configuration."))
    for config in configs:
        config.check()

    from effitrain_lessons.data import tokenized_mrpc

    splits = tokenized_mrpc()  # once, here: the forked processes share it

    def job() -> list[dict]:
        return [asdict(measured_run(config, each, splits)) for config, each in zip(configs, loops)]

    per_rank = start_workers(job, num_processes, timeout)
    return [[ProcessReport(**per_rank[rank][i]) for rank in range(num_processes)] for i in range(len(configs))]


def run_custom_loop(loop, batches: int = 12, num_processes: int = 2, batch_size: int = 8,
                    timeout: float = 120.0) -> list[ProcessReport]:
    """Run `loop(accelerator, model, optimizer, dataloader)` in real processes and count its
    communication (lesson 4's exercise checks a learner's loop with it).

    Each process gets `batches` batches of a 1-layer tiny BERT's training data; a step is one
    forward pass of the model. Returns one `ProcessReport` per process.
    """
    if not callable(loop):
        raise TypeError(_("run_custom_loop needs a function loop(accelerator, model, optimizer, dataloader)."))

    from effitrain_lessons.data import tokenized_mrpc

    train = tokenized_mrpc()["train"]  # once, here: the forked processes share it

    def job() -> list[dict]:
        from accelerate import Accelerator
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader

        from effitrain_lessons.models import tiny_bert

        accelerator = Accelerator(cpu=True)
        report = ProcessReport(rank=accelerator.process_index, num_processes=accelerator.num_processes,
                               distributed_type=accelerator.distributed_type.value, config={})
        torch.manual_seed(0)
        model = tiny_bert(num_hidden_layers=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        counter = _CommunicationCounter(report)

        def count_step(module, args, kwargs):
            counter.step += 1

        model.register_forward_pre_hook(count_step, with_kwargs=True)
        rows = train.select(range(batches * batch_size * accelerator.num_processes))
        loader = DataLoader(rows, batch_size=batch_size)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        if isinstance(model, DistributedDataParallel):
            model.register_comm_hook(None, counter.ddp_hook)
        with counter.watching_loop(), counter.counting_all_reduce():
            loop(accelerator, model, optimizer, loader)
        accelerator.wait_for_everyone()
        report.final_fingerprint = fingerprint(model)
        return [asdict(report)]

    per_rank = start_workers(job, num_processes, timeout)
    return [ProcessReport(**per_rank[rank][0]) for rank in range(num_processes)]


def _log_tail(folder: str) -> str:
    lines = []
    for log in sorted(Path(folder).glob("rank*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        if text:
            lines.append(f"[{log.stem}] {text[-1]}")
    return " | ".join(lines) or _("(no output)")  # the lines themselves are the log's, as written


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
    print(report.describe(), flush=True)
    print(phrase("[rank {rank}] {run}: {synchronizations} synchronizations, {calls} all-reduce calls, "
                 "{bytes:,} bytes; validation loss {loss:.4f}, accuracy {accuracy:.3f}",
                 rank=report.rank, run=config.label, synchronizations=report.synchronizations,
                 calls=report.allreduce_calls, bytes=report.allreduce_bytes, loss=report.eval_loss,
                 accuracy=report.eval_accuracy), flush=True)
    end_processes()
    return 0


def _lesson_04_loop():
    from effitrain_lessons.lesson_code.lesson_04 import train

    return train


def main(argv: list[str] | None = None) -> int:
    """Run lesson 4's loop (its `#@save` cell) in this process, under a launcher, counting its all-reduces."""
    config = command_line(RunConfig, argv, prog="python -m effitrain_lessons.local_sgd",
                          description="Lesson 04's training with Local SGD (or plain data parallel), counting its "
                                      "all-reduces. Start it with torchrun or accelerate launch for several processes.")
    return run_under_launcher(config, _lesson_04_loop)


if __name__ == "__main__":
    sys.exit(main())
