"""Lessons on efficient training with PyTorch: activation checkpointing and Local SGD."""

__version__ = "0.1.0"
