"""Lesson 03, gradient checkpointing with `Accelerator`: the loop watched from outside
(`train_loop`), the loop the lesson writes (`saved`, built from its `# @save` cells), what its cells
print (`reports`), its figures (`figures`) and the quiz (`quiz`).
"""
