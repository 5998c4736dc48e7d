"""Tracing one training step: what the forward pass keeps for the backward pass, and what runs again.

Shared by lesson 1 (gradient checkpointing from first principles: what `checkpoint(...)` and
selective checkpointing keep, delete and recompute, counted) and lesson 6 (recompute's eager points
of memory against compute). The measuring primitives it builds on (saved-tensor hooks, storage
keys, FLOP counting) are `effitrain_lessons.shared.memory`'s.

`trace_step` runs one forward + backward pass of a function and reports what autograd saved
(saved-tensor hooks), what the forward left in memory for the backward (tensors made during the
forward whose storage is still alive when the backward starts: this also sees the cache of
selective checkpointing, which the hooks cannot), how many times each op ran again during the
backward (recomputation), the FLOPs, and the gradients.

How recomputations are counted: a `TorchDispatchMode` is active during the backward pass and counts
the ops that really execute there with grad mode on. Checkpointing reruns the forward with grad mode
on (both variants); the backward formulas themselves run with grad mode off. Selective checkpointing
answers cached ops from its own cache without executing them, so they are (rightly) not counted.
A counter in the Python function would be wrong there: the function body does run again, but the
cached ops inside it return stored results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.memory import count_step, storage_key
from effitrain_lessons.shared.tables import ShowsAsTable, Table, format_bytes, format_flops


@dataclass(frozen=True)
class TensorRecord:
    """One tensor in a trace: named by its input name, or by the op that made it."""

    name: str
    shape: tuple[int, ...]
    nbytes: int
    made_in_forward: bool  # False for inputs and parameters, which exist before the step


@dataclass
class StepTrace(ShowsAsTable):
    """One forward + backward pass, traced by `trace_step`."""

    saved: list[TensorRecord]  # what autograd's saved-tensor hooks saw, one per storage
    kept: list[TensorRecord]  # tensors made in the forward still in memory when the backward starts
    forward_runs: dict[str, int]  # how many times each op ran in the forward
    recomputed: dict[str, int]  # how many times each op ran again during the backward
    flops: int  # forward + backward (+ recomputation)
    forward_flops: int
    gradients: dict[str, torch.Tensor]  # of the inputs and parameters that require grad

    @property
    def saved_bytes(self) -> int:
        """Bytes the hooks saw that the forward made (inputs and parameters left out)."""
        return sum(r.nbytes for r in self.saved if r.made_in_forward)

    @property
    def kept_bytes(self) -> int:
        """Bytes the forward made that are still held for the backward: the activation memory."""
        return sum(r.nbytes for r in self.kept)

    def recomputations(self, name: str) -> int:
        """How many times the op named `name` ran again during the backward (0 if never)."""
        return self.recomputed.get(name, 0)

    def status(self, name: str) -> str:
        """'recomputed', 'stored' or 'deleted': what happened to the tensor `name` between the passes
        (a value to compare, not a sentence: it is the same in every language)."""
        if self.recomputations(name):
            return "recomputed"
        if any(r.name == name for r in self.kept) or any(r.name == name for r in self.saved):
            return "stored"
        return "deleted"

    def table(self) -> Table:
        """Every tensor held from the forward pass for the backward pass, who holds it, and the totals."""
        hooked = {r.name for r in self.saved}
        rows = []
        for r in self.saved:
            if r.made_in_forward:
                holder = _("autograd (saved-tensor hooks)")
            else:
                holder = _("autograd or checkpoint (not made by the step)")
            rows.append((r.name, str(r.shape), format_bytes(r.nbytes), holder))
        for r in self.kept:
            if r.name not in hooked:
                rows.append(
                    (r.name, str(r.shape), format_bytes(r.nbytes), _("something the hooks do not see"))
                )
        again = ", ".join(f"{name} x{count}" for name, count in self.recomputed.items()) or _("nothing")
        notes = [  # the spaces line the values up in English; a translation lines up its own
            phrase("activations kept for backward: {size}", size=format_bytes(self.kept_bytes)),
            phrase("recomputed during backward:    {ops}", ops=again),
            phrase("FLOPs (forward + backward):    {flops}", flops=format_flops(self.flops)),
        ]
        return Table(["tensor", "shape", "bytes", "held by"], rows, notes=notes)


def _counted(op) -> bool:
    """Views (t, expand, detach, ...) relabel data without computing: they are not counted as runs."""
    return not getattr(op, "is_view", False)


class _ForwardTensors(TorchDispatchMode):
    """Records every storage the ops make (weakly, so that recording keeps nothing alive), named by
    the op that made it, and counts the ops that ran."""

    def __init__(self, names: Mapping, known: Mapping[tuple[str, int], str]):
        super().__init__()
        self.names = names
        self.known = dict(known)  # storages that existed before: inputs and parameters
        self.made: dict[tuple[str, int], tuple[str, tuple[int, ...], int, StorageWeakRef]] = {}
        self.runs: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not _counted(func):  # a view makes no new storage
            return out
        self.runs[self.names.get(func, op_name(func))] += 1
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor) or tensor.untyped_storage().nbytes() == 0:
                continue
            key = storage_key(tensor)
            if key in self.known:
                continue
            previous = self.made.get(key)
            if previous is None or previous[3].expired():  # new, or an address reused after a free
                storage = tensor.untyped_storage()
                name = self.names.get(func, op_name(func))
                self.made[key] = (name, tuple(tensor.shape), storage.nbytes(), StorageWeakRef(storage))
        return out

    def alive(self, exclude: set[tuple[str, int]]) -> list[TensorRecord]:
        return [
            TensorRecord(name, shape, nbytes, True)
            for key, (name, shape, nbytes, ref) in self.made.items()
            if key not in exclude and not ref.expired()
        ]

    def name_of(self, key: tuple[str, int]) -> tuple[str, bool] | None:
        if key in self.known:
            return self.known[key], False
        if key in self.made:
            return self.made[key][0], True
        return None


class _Recomputations(TorchDispatchMode):
    """Counts the ops that execute with grad mode on during the backward pass: recomputation."""

    def __init__(self, names: Mapping):
        super().__init__()
        self.names = names
        self.runs: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.is_grad_enabled() and _counted(func):
            self.runs[self.names.get(func, op_name(func))] += 1
        return func(*args, **(kwargs or {}))


def trace_step(
    forward: Callable,
    inputs: Mapping[str, torch.Tensor],
    *,
    names: Mapping | None = None,
    parameters: torch.nn.Module | Mapping[str, torch.Tensor] | None = None,
    loss_fn: Callable | None = None,
) -> StepTrace:
    """Run `loss_fn(forward(*inputs.values()))` and its backward once, and trace what happens.

    `inputs` names the tensors passed to `forward`, in order. `names` maps ops to the names they
    give their outputs (e.g. `ABC_OPS`); other outputs are named by their op ("tanh"). Parameters
    (those of `parameters`, or of `forward` itself when it is a module) are, like the inputs, not
    counted as activation memory: they exist before the step. The loss defaults to the sum.
    Gradients are reset before the step, so afterwards `.grad` holds this step's. Used by lessons 1 and 6.
    """
    if not callable(forward):
        raise TypeError(
            phrase("trace_step needs a function or module to run, got {kind}.", kind=type(forward).__name__)
        )
    if not isinstance(inputs, Mapping) or not all(isinstance(t, torch.Tensor) for t in inputs.values()):
        raise TypeError(
            _("inputs must be a dict of named tensors, e.g. {'x': x}, in the order forward takes them.")
        )
    names = dict(names or {})
    if parameters is None and isinstance(forward, torch.nn.Module):
        parameters = forward
    if isinstance(parameters, torch.nn.Module):
        parameters = dict(parameters.named_parameters())
    parameters = dict(parameters or {})
    leaves = {**inputs, **parameters}
    known = {storage_key(t): name for name, t in leaves.items()}
    for tensor in leaves.values():
        if tensor.is_leaf:
            tensor.grad = None

    tracker = _ForwardTensors(names, known)
    with count_step() as count:
        with count.forward(), tracker:
            output = forward(*inputs.values())
            if not isinstance(output, torch.Tensor):
                raise TypeError(
                    phrase(
                        "The function returned {kind}, not a tensor: make it `return` the result of the step "
                        "(e.g. `return checkpoint(block, x, use_reentrant=False)`).",
                        kind=type(output).__name__,
                    )
                )
            loss = (loss_fn or torch.sum)(output)
        if not loss.requires_grad:
            raise RuntimeError(
                _(
                    "The loss does not require grad, so there is no backward pass to trace: give the step "
                    "an input or parameter with requires_grad=True (and no torch.no_grad())."
                )
            )
        del output
        kept = tracker.alive(exclude={storage_key(loss)})
        seed = torch.ones_like(loss)
        with _Recomputations(names) as recomputations:
            loss.backward(seed)

    saved: dict[tuple[str, int], tuple[tuple[int, ...], int]] = {}  # storage -> (shape, bytes)
    for entry in count.saved.entries:
        if entry.nbytes:
            saved.setdefault(entry.storage, (entry.shape, entry.nbytes))
    records = []
    order = {key: i for i, key in enumerate([*known, *tracker.made])}  # inputs first, then as made
    for key, (shape, nbytes) in sorted(saved.items(), key=lambda item: order.get(item[0], len(order))):
        # A tensor neither made in the step nor passed to it came from outside (a global, say).
        name, made = tracker.name_of(key) or (_("(from outside the step)"), False)
        records.append(TensorRecord(name, shape, nbytes, made))
    return StepTrace(
        saved=records,
        kept=kept,
        forward_runs=dict(tracker.runs),
        recomputed=dict(recomputations.runs),
        flops=count.flops,
        forward_flops=count.forward_flops,
        gradients={
            name: t.grad.detach().clone() for name, t in leaves.items() if t.is_leaf and t.grad is not None
        },
    )


def op_name(op) -> str:
    """An op's short name, as traces and counts name it: "mm" for torch.ops.aten.mm.default."""
    packet = getattr(op, "overloadpacket", None)
    return getattr(packet, "__name__", None) or str(op)
