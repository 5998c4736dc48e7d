"""Lesson 3's reports: what its cells measured, said in the lesson's language.

The cells run the loop, `accelerator.accumulate`, checkpointing and `measure_step`, and prove what
they claim with `torch.testing.assert_close`; these functions turn the numbers into the lines and
tables the cells show, through the package catalog, so that a Turkish edition shows them in Turkish,
with Turkish numbers. A function returns the text to `print`, or a `Table`.

Used by lesson 3, sections 2 to 5 and its exploration, in that order.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch

from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.memory import StepComparison, measure_step
from effitrain_lessons.shared.tables import Table, format_bytes

Gradients = Mapping[str, torch.Tensor] | torch.nn.Module  # by parameter name, or a model's .grad


# Section 2 -------------------------------------------------------------------------------------


def schedule_ends(schedules: Mapping[str, list[float]]) -> str:
    """Where each measured schedule ends, one line per sizing: how many optimizer steps it saw and
    its final learning rate, as a multiple of the peak (`measure_schedule`'s rates, peak 1)."""
    if not schedules or not all(schedules.values()):
        raise ValueError(_("schedule_ends needs at least one measured schedule, each of one step or more."))
    return "\n".join(
        phrase(
            "{label:36} {steps} optimizer steps, final learning rate {final:.3f} x peak",
            label=label,
            steps=len(rates),
            final=rates[-1],
        )
        for label, rates in schedules.items()
    )


# Sections 3 and 4 ------------------------------------------------------------------------------


def _gradients(of: Gradients) -> dict[str, torch.Tensor]:
    if isinstance(of, torch.nn.Module):
        model = getattr(of, "module", of)  # a model `prepare` wrapped (DDP) names its parameters alike
        return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    return dict(of)


def compare_gradients(reference: Gradients, other: Gradients) -> str:
    """How far `other`'s gradients are from `reference`'s, each a dict by parameter name or a model
    whose `.grad` holds them: "73 gradient tensors, largest difference 0.0e+00: identical" when every
    element is equal, else the largest difference of an element and the relative difference of the
    whole gradient (the norm of the difference over the norm of `other`'s)."""
    reference, other = _gradients(reference), _gradients(other)
    if not reference or reference.keys() != other.keys():
        raise ValueError(
            _("compare_gradients needs the same parameters' gradients on both sides: run both steps first.")
        )
    # torch's max, not Python's: a NaN anywhere makes the largest difference NaN, never "identical"
    largest = torch.stack([(reference[name] - other[name]).abs().max() for name in reference]).max().item()
    if largest == 0:
        return phrase(
            "{n} gradient tensors, largest difference {largest:.1e}: identical",
            n=len(reference),
            largest=largest,
        )
    flat_reference, flat_other = (
        torch.cat([g.flatten() for g in side.values()]) for side in (reference, other)
    )
    return phrase(
        "largest difference {difference:.1e}, relative difference of the whole gradient {relative:.1e}",
        difference=largest,
        relative=((flat_reference - flat_other).norm() / flat_other.norm()).item(),
    )


def accumulation_against_one_batch(
    whole: torch.nn.Module, micro: torch.nn.Module, micro_batch: Mapping, batch: Mapping
) -> str:
    """Section 4: the gradients of one `batch` (`whole`) against those accumulated over micro-batches
    (`micro`), by `compare_gradients`, then the activations one step saves for a micro-batch and for
    the whole batch, measured (`measure_step`) on a copy of `whole`, so its gradients stay as they are."""
    steps = [measure_step(copy.deepcopy(whole), rows) for rows in (micro_batch, batch)]
    return "\n".join(
        [
            compare_gradients(whole, micro),
            phrase(
                "saved activations: {micro} per micro-batch of {micro_rows}, {whole} for the batch of {rows}",
                micro=format_bytes(steps[0].saved_bytes),
                micro_rows=_rows(micro_batch),
                whole=format_bytes(steps[1].saved_bytes),
                rows=_rows(batch),
            ),
        ]
    )


def _rows(batch: Mapping) -> int:
    return len(next(iter(batch.values())))


# Section 5 -------------------------------------------------------------------------------------


def metrics_against_majority(metrics: Mapping[str, float], majority: float, rows: int) -> str:
    """The loop's validation accuracy and F1 (on `rows` rows) above the accuracy of always answering
    the most common label (`majority_baseline`), the score a model must beat."""
    return "\n".join(
        [
            phrase(
                "validation accuracy {accuracy:.3f}   F1 {f1:.3f}   on {rows} rows",
                accuracy=metrics["accuracy"],
                f1=metrics["f1"],
                rows=rows,
            ),
            phrase("majority baseline   {majority:.3f}", majority=majority),
        ]
    )


# Explore ---------------------------------------------------------------------------------------


def checkpointing_every_n_layers(compared: Mapping[int, StepComparison]) -> Table:
    """One row per n of `activation_checkpointing_enable(every_n_layers=n)`: the activations the
    checkpointed step keeps, and its activations and FLOPs as a share of the plain step's
    (`compared[n]`: the checkpointed step's `measure_step` report divided by the plain one's)."""
    rows = [
        [
            every_n,
            format_bytes(comparison.new.saved_bytes),
            format_number(comparison.saved_bytes, ".0%"),
            format_number(comparison.flops, ".2f"),
        ]
        for every_n, comparison in compared.items()
    ]
    return Table(["every n-th layer", "activations kept", "of plain", "FLOPs / plain"], rows)
