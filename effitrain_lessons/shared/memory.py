"""Measuring one training step: activations saved for backward, FLOPs, time, peak GPU memory.

Every lesson measures with these: lesson 1 (what A + B = C keeps), lesson 2 (Trainer with and
without checkpointing), lesson 3 (the Accelerator loop), lesson 4 (the model Local SGD trains).

"Saved activations" are the tensors autograd keeps between the forward and the backward pass, seen
through `torch.autograd.graph.saved_tensors_hooks` and counted once per storage, with the model's
parameters and buffers left out (they live in memory whether or not we checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode

from effitrain_lessons.shared.device import synchronize
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsTable, Table, format_bytes, format_flops  # noqa: F401 (lessons import them from here)
from effitrain_lessons.shared.timing import REPEATS, WARMUP, Ratio, Times, time_steps


@dataclass(frozen=True)
class SavedTensor:
    """One tensor that autograd packed for backward."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int  # bytes of the whole storage behind it
    storage: tuple[str, int]  # (device, address): equal for views of one storage
    is_model_state: bool  # a parameter or buffer (or a view of one)


@dataclass
class SavedTensorLog:
    """What `record_saved_tensors` saw: every packed tensor, and the totals that matter."""

    entries: list[SavedTensor] = field(default_factory=list)

    @property
    def activations(self) -> list[SavedTensor]:
        """Packed tensors that are not model state, one per storage."""
        unique: dict[tuple[str, int], SavedTensor] = {}
        for entry in self.entries:
            if not entry.is_model_state:
                unique.setdefault(entry.storage, entry)
        return list(unique.values())

    @property
    def total_bytes(self) -> int:
        """Bytes of saved activations, each storage counted once."""
        return sum(entry.nbytes for entry in self.activations)


def storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    """(device, address) of the memory behind `tensor`: equal for every view of one storage."""
    return (str(tensor.device), tensor.untyped_storage().data_ptr())


@contextmanager
def record_saved_tensors(model: torch.nn.Module | None = None) -> Iterator[SavedTensorLog]:
    """Record every tensor autograd saves for backward inside the block.

    Tensors sharing storage with `model`'s parameters or buffers are marked as model state.
    The tensors themselves are still saved as usual: recording changes nothing in the step.
    """
    state = set()
    if model is not None:
        state = {storage_key(t) for t in (*model.parameters(), *model.buffers())}
    log = SavedTensorLog()

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        key = storage_key(tensor)
        log.entries.append(
            SavedTensor(
                shape=tuple(tensor.shape),
                dtype=tensor.dtype,
                nbytes=tensor.untyped_storage().nbytes(),
                storage=key,
                is_model_state=key in state,
            )
        )
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield log


def _forward(model: torch.nn.Module, batch) -> object:
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, tuple | list):
        return model(*batch)
    return model(batch)


def _tensors_in(batch) -> list[torch.Tensor]:
    values = (
        batch.values()
        if isinstance(batch, Mapping)
        else batch
        if isinstance(batch, tuple | list)
        else [batch]
    )
    return [value for value in values if isinstance(value, torch.Tensor)]


def _zero_grads(model: torch.nn.Module, batch) -> None:
    model.zero_grad(set_to_none=True)
    for tensor in _tensors_in(batch):
        if tensor.is_leaf and tensor.requires_grad:
            tensor.grad = None


def _loss_of(outputs, loss_fn: Callable | None) -> torch.Tensor:
    if loss_fn is not None:
        return loss_fn(outputs)
    loss = getattr(outputs, "loss", None)
    if loss is not None:
        return loss
    if isinstance(outputs, torch.Tensor):
        return outputs.float().sum()
    raise ValueError(
        _(
            "The model's output has no .loss and is not a tensor: pass loss_fn=... to say how to get a loss "
            "(or include labels in the batch)."
        )
    )


