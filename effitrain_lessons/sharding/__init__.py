"""Lesson 9: sharding what checkpointing cannot (ZeRO-1, -2 and -3 with PyTorch, in real processes)."""
