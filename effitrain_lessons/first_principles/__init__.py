"""Lesson 01, gradient checkpointing from first principles: the A + B = C toy, selective
policies and the deep stack (`checkpointing`), the lines its cells print (`reports`), their figures
(`figures`) and the quiz (`quiz`).
"""
