"""Lesson 06, will it fit?: the training-memory planner (`plan`, also `effitrain plan`), what to
recompute measured (`recompute`), the lesson's measurements set beside the planner's count
(`compare`), their figures (`figures`) and the quiz (`quiz`).
"""
