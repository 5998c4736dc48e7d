"""Lesson 6's measurements beside the planner's count, and the planner's answers, as they print.

The lesson's cells measure (one real training step, the tensors one layer saves for the backward
pass, the two dropout kernels) and ask the planner (`plan.estimate`, `plan.layer_terms`,
`plan.verdict`); these functions only set the results side by side, in the lesson's language. Each
returns a `Table` or a small result that prints itself as a few lines (`print(result)`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsLines, Table, format_bytes
from effitrain_lessons.will_it_fit.plan import (
    GPUS,
    Estimate,
    ModelShape,
    Settings,
    dimensions,
    estimate,
    largest_micro_batch,
    layer_terms,
    memory_of,
    smallest_accumulation,
)

if TYPE_CHECKING:
    import torch

    from effitrain_lessons.shared.memory import SavedTensorLog, TrainingMemory

# The labels lesson 6's cells give the settings they compare (English; shown translated).
LEVER_LABELS = (
    N_("baseline: fp32, AdamW, eager attention"),
    N_("checkpointing every layer"),
    N_("accumulation 4 (micro-batches of 8)"),
    N_("fp16 mixed precision"),
    N_("bf16 mixed precision"),
    N_("SDPA (fused) attention"),
    N_("8-bit AdamW"),
    N_("SGD without momentum"),
)


# ---------------------------------------------------------------------------------------------
# Section 2: measured on this CPU, against the count


def parts_against_estimate(
    measured: Mapping[int, TrainingMemory], predicted: Mapping[int, Estimate]
) -> Table:
    """For each number of layers, each part of a training step (parameters, gradients, optimizer
    state, activations): the bytes one real step held (`memory.training_memory`), the bytes the
    estimate counts, and the difference; under the table, each model's activations apart, in KiB."""
    rows, notes = [], []
    for layers, memory in measured.items():
        apart = memory.parts()["activations"] - predicted[layers].bytes_of("activations")
        notes.append(
            phrase(
                "the {layers}-layer model: its activations measured {apart} more than the estimate counts",
                layers=layers,
                apart=format_bytes(apart),
            )
        )
        for part, nbytes in memory.parts().items():
            counted = predicted[layers].bytes_of(part)
            rows.append(
                [
                    layers,
                    _(part),
                    format_number(nbytes, ","),
                    format_number(counted, ","),
                    format_number(nbytes - counted, "+,"),
                ]
            )
    return Table(["layers", "part", "measured (bytes)", "estimated (bytes)", "difference"], rows, notes=notes)


def layer_against_paper(measured: int, counted: int, paper: int) -> Table:
    """One layer's activations three ways: `measured` (a 2-layer model less a 1-layer one), the
    estimate's `counted` terms, and `paper` (twice Korthikanti et al.'s 16-bit formula), each as a
    share of the measurement; and under the table, how far the measurement is above the paper's."""
    return Table(
        ["one layer, fp32, this CPU", "bytes", "against the measurement"],
        [
            [_("measured (2 layers - 1 layer)"), format_number(measured, ","), "1"],
            [
                _("estimate, term by term"),
                format_number(counted, ","),
                format_number(counted / measured, ".4f"),
            ],
            [
                _("twice Korthikanti et al.'s 16-bit formula"),
                format_number(paper, ","),
                format_number(paper / measured, ".4f"),
            ],
        ],
        notes=[
            phrase(
                "the measurement is {above} above twice the paper's formula",
                above=format_number(measured / paper - 1, ".0%"),
            )
        ],
    )


def layer_tensors(log: SavedTensorLog) -> Table:
    """The tensors one layer saved for the backward pass (`memory.record_saved_tensors`), grouped
    by shape, type and size, the largest first, with their count and bytes."""
    kinds = Counter(
        (entry.shape, str(entry.dtype).removeprefix("torch."), entry.nbytes) for entry in log.activations
    )
    return Table(
        ["shape", "dtype", "tensors", "bytes"],
        [
            [shape, dtype, count, format_number(count * nbytes, ",")]
            for (shape, dtype, nbytes), count in sorted(kinds.items(), key=lambda kind: -kind[0][2])
        ],
        notes=[
            phrase(
                "{count} tensors, {total:,} bytes: one layer",
                count=len(log.activations),
                total=log.total_bytes,
            )
        ],
    )