@dataclass(frozen=True)
class StepReport(ShowsAsTable):
    """One training step, measured. Divide two reports (`b / a`) to compare them as ratios."""

    saved_bytes: int  # activations saved for backward (unique storages, model state excluded)
    saved_tensors: int  # how many unique activation storages that is
    flops: int  # forward + backward, as counted by torch.utils.flop_counter
    forward_flops: int
    times: Times  # forward + backward, timed as every lesson times (shared/timing.py)
    peak_bytes: int | None  # torch.cuda.max_memory_allocated during the step; None off CUDA
    device: str
    training: bool  # the model's mode: checkpointing only happens in training mode

    def __post_init__(self):
        if isinstance(self.times, (int, float)):  # one time, e.g. in a test: a single step
            seconds = float(self.times)
            object.__setattr__(self, "times", Times((seconds,), (seconds,), "cpu"))

    @property
    def seconds(self) -> float:
        """The median time of a step."""
        return self.times.median

    def rows(self) -> list[tuple[str, str]]:
        peak = _("n/a (not CUDA)") if self.peak_bytes is None else format_bytes(self.peak_bytes)
        # "train" and "eval" stay as they are: the names of the modes model.train() and model.eval() set
        return [
            (
                _("saved activations"),
                phrase(
                    "{size} in {count} tensors", size=format_bytes(self.saved_bytes), count=self.saved_tensors
                ),
            ),
            (_("FLOPs (fwd + bwd)"), format_flops(self.flops)),
            (_("FLOPs (forward)"), format_flops(self.forward_flops)),
            (_("time"), self.times.milliseconds()),
            (_("peak GPU memory"), peak),
            (_("device / mode"), f"{self.device} / {'train' if self.training else 'eval'}"),
        ]

    def table(self) -> Table:
        return Table(["step", "value"], self.rows())

    def __truediv__(self, other: StepReport) -> StepComparison:
        if not isinstance(other, StepReport):
            return NotImplemented
        return StepComparison(self, other)


@dataclass(frozen=True)
class StepComparison(ShowsAsTable):
    """`new / base`, figure by figure (e.g. checkpointed / plain)."""

    new: StepReport
    base: StepReport

    @property
    def saved_bytes(self) -> float:
        return _ratio(self.new.saved_bytes, self.base.saved_bytes)

    @property
    def flops(self) -> float:
        return _ratio(self.new.flops, self.base.flops)

    @property
    def seconds(self) -> Ratio:
        """The time ratio, with the spread the two sets of steps allow."""
        return self.new.times / self.base.times

    @property
    def peak_bytes(self) -> float | None:
        if self.new.peak_bytes is None or self.base.peak_bytes is None:
            return None
        return _ratio(self.new.peak_bytes, self.base.peak_bytes)

    @property
    def saved_reduction(self) -> float:
        """Fraction of saved activation bytes removed: 1 - new / base."""
        return 1.0 - self.saved_bytes

    def rows(self) -> list[tuple[str, str]]:
        rows = [
            (
                _("saved activations"),
                phrase(
                    "{ratio:.3f}x ({reduction:.1%} fewer bytes)",
                    ratio=self.saved_bytes,
                    reduction=self.saved_reduction,
                ),
            ),
            (_("FLOPs"), f"{format_number(self.flops, '.3f')}x"),
            (_("time"), str(self.seconds)),
        ]
        if self.peak_bytes is not None:
            rows.append((_("peak GPU memory"), f"{format_number(self.peak_bytes, '.3f')}x"))
        return rows

    def table(self) -> Table:
        return Table(["ratio (new / base)", "value"], self.rows())


def _ratio(new: float, base: float) -> float:
    return new / base if base else float("nan")


@dataclass
class StepCount:
    """What `count_step` counted: FLOPs of the whole block, and of its forward part, and what the
    forward saved for backward."""

    saved: SavedTensorLog = field(default_factory=SavedTensorLog)
    forward_flops: int = 0
    flops: int = 0
    _counter: FlopCounterMode | None = field(default=None, repr=False)

    @contextmanager
    def forward(self, model: torch.nn.Module | None = None) -> Iterator[SavedTensorLog]:
        """Mark the forward pass: record the tensors it saves (`model`'s own state marked as such)."""
        with record_saved_tensors(model) as log:
            self.saved = log
            yield log
        self.forward_flops = self._counter.get_total_flops()


@contextmanager
def count_step() -> Iterator[StepCount]:
    """Count one training step run inside the block, its forward pass inside `count.forward()`.

    FLOPs are what `torch.utils.flop_counter.FlopCounterMode` counts: matrix products and
    convolutions (2 per multiply-add), never elementwise work. One primitive for every measurement
    of a step in the package (`measure_step` here, `tracing.trace_step`, the Trainer callback).
    """
    count = StepCount()
    with FlopCounterMode(display=False) as counter:
        count._counter = counter
        yield count
    count.flops = counter.get_total_flops()
    count._counter = None


