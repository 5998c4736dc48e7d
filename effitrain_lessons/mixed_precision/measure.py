"""What lesson 08 measures: 16-bit number formats, the tensors `torch.autocast` saves for backward
(op by op and for a whole block), what a `torch.amp` training step holds a parameter, the gradient
values fp16 rounds to zero, and the time of a step in each precision.

The learner's cells run the ecosystem's calls (`torch.autocast`, `torch.amp.GradScaler`); the
functions here watch and count. `record_saved` sees what autograd saves through saved-tensor hooks,
each storage once, and sorts it: the parameters themselves (in memory anyway, not counted), 16-bit
copies of a weight (a saved tensor equal to a weight cast to its type), and activations.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from effitrain_lessons.shared.i18n import N_, _, format_number, nphrase, phrase
from effitrain_lessons.shared.memory import storage_key
from effitrain_lessons.shared.tables import ShowsAsTable, Table, format_bytes
from effitrain_lessons.shared.timing import Times

FORMATS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
SHORT = {dtype: name for name, dtype in FORMATS.items()}


def short_name(dtype: torch.dtype) -> str:
    """torch.bfloat16 -> "bf16"; a type the lesson does not name keeps torch's name ("int64")."""
    return SHORT.get(dtype, str(dtype).removeprefix("torch."))


def in_mib(n: float) -> str:
    return f"{format_number(n / 2**20, ',.2f')} MiB"


# The labels lesson 8's cells give the ops, blocks, gradients and steps they measure (English; the
# tables show them translated).
LABELS = (
    N_("Linear"),
    N_("LayerNorm on fp32"),
    N_("GELU on fp32"),
    N_("GELU on 16 bits"),
    N_("Softmax on 16 bits"),
    N_("fp32"),
    N_("autocast"),
    N_("bf16"),
    N_("fp16"),
    N_("fp16 with GradScaler"),
    N_("the tiny BERT (width 64)"),
    N_("one MLP block of BERT-base's width, 256 tokens"),
)


# ---------------------------------------------------------------------------------------------
# 1. What 16 bits keep


@dataclass(frozen=True, repr=False)
class Roundtrips(ShowsAsTable):
    """Values written in each format and read back as fp32, with each format's range and step."""

    values: tuple[float, ...]
    kept: dict[str, tuple[float, ...]]  # format -> each value after the round trip

    def table(self) -> Table:
        rows = [
            [_number(value), *[_number(self.kept[name][i]) for name in FORMATS]]
            for i, value in enumerate(self.values)
        ]
        limits = {name: torch.finfo(dtype) for name, dtype in FORMATS.items()}
        rows.append([_("largest"), *[_number(limits[name].max) for name in FORMATS]])
        rows.append([_("smallest normal"), *[_number(limits[name].tiny) for name in FORMATS]])
        rows.append([_("smallest above 0"), *[_number(_smallest(dtype)) for dtype in FORMATS.values()]])
        rows.append([_("step after 1"), *[_number(limits[name].eps) for name in FORMATS]])
        return Table(
            ["written", "read back: fp32", "bf16", "fp16"],
            rows,
            notes=[
                phrase(
                    "each value is cast to the format and back to fp32; the last rows are torch.finfo's, "
                    "and the smallest value above 0, found by halving"
                )
            ],
        )


def _smallest(dtype: torch.dtype) -> float:
    """The smallest positive value of `dtype`, found by halving until it rounds to zero."""
    value = torch.tensor(1.0, dtype=dtype)
    while (half := value / 2) > 0:
        value = half
    return float(value)


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    return format_number(value, ".6g")


def roundtrips(values) -> Roundtrips:
    """Write each of `values` in fp32, bf16 and fp16 and read it back as fp32. Used by lesson 8."""
    written = torch.tensor([float(v) for v in values], dtype=torch.float64)
    kept = {name: tuple(written.to(dtype).double().tolist()) for name, dtype in FORMATS.items()}
    return Roundtrips(tuple(written.tolist()), kept)


