"""Lesson 05, from Local SGD to DiLoCo: its configuration, results and outer-step watch (`runs`),
the loop the lesson writes (`saved`, built from its `# @save` cells), its figures (`figures`) and
the quiz (`quiz`).
"""
