"""Lesson 00, Start here: its quiz. The lesson measures with the shared package only."""
