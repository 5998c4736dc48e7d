"""Lesson 07, checkpointing your own model: its data, counters, peak memory and the reports its
cells print (`measure`), its figures (`figures`) and the quiz (`quiz`).
"""