# ---------------------------------------------------------------------------------------------
# 2. What autocast saves for backward


ROLES = (
    N_("input"),  # the op's input itself
    N_("input, cast"),  # the op's input, cast to another type
    N_("output"),
    N_("weight copy"),  # a weight cast to 16 bits
    N_("statistics"),  # anything else the op makes and keeps (a norm's mean and inverse deviation)
)


@dataclass(frozen=True)
class Saved:
    """One storage autograd saved for backward."""

    role: str  # one of ROLES
    dtype: torch.dtype
    shape: tuple[int, ...]
    nbytes: int


@dataclass
class SavedLog:
    """What `record_saved` saw: each storage once, the parameters left out."""

    entries: list[Saved] = field(default_factory=list)
    output_dtype: torch.dtype | None = None

    @property
    def copy_bytes(self) -> int:
        """Bytes of 16-bit weight copies saved for backward."""
        return sum(e.nbytes for e in self.entries if e.role == "weight copy")

    @property
    def activation_bytes(self) -> int:
        """Bytes of everything else saved for backward."""
        return sum(e.nbytes for e in self.entries if e.role != "weight copy")

    @property
    def total_bytes(self) -> int:
        return self.copy_bytes + self.activation_bytes

    def described(self) -> str:
        """ "input, cast bf16 (512x64); weight copy bf16 (64x256)": what was saved, in order."""
        if not self.entries:
            return _("nothing")
        return "; ".join(
            f"{_(e.role)} {short_name(e.dtype)} ({'x'.join(map(str, e.shape)) or '1'})" for e in self.entries
        )


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


@contextmanager
def record_saved(
    module: torch.nn.Module | None = None, *inputs: torch.Tensor, outputs: list | None = None
) -> Iterator[SavedLog]:
    """Record what autograd saves for backward inside the block, each storage once.

    A saved tensor that shares memory with a parameter or buffer of `module` is the parameter itself:
    left out, as the course counts activations. One equal to a weight of `module` cast to its type (or
    that cast's transpose) is a "weight copy"; one that is one of `inputs` is the "input", one equal
    to an input cast to another type the "input, cast"; one that is a tensor put in `outputs` during
    the block is the "output"; the rest are "statistics". Recording changes nothing in the step.
    """
    params = list(module.parameters()) if module is not None else []
    state = {storage_key(t) for t in params}
    if module is not None:
        state |= {storage_key(t) for t in module.buffers()}
    inputs_by_key = {storage_key(t): t for t in inputs}
    log = SavedLog()
    seen: dict[tuple[str, int], torch.Tensor] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        key = storage_key(tensor)
        if key not in state and key not in seen:
            seen[key] = tensor
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield log
    output_keys = {storage_key(t) for t in (outputs or []) if isinstance(t, torch.Tensor)}
    for key, tensor in seen.items():
        role = "output" if key in output_keys else _role(key, tensor.detach(), params, inputs_by_key)
        log.entries.append(Saved(role, tensor.dtype, tuple(tensor.shape), tensor.untyped_storage().nbytes()))
    seen.clear()


def _role(key, tensor: torch.Tensor, params, inputs_by_key) -> str:
    if key in inputs_by_key:
        return "input"
    if tensor.dtype in (torch.float16, torch.bfloat16) and tensor.dim() >= 1:
        for weight in params:
            if weight.dim() >= 1 and weight.numel() == tensor.numel():
                cast = weight.detach().to(tensor.dtype)
                if _equal(cast, tensor) or (cast.dim() == 2 and _equal(cast.t(), tensor)):
                    return "weight copy"
    for given in inputs_by_key.values():
        if given.numel() == tensor.numel() and given.dtype != tensor.dtype:
            if _equal(given.detach().to(tensor.dtype).reshape(tensor.shape), tensor):
                return "input, cast"
    return "statistics"


