"""Lesson 02, gradient checkpointing with `Trainer`: the callback that measures inside `train()`
(`trainer`), its figures (`figures`) and the quiz (`quiz`).
"""