def measure_step(
    model: torch.nn.Module,
    batch,
    loss_fn: Callable | None = None,
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> StepReport:
    """Run one forward + backward pass of `model` on `batch` and measure it.

    `batch` is a dict (called as `model(**batch)`), a tuple (`model(*batch)`) or one tensor.
    The loss is `loss_fn(outputs)` if given, else `outputs.loss`, else `outputs.sum()`.
    The step runs under the counters once, then `warmup` + `repeats` times plain for the time
    (shared/timing.py: the median and spread of the `repeats`), then once more plain for the peak
    memory. Gradients (of parameters and of leaf inputs) are reset before each, and every run but
    the last draws its random numbers from a forked generator, so after the call `.grad` holds one
    step's gradients, drawn with the caller's random state (as if the step had run once, unmeasured).
    The model's mode is respected: in `eval()` mode checkpointing keeps everything (lesson 1 shows it).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            phrase("measure_step needs a torch.nn.Module, got {kind}.", kind=type(model).__name__)
        )
    parameter = next(model.parameters(), None)
    device = parameter.device if parameter is not None else torch.device("cpu")

    # Pass 1 counts (the counters slow the step down, so it is not timed). Its random numbers
    # (dropout) are drawn from a forked generator, so pass 2 sees the caller's state.
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        _zero_grads(model, batch)
        with count_step() as count:
            with count.forward(model):
                loss = _loss_of(_forward(model, batch), loss_fn)
            _check_loss(loss)
            loss.backward()
    del loss

    # Then plain steps, timed; their random numbers too come from a forked generator.
    def plain_step():
        _zero_grads(model, batch)
        _loss_of(_forward(model, batch), loss_fn).backward()

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        times = time_steps(plain_step, device, warmup=warmup, repeats=repeats)

    # The last is a plain step with the caller's random state: on CUDA its peak memory is read.
    on_cuda = device.type == "cuda"
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(device)
    plain_step()
    synchronize(device)

    return StepReport(
        saved_bytes=count.saved.total_bytes,
        saved_tensors=len(count.saved.activations),
        flops=count.flops,
        forward_flops=count.forward_flops,
        times=times,
        peak_bytes=torch.cuda.max_memory_allocated(device) if on_cuda else None,
        device=str(device),
        training=model.training,
    )


def _check_loss(loss: torch.Tensor) -> None:
    if not loss.requires_grad:
        raise RuntimeError(
            _(
                "The loss does not require grad, so there is nothing to measure in backward: "
                "check that the model has trainable parameters and that no torch.no_grad() is active."
            )
        )


# ---------------------------------------------------------------------------------------------
# What training holds in memory, by kind (lesson 1's opening figure)


@dataclass(frozen=True)
class TrainingMemory(ShowsAsTable):
    """The memory one training step holds, by kind, in bytes. Used by lesson 1."""

    parameters: int
    gradients: int
    optimizer_state: int
    activations: int  # saved for backward, as `measure_step` counts them

    def parts(self) -> dict[str, int]:
        """Bytes by kind, keyed by the kind's English name (translate it with `_` where it is shown)."""
        return {
            N_("parameters"): self.parameters,
            N_("gradients"): self.gradients,
            N_("optimizer state"): self.optimizer_state,
            N_("activations"): self.activations,
        }

    @property
    def total(self) -> int:
        return sum(self.parts().values())

    def table(self) -> Table:
        rows = [
            (_(name), f"{format_bytes(n)} ({format_number(n / self.total, '.0%')})")
            for name, n in self.parts().items()
        ]
        return Table(["training memory", "value"], rows)


def _unique_bytes(tensors) -> int:
    storages = {}
    for tensor in tensors:
        storages.setdefault(storage_key(tensor), tensor.untyped_storage().nbytes())
    return sum(storages.values())


def training_memory(
    model: torch.nn.Module,
    batch,
    loss_fn: Callable | None = None,
    make_optimizer: Callable | None = None,
) -> TrainingMemory:
    """Measure what one training step of `model` on `batch` holds in memory, by kind.

    Runs on a copy of `model` (the model itself is left as it was): parameters; their gradients
    after one backward pass; the optimizer's state after one step (`make_optimizer(parameters)`,
    AdamW by default, which keeps two moments per parameter); the activations saved for backward
    (counted as `measure_step` counts them). Each storage is counted once.
    """
    import copy

    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            phrase("training_memory needs a torch.nn.Module, got {kind}.", kind=type(model).__name__)
        )
    model = copy.deepcopy(model)
    with record_saved_tensors(model) as log:
        loss = _loss_of(_forward(model, batch), loss_fn)
    _check_loss(loss)
    loss.backward()
    del loss
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = (make_optimizer or (lambda params: torch.optim.AdamW(params, lr=1e-3)))(trainable)
    optimizer.step()
    state = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return TrainingMemory(
        parameters=_unique_bytes(model.parameters()),
        gradients=_unique_bytes(p.grad for p in trainable if p.grad is not None),
        optimizer_state=_unique_bytes(state),
        activations=log.total_bytes,
    )


