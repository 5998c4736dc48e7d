"""Lesson 02 on a busy laptop: Run All beside one busy program, against Run All alone.

A learner's laptop often runs a browser or a video call beside the lesson. On this course's 2-core
machine, one single-threaded busy loop beside a lesson whose PyTorch used two threads made lesson
02's Run All take 309 s instead of 24 s: OpenMP's threads spin while they wait for each other, and
the busy program keeps one of them off its core. Every lesson's setup cell now puts PyTorch on one
thread and every time is the median of several steps in the process's CPU time
(`effitrain_lessons.shared.timing`).

This part runs lesson 02's English solution edition alone, then beside a pure-Python busy loop (one
process spinning on one core), and reads two things from each run: the wall time of Run All, and
the headline ratio the lesson prints (the "time" row of section 4: checkpointed step over plain
step). Goals: Run All beside the busy loop within 90 s, and its ratio within 25 % of the quiet run's.
"""

from __future__ import annotations

import re
import subprocess
import sys

from effitrain_lessons import lessons as manifest
from lessons import run_all

GOAL_BUSY_S = 90.0
GOAL_RATIO_CHANGE = 0.25
LESSON = "02"
# the time row of lesson 02's compare_steps table: "time  5.1 ms (4.9-5.3)  7.7 ms (...)  1.53x (1.42x-1.63x)"
TIME_ROW = re.compile(r"^time\s.*\s(\d+(?:\.\d+)?)x \(\d", re.MULTILINE)
BUSY_LOOP = "while True:\n    pass\n"


def headline_ratio(printed: list[str]) -> float:
    for text in printed:
        found = TIME_ROW.search(text)
        if found:
            return float(found.group(1))
    raise RuntimeError("lesson 02 printed no time row with a ratio: its section 4 table changed.")


def run_lesson(root) -> dict:
    path = root / "notebooks" / "solutions" / manifest.lesson(LESSON).notebook
    result = run_all(path, keep_printed=True)
    return {"run_all_s": result["run_all_s"], "ratio": headline_ratio(result["printed"])}


def busy_machine(root) -> dict:
    """Lesson 02 alone, then beside one busy loop; each run's wall time and headline ratio."""
    quiet = run_lesson(root)
    loop = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        busy = run_lesson(root)
    finally:
        loop.kill()
        loop.wait()
    change = busy["ratio"] / quiet["ratio"] - 1
    return {
        "lesson": manifest.lesson(LESSON).file,
        "quiet": quiet,
        "busy": busy,
        "ratio_change": change,
        "busy_ok": busy["run_all_s"] <= GOAL_BUSY_S,
        "ratio_ok": abs(change) <= GOAL_RATIO_CHANGE,
    }