@dataclass(frozen=True, repr=False)
class SavedByOp(ShowsAsTable):
    """Op by op: the type it returned and what it saved for backward."""

    rows: list[tuple[str, torch.dtype, SavedLog]]

    def table(self) -> Table:
        return Table(
            ["op", "returns", "saved for backward", "bytes"],
            [
                [_(name), short_name(dtype), log.described(), format_bytes(log.total_bytes)]
                for name, dtype, log in self.rows
            ],
            notes=[phrase("each storage once; a parameter itself is not counted")],
        )


class OpRecorder:
    """Collects, op by op, what autograd saves: `with ops.record(name, op, x): op(x)`. Used by lesson 8."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, torch.dtype, SavedLog]] = []

    @contextmanager
    def record(self, name: str, op: torch.nn.Module, *inputs: torch.Tensor) -> Iterator[SavedLog]:
        """Record what `op` (a module) saves for backward when it runs on `inputs` inside the block."""
        if not isinstance(op, torch.nn.Module):
            raise TypeError(
                phrase("record needs the op as a torch.nn.Module, got {kind}.", kind=type(op).__name__)
            )
        outputs: list = []
        hook = op.register_forward_hook(lambda module, args, output: outputs.append(output))
        try:
            with record_saved(op, *inputs, outputs=outputs) as log:
                yield log
        finally:
            hook.remove()
        if not outputs:
            raise ValueError(phrase("{name}: the op did not run inside the block; call it there.", name=name))
        self.rows.append((name, outputs[-1].dtype, log))

    def table(self) -> SavedByOp:
        return SavedByOp(list(self.rows))

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self) -> str:
        return str(self.table())


@dataclass(frozen=True, repr=False)
class SavedComparison(ShowsAsTable):
    """What each precision saved for backward in one forward pass: activations, weight copies, total."""

    logs: dict[str, SavedLog]

    def table(self) -> Table:
        base = next(iter(self.logs.values())).total_bytes
        rows = [
            [
                _(name),
                in_mib(log.activation_bytes),
                in_mib(log.copy_bytes),
                in_mib(log.total_bytes),
                f"{format_number(log.total_bytes / base, '.0%')}" if base else "-",
            ]
            for name, log in self.logs.items()
        ]
        return Table(
            ["forward pass", "activations", "16-bit weight copies", "saved for backward", "of the first row"],
            rows,
        )


def compare_saved(logs: Mapping[str, SavedLog]) -> SavedComparison:
    """Set the logs of `record_saved` side by side, the first as the base. Used by lesson 8."""
    if not logs:
        raise ValueError(_("compare_saved needs at least one log of record_saved."))
    return SavedComparison(dict(logs))


def saved_bytes(module: torch.nn.Module, x: torch.Tensor, dtype: torch.dtype | None = None) -> SavedLog:
    """What one forward pass of `module` on `x` saves for backward, under `torch.autocast` of `dtype`
    on `x`'s device (None: no autocast)."""
    x = x.detach().requires_grad_(True)
    with record_saved(module, x) as log:
        with torch.autocast(x.device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            module(x)
    return log


def saved_in_forward(
    model: torch.nn.Module, inputs: Mapping, dtype: torch.dtype, device_type: str = "cpu"
) -> SavedLog:
    """What one forward pass `model(**inputs)` saves for backward under `torch.autocast(device_type,
    dtype)`: its `copy_bytes` (16-bit weight copies) and `activation_bytes`, each storage once, the
    parameters left out. The benchmarks, the tests and `make gpu-check` hold lesson 6's planner to it."""
    with record_saved(model) as log, torch.autocast(device_type, dtype=dtype):
        model(**inputs)
    return log


def saved_by_tokens(make_block, tokens, width: int, dtype: torch.dtype, device="cpu") -> dict[str, list[int]]:
    """For each count of `tokens`: what a block of `make_block()` saves for backward in fp32, and
    under autocast of `dtype` (its activations and its weight copies apart). Used by lesson 8's figure."""
    block = make_block().to(device)
    out: dict[str, list[int]] = {"fp32": [], "activations": [], "weight copies": []}
    for n in tokens:
        x = torch.randn(n, width, device=device)
        plain = saved_bytes(block, x)
        mixed = saved_bytes(block, x, dtype)
        out["fp32"].append(plain.total_bytes)
        out["activations"].append(mixed.activation_bytes)
        out["weight copies"].append(mixed.copy_bytes)
    return {"tokens": list(tokens), **out}


# ---------------------------------------------------------------------------------------------
# 3. What a torch.amp step holds a parameter


def _unique_bytes(tensors) -> int:
    storages: dict = {}
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            storages.setdefault(storage_key(tensor), tensor.untyped_storage().nbytes())
    return sum(storages.values())


@dataclass(frozen=True, repr=False)
class HeldPerParameter(ShowsAsTable):
    """Bytes a parameter holds in a torch.amp step (measured), beside ZeRO's count (Rajbhandari et al.)."""

    parameters: int  # how many
    weights: int  # bytes of the model's weights
    gradients: int
    optimizer_state: int
    copies: int  # 16-bit weight copies saved between the forward and the backward pass
    dtype: torch.dtype

    def table(self) -> Table:
        n = self.parameters
        short = short_name(self.dtype)
        rows = [
            [_("weights"), _per(self.weights, n), phrase("{t}, 2, and an fp32 master copy, 4", t=short)],
            [_("gradients"), _per(self.gradients, n), phrase("{t}, 2", t=short)],
            [_("AdamW's two moments"), _per(self.optimizer_state, n), "8"],
            [phrase("{t} weight copies, forward to backward", t=short), _per(self.copies, n), "-"],
            [
                _("total"),
                _per(self.weights + self.gradients + self.optimizer_state + self.copies, n),
                "16",
            ],
        ]
        return Table(
            [
                "held",
                "torch.amp, bytes a parameter (measured)",
                "ZeRO's count (Rajbhandari et al., 2020)",
            ],
            rows,
            notes=[phrase("{n} parameters; each storage once", n=format_number(n, ","))],
        )


def _per(nbytes: int, n: int) -> str:
    return format_number(nbytes / n, ".2f")


def held_per_parameter(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, log: SavedLog
) -> HeldPerParameter:
    """What `model`'s parameters hold after a torch.amp step: their weights, gradients and `optimizer`'s
    state (call it after `optimizer.step()`, before the gradients are zeroed), and the weight copies
    `log` (of `record_saved` around the forward pass) saw. Used by lesson 8."""
    weights = [p for p in model.parameters() if p.requires_grad]
    if not any(p.grad is not None for p in weights):
        raise ValueError(
            _(
                "No gradients yet: call held_per_parameter after the backward pass and the optimizer's "
                "step, before zero_grad."
            )
        )
    # the moments: state tensors shaped as their parameter (AdamW's step counts are left out)
    state = [
        t
        for p, s in optimizer.state.items()
        for t in s.values()
        if isinstance(t, torch.Tensor) and t.shape == p.shape
    ]
    copies = [e for e in log.entries if e.role == "weight copy"]
    return HeldPerParameter(
        parameters=sum(p.numel() for p in weights),
        weights=_unique_bytes(weights),
        gradients=_unique_bytes(p.grad for p in weights),
        optimizer_state=_unique_bytes(state),
        copies=sum(e.nbytes for e in copies),
        dtype=copies[0].dtype if copies else torch.bfloat16,
    )


# ---------------------------------------------------------------------------------------------
# 4. Loss scaling: the gradient values fp16 rounds to zero


# Half fp16's smallest value above 0: an fp32 value at or below it rounds to 0 when cast to fp16.
FP16_ROUNDS_TO_ZERO = torch.finfo(torch.float16).tiny * 2.0**-11


@dataclass(frozen=True, repr=False)
class ZeroedGradients(ShowsAsTable):
    """For each setting: how many gradient values are zero where fp32's are not, and how many of those
    were large enough in fp32 that casting them to fp16 would not give 0 (they vanished on the way back)."""

    counted: dict[str, tuple[int, int, int]]  # setting -> (zeroed, nonzero in fp32, zeroed but large enough)

    def table(self) -> Table:
        rows = [
            [
                _(name),
                format_number(zeroed, ","),
                format_number(of, ","),
                format_number(zeroed / of, ".1%") if of else "-",
                f"{format_number(large, ',')} ({format_number(large / zeroed, '.0%')})" if zeroed else "0",
            ]
            for name, (zeroed, of, large) in self.counted.items()
        ]
        return Table(
            [
                "gradients",
                "zero where fp32's are not",
                "of",
                "share",
                "of them, large enough for fp16 in fp32",
            ],
            rows,
        )

    def zeroed(self, name: str) -> int:
        return self.counted[name][0]


def _flat(gradients) -> torch.Tensor:
    values = gradients.values() if isinstance(gradients, Mapping) else gradients
    return torch.cat([g.detach().float().flatten().cpu() for g in values if g is not None])


def count_zeroed(reference, settings: Mapping[str, object]) -> ZeroedGradients:
    """Count, for each of `settings` (name -> gradients, as a dict or a list in the order of
    `reference`), the values that are exactly zero where `reference` (fp32's gradients) is not, and
    how many of those are above `FP16_ROUNDS_TO_ZERO` in `reference`. Used by lesson 8."""
    ref = _flat(reference)
    nonzero = ref != 0
    large = ref.abs() > FP16_ROUNDS_TO_ZERO
    counted = {}
    for name, gradients in settings.items():
        values = _flat(gradients)
        if values.shape != ref.shape:
            raise ValueError(
                phrase(
                    "{name}: {got} gradient values, but fp32 has {want}; compare the same model.",
                    name=name,
                    got=values.numel(),
                    want=ref.numel(),
                )
            )
        zeroed = (values == 0) & nonzero
        counted[name] = (int(zeroed.sum()), int(nonzero.sum()), int((zeroed & large).sum()))
    return ZeroedGradients(counted)


def gradient_magnitudes(reference) -> torch.Tensor:
    """|g| of every non-zero gradient value, for the figure."""
    values = _flat(reference).abs()
    return values[values > 0]


# ---------------------------------------------------------------------------------------------
# 5. Time


@dataclass(frozen=True, repr=False)
class PrecisionTimes(ShowsAsTable):
    """Each precision's step time against fp32's (the first), with the spread."""

    times: dict[str, Times]
    label: str = ""

    def table(self) -> Table:
        names = list(self.times)
        base = self.times[names[0]]
        rows = []
        for name in names:
            ratio = self.times[name] / base
            rows.append([_(name), self.times[name].milliseconds(), str(ratio)])
        notes = [
            nphrase(
                "{n} step each, in turns, after a warm-up; {clock}",
                "{n} steps each, in turns, after a warm-up; {clock}",
                base.steps,
                n=base.steps,
                clock=_clock(base),
            )
        ]
        instructions = cpu_bf16_instructions()
        if base.clock == "cpu" and instructions is not None:
            notes.append(
                phrase("this CPU has bf16 instructions (avx512_bf16 or amx_bf16)")
                if instructions
                else phrase("this CPU has no bf16 instructions (avx512_bf16 or amx_bf16)")
            )
        return Table(
            ["step", "time: median (middle half)", "against the first row"],
            rows,
            title=_(self.label) if self.label else None,
            notes=notes,
        )

    def ratio(self, name: str):
        return self.times[name] / self.times[next(iter(self.times))]


def _clock(times: Times) -> str:
    return _("CPU time") if times.clock == "cpu" else _("wall time after a synchronize")


def cpu_bf16_instructions() -> bool | None:
    """Whether this CPU lists bf16 instructions (Linux's /proc/cpuinfo); None where it cannot tell."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = info.read()
    except OSError:
        return None
    return "avx512_bf16" in flags or "amx_bf16" in flags


def precision_times(times: Mapping[str, Times], label: str = "") -> PrecisionTimes:
    """`time_alternating`'s result shown against its first setting. Used by lesson 8."""
    return PrecisionTimes(dict(times), label)