def plain_tensors(value) -> list[torch.Tensor]:
    """The tensors in `value` (nested lists, tuples, dicts), a tensor subclass that wraps others (a
    DTensor: its local shard) by the tensors it wraps."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    found = []
    for tensor in tree_flatten(value)[0]:
        if not isinstance(tensor, torch.Tensor):
            continue
        if is_traceable_wrapper_subclass(tensor):
            names, _context = tensor.__tensor_flatten__()
            found += plain_tensors([getattr(tensor, name) for name in names])
        else:
            found.append(tensor)
    return found


class LiveStorages(TorchDispatchMode):
    """Counts the bytes of every storage an op makes while it is active, until it is freed, and the peak
    (`now`, `peak`); storages behind the tensors `before` are never counted. A storage resized in
    place (FSDP2 frees and refills its whole parameters so, with `UntypedStorage.resize_`) counts at
    its size now. Lesson 7's `peak_bytes` and lesson 9's per-process watch count with it."""

    def __init__(self, before: Iterable[torch.Tensor]) -> None:
        super().__init__()
        # each by a weak reference too: while it lives, no new storage can take its place
        self.known = {
            tensor.untyped_storage()._cdata: StorageWeakRef(tensor.untyped_storage())
            for tensor in plain_tensors(list(before))
        }
        self.live: dict[int, list] = {}  # each storage by its identity (views share it): [weak ref, size]
        self._now = self.peak = 0  # _now: never below the bytes live now (freed ones leave it late)

    @property
    def now(self) -> int:
        """The bytes of the storages counted and still alive, now."""
        self._forget_freed()
        return self._now

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in plain_tensors(out):
            if tensor.device.type == "meta":
                continue
            storage = tensor.untyped_storage()
            key = storage._cdata
            if key in self.known and self.known[key].expired():
                del self.known[key]  # freed since: this is a new storage in its place
            if key not in self.live and key not in self.known:
                self.live[key] = [StorageWeakRef(storage), storage.nbytes()]
                self._now += storage.nbytes()
        self._new_peak()
        return out

    def _new_peak(self) -> None:
        """`now` counts storages freed since the last look, so it is never below the truth: only when
        it passes the peak do the freed ones have to be taken off, to see whether it really does."""
        if self._now > self.peak:
            self._forget_freed()
            self.peak = max(self.peak, self._now)

    def _forget_freed(self) -> None:
        for key in [key for key, (ref, _size) in self.live.items() if ref.expired()]:
            self._now -= self.live.pop(key)[1]

    def _resized(self, storage) -> None:
        entry = self.live.get(storage._cdata)
        if entry is not None:
            self._now += storage.nbytes() - entry[1]
            entry[1] = storage.nbytes()
            self._new_peak()

    def __enter__(self):
        original = self._original_resize = torch.UntypedStorage.resize_
        counter = self

        def resize_(storage, size):
            out = original(storage, size)
            counter._resized(storage)
            return out

        torch.UntypedStorage.resize_ = resize_
        return super().__enter__()

    def __exit__(self, *exc):
        torch.UntypedStorage.resize_ = self._original_resize
        return super().__exit__(*exc)
