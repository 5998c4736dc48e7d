"""Lesson 04, Local SGD with `Accelerator` on real processes: its configuration and runs (`runs`),
what it prints of them (`reports`), the launch check (`launched`), the loop the lesson writes
(`saved`, built from its `# @save` cells), its figures (`figures`) and the quiz (`quiz`).
"""
