"""Which accelerator the lessons run on (every lesson calls `pick_device` once)."""

from __future__ import annotations

import torch

from effitrain_lessons.shared.i18n import _, phrase


def pick_device(prefer: str | None = None) -> torch.device:
    """Return the best available device: CUDA, then Apple's MPS, then the CPU.

    `prefer` ("cuda", "mps" or "cpu") asks for one device; asking for one this
    machine does not have raises a sentence saying what to do instead.
    """
    available = {
        "cuda": torch.cuda.is_available(),
        "mps": torch.backends.mps.is_available(),
        "cpu": True,
    }
    if prefer is not None:
        if prefer not in available:
            raise ValueError(
                phrase(
                    "Unknown device {prefer!r}: use 'cuda', 'mps', 'cpu' or None to pick automatically.",
                    prefer=prefer,
                )
            )
        if not available[prefer]:
            raise RuntimeError(
                phrase(
                    "This machine has no {device} device: pass prefer=None to use what it has "
                    "(on Colab, choose Runtime > Change runtime type > GPU).",
                    device=prefer.upper(),
                )
            )
        return torch.device(prefer)
    return torch.device(next(name for name, ok in available.items() if ok))


def describe_device(device: torch.device | str | None = None) -> str:
    """One line naming the device the lessons will use, e.g. 'Using cpu (2 threads).'"""
    device = torch.device(device) if device is not None else pick_device()
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return phrase(
            "Using cuda: {name} with {memory:.1f} GiB.", name=props.name, memory=props.total_memory / 2**30
        )
    if device.type == "mps":
        return _("Using mps: Apple GPU (Metal).")
    return phrase(
        "Using cpu ({threads} threads); a GPU would make the larger settings faster.",
        threads=torch.get_num_threads(),
    )


def synchronize(device: torch.device | str) -> None:
    """Wait for the device's queued work, so that a clock read after it times the work (a no-op on a CPU)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
