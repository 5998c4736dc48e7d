"""Lesson 07, checkpointing your own model: its data, counters and peak memory (`measure`),
its figures (`figures`) and the quiz (`quiz`).
"""
