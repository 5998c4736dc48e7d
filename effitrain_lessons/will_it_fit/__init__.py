"""Lesson 06, will it fit?: the training-memory planner (`plan`, also `effitrain plan`), what to
recompute measured (`recompute`), their figures (`figures`) and the quiz (`quiz`).
"""