def layer_table(shape: ModelShape, settings: Settings) -> Table:
    """The estimate's terms for one layer of `shape` under `settings` (`plan.layer_terms`): what is
    saved, its formula and its bytes, and their total."""
    dims = dimensions(shape, settings)
    terms = layer_terms(shape, settings)
    total = sum(term.size(dims) for term in terms)
    return Table(
        ["what one layer saves", "count · elements · bytes", "bytes"],
        [[_(term.what), term.formula(), format_number(term.size(dims), ",")] for term in terms],
        notes=[phrase("one layer: {total:,} bytes ({size})", total=total, size=format_bytes(total))],
    )


@dataclass(frozen=True, repr=False)
class MaskGap(ShowsAsLines):
    """Why one layer measured on a CPU keeps more than twice Korthikanti et al.'s count: the type of
    the mask each dropout kernel saves, and the gap accounted for by the masks' bytes and the norms'
    statistics, which the paper leaves out."""

    cpu_mask: torch.dtype  # the mask `torch.nn.functional.dropout` saves on this CPU
    fused_mask: torch.dtype  # the mask of `aten.native_dropout`, the kernel a GPU runs
    gap: int  # bytes: measured minus twice the paper's formula
    mask_elements: int  # the elements of every dropout mask of one layer
    norm_statistics: int  # bytes of the norms' mean and 1/std

    @property
    def extra_mask_bytes(self) -> int:
        """What the masks take beyond the paper's: each element at the CPU mask's bytes, not twice
        the fused kernel's (twice: the paper counts 16 bits, this layer runs in fp32)."""
        return self.mask_elements * (self.cpu_mask.itemsize - 2 * self.fused_mask.itemsize)

    def lines(self) -> list[str]:
        return [
            phrase(
                "dropout on this CPU saves a {dtype} mask: {size} bytes an element",
                dtype=str(self.cpu_mask),
                size=self.cpu_mask.itemsize,
            ),
            phrase(
                "the fused kernel's mask is {dtype}: {size} byte an element",
                dtype=str(self.fused_mask),
                size=self.fused_mask.itemsize,
            ),
            phrase("measured minus twice the paper: {gap:,} bytes", gap=self.gap),
            phrase("  masks at 4 bytes instead of twice 1: {masks:,} bytes", masks=self.extra_mask_bytes),
            phrase(
                "  the norms' mean and 1/std per token (2 norms x 2 x s x b x 4 bytes), "
                "which the paper leaves out: {stats:,} bytes",
                stats=self.norm_statistics,
            ),
        ]


@dataclass(frozen=True, repr=False)
class LayerAtScale(ShowsAsLines):
    """One layer of `shape` at sequence `seq` and micro-batch `batch`, as the lesson's cell summed the
    estimate's terms, against twice Korthikanti et al.'s formula; the share its attention scores take;
    and all layers together."""

    shape: ModelShape
    seq: int
    batch: int
    layer_bytes: int  # the estimate's terms for one layer, summed
    paper_bytes: int  # twice the paper's 16-bit count: the fp32 reference
    scores_bytes: int  # the terms of a·s·s·b elements (scores, their mask, their dropped copy)

    def lines(self) -> list[str]:
        return [
            phrase(
                "one layer at s = {s}, b = {b}: {layer}; twice the paper's 16-bit formula gives {paper}",
                s=self.seq,
                b=self.batch,
                layer=format_bytes(self.layer_bytes),
                paper=format_bytes(self.paper_bytes),
            ),
            phrase(
                "the attention scores' share of it: {share:.0%} (5 a s / h = {term:.0f} against 34)",
                share=self.scores_bytes / self.layer_bytes,
                term=5 * self.shape.heads * self.seq / self.shape.hidden,
            ),
            phrase(
                "{layers} layers: {total}",
                layers=self.shape.layers,
                total=format_bytes(self.shape.layers * self.layer_bytes),
            ),
        ]


def layer_at_scale(
    shape: ModelShape, settings: Settings, per_layer: int, paper_layer: int, scores: int
) -> LayerAtScale:
    """Section 2's extrapolation, as it prints: one layer's bytes (`per_layer`, the estimate's terms
    summed), twice the paper's (`paper_layer`) and the attention scores' part (`scores`)."""
    return LayerAtScale(shape, settings.seq, settings.micro_batch, per_layer, paper_layer, scores)


def explain_mask_gap(cpu_mask, fused_mask, gap: int, mask_elements: int, norm_statistics: int) -> MaskGap:
    """Section 2's gap between one measured layer and twice the paper's count, as it prints: the two
    dropout kernels' mask types, and the bytes the masks and the norms' statistics account for."""
    return MaskGap(cpu_mask, fused_mask, gap, mask_elements, norm_statistics)


