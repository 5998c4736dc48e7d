"""Lesson 3's exercise: checkpoint some of a transformers model's layers, and measure what it buys.

`activation_checkpointing_enable()` turns checkpointing on in every repeated layer (each a
`GradientCheckpointingLayer`, whose `gradient_checkpointing` flag says whether it runs under
`checkpoint`); `every_n_layers=n` keeps it on in every n-th. Setting the flags afterwards chooses any
layers. `fewest_layers` finds, by measuring, the fewest layers whose checkpointing keeps a step
within a share of the plain step's activations, and what that step's FLOPs cost: the check of the
exercise compares a learner's prediction with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from effitrain_lessons.shared.i18n import phrase
from effitrain_lessons.shared.memory import count_step, record_saved_tensors


def checkpointable_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's repeated layers, in order: the modules `activation_checkpointing_enable` counts."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [module for module in model.modules() if isinstance(module, GradientCheckpointingLayer)]


def checkpoint_first_layers(model: torch.nn.Module, count: int) -> None:
    """Checkpoint the first `count` layers of a transformers model, and no other."""
    layers = checkpointable_layers(model)
    if type(count) is not int or not 0 <= count <= len(layers):
        raise ValueError(
            phrase(
                "count is a whole number of layers from 0 to {layers}, got {count!r}.",
                layers=len(layers),
                count=count,
            )
        )
    model.config.use_cache = False
    model.activation_checkpointing_enable()
    for index, layer in enumerate(layers):
        layer.gradient_checkpointing = index < count


def kept_bytes(model: torch.nn.Module, batch: Mapping) -> int:
    """What a training-mode forward pass of `model` on `batch` keeps for the backward pass (unique
    storages, the model's own parameters left out), as `measure_step` counts it."""
    with record_saved_tensors(model) as log:
        loss = model(**batch).loss
    del loss
    return log.total_bytes


def step_flops(model: torch.nn.Module, batch: Mapping) -> int:
    """The FLOPs of one forward and backward pass, recomputation included (`count_step`)."""
    with count_step() as count:
        model(**batch).loss.backward()
    model.zero_grad(set_to_none=True)
    return count.flops


@dataclass(frozen=True)
class FewestLayers:
    """The fewest layers to checkpoint so that a step keeps at most `share` of the plain step's
    activations, and that step's FLOPs over the plain step's."""

    share: float
    layers: int
    flops: float  # the step's FLOPs / the plain step's


def fewest_layers(
    make_model: Callable[[], torch.nn.Module], batch: Mapping, share: float = 0.5
) -> FewestLayers:
    """Measure a fresh model (`make_model()`, in training mode) with its first 0, 1, 2, ... layers
    checkpointed until a step keeps at most `share` of what the plain step keeps; then the FLOPs of
    that step against the plain one. Lesson 3's exercise checks predictions with it."""
    if not 0 < share <= 1:
        raise ValueError(phrase("share is a fraction in (0, 1], got {share!r}.", share=share))
    model = make_model()
    model.train()
    layers = len(checkpointable_layers(model))
    plain_kept, plain_flops = kept_bytes(model, batch), step_flops(model, batch)
    for count in range(layers + 1):
        checkpoint_first_layers(model, count)
        if kept_bytes(model, batch) <= share * plain_kept:
            return FewestLayers(share, count, step_flops(model, batch) / plain_flops)
    return FewestLayers(share, -1, float("nan"))  # not even every layer: outside the layers dominates
