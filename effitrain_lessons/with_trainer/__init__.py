"""Lesson 02, gradient checkpointing with `Trainer`: the callback that measures inside `train()`
(`trainer`), what the lesson prints of its measurements (`reports`), its figures (`figures`) and the
quiz (`quiz`).
"""