# ---------------------------------------------------------------------------------------------
# Section 3: the answer, against the learner's prediction


@dataclass(frozen=True, repr=False)
class PredictionFeedback(ShowsAsLines):
    """What section 1's prediction (`"fits"` or `"does not fit"`, `...` when none was made) and the
    GiB guessed (`...` or a number) say against `answer`, the estimate for `gpu`."""

    prediction: object
    gib: object
    answer: Estimate
    gpu: object

    def lines(self) -> list[str]:
        prediction, gib, answer = self.prediction, self.gib, self.answer
        fits = answer.fits(self.gpu)
        said = _("fits") if fits else _("does not fit")
        if prediction is ...:
            lines = [
                phrase(
                    "You made no prediction in section 1. "
                    "The estimate: with eager attention it {said} ({total}).",
                    said=said,
                    total=format_bytes(answer.total),
                )
            ]
        elif prediction not in ("fits", "does not fit"):
            lines = [
                phrase(
                    'Section 1 asks for "fits" or "does not fit", not {prediction!r}.', prediction=prediction
                )
            ]
        else:
            right = (prediction == "fits") == fits
            lines = [
                phrase(
                    "You predicted that it {prediction}; the estimate says that it {said}: {verdict}.",
                    prediction=_(prediction),
                    said=said,
                    verdict=_("right") if right else _("not this time"),
                )
            ]
        if gib is not ... and isinstance(gib, (int, float)) and gib > 0:
            lines.append(
                phrase(
                    "You guessed {gib:g} GiB; the estimate is {total:.1f} GiB, {ratio:.1f} times your guess.",
                    gib=gib,
                    total=answer.total / 2**30,
                    ratio=answer.total / 2**30 / gib,
                )
            )
        return lines


def prediction_feedback(prediction: object, gib: object, answer: Estimate, gpu) -> PredictionFeedback:
    """Section 1's prediction and guess, judged against `answer` on `gpu` (`PredictionFeedback`)."""
    return PredictionFeedback(prediction, gib, answer, gpu)


# ---------------------------------------------------------------------------------------------
# Section 4: what each lever buys


def lever_table(model, gpu, baseline: Mapping, levers: Mapping[str, Mapping]) -> Table:
    """For each lever of `levers` (an English label -> the settings it changes in `baseline`): what
    one step needs, whether it fits `gpu`, the largest micro-batch that fits, the fewest
    micro-batches that make the whole batch fit ("-": none does), and what it saves against the
    first lever, the baseline."""
    batch = baseline.get("batch", Settings().batch)
    presets = {preset.lower(): preset for preset in GPUS}
    name = presets.get(str(gpu).lower(), gpu if isinstance(gpu, str) else format_bytes(memory_of(gpu)))
    rows, first = [], None
    for label, change in levers.items():
        setting = {**baseline, **change}
        planned = estimate(model, **setting)
        first = first or planned
        rows.append(
            [
                _(label),
                format_bytes(planned.total),
                _("yes") if planned.fits(gpu) else _("no"),
                largest_micro_batch(model, gpu, **setting),
                smallest_accumulation(model, gpu, **setting) or "-",
                "-" if planned is first else format_bytes(first.total - planned.total),
            ]
        )
    return Table(
        [
            "setting",
            phrase("one step at batch {batch}", batch=batch),
            phrase("fits {gpu}", gpu=name),
            "largest micro-batch that fits",
            phrase("smallest accumulation for batch {batch}", batch=batch),
            "saves against the first row",
        ],
        rows,
    )


@dataclass(frozen=True, repr=False)
class BytesPerParameter(ShowsAsLines):
    """For each estimate (one per precision), the bytes per parameter its weights, gradients and
    optimizer state take, and its activations."""

    estimates: tuple[Estimate, ...]

    def lines(self) -> list[str]:
        lines = []
        for planned in self.estimates:
            state = sum(
                planned.bytes_of(part)
                for part in ("parameters", "fp32 master weights", "gradients", "optimizer state")
            )
            lines.append(
                phrase(
                    "{precision}: {per:.2f} bytes per parameter for weights, gradients and AdamW's state; "
                    "activations {activations}",
                    precision=planned.settings.precision,
                    per=state / planned.model.parameters,
                    activations=format_bytes(planned.bytes_of("activations")),
                )
            )
        return lines


def bytes_per_parameter(estimates: Iterable[Estimate]) -> BytesPerParameter:
    """The bytes per parameter of each estimate's state, and its activations (`BytesPerParameter`)."""
    return BytesPerParameter(tuple(estimates))
