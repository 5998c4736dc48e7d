"""Lesson 00, Start here: its quiz (`quiz`) and the figure of its Explore cell (`figures`). The
lesson measures with the shared package only."""
