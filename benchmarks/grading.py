"""Grading at the size of a class: `effitrain grade` on 30 learners' submissions of every lesson.

`make_class` writes, for each learner and each lesson, one notebook made from the lesson's
editions, in four kinds taken in turn (so a class of 30 has 7-8 of each per lesson):

- solved: the learner edition with every answer cell from the solution edition;
- blank: the learner edition as handed out;
- partly solved: the first question answered, the others left blank;
- broken: every answer cell raises (a name the lesson does not define) or fails to parse.

`bench_grading` grades the class with the defaults (`effitrain grade`'s sandbox, 2 workers) and,
on its own, one solved lesson-01 submission (median of 3), then the same submission with one more
answer cell of 4,000 lines `a = !b` (28 KB, under the 200,000-character cap: each line is a shell
command IPython would have to transform, the cell the flag scanner once spent 233 s on). Goals: a
class of 30 learners (240 notebooks of eight lessons) in at most 20 minutes, one lesson-01
submission in at most 15 s, and the long cell adding at most 5 s to it, flagged.
"""

from __future__ import annotations

import collections
import json
import statistics
import tempfile
import time
from pathlib import Path

from effitrain_lessons.course import grade
from effitrain_lessons.course.lessons import ROOT, edition_paths, lesson_names, load_lesson

KINDS = ("solved", "blank", "partly solved", "broken")
GOAL_CLASS_S = 20 * 60.0
GOAL_ONE_S = 15.0
GOAL_LONG_CELL_EXTRA_S = 5.0
LONG_CELL = "a = !b\n" * 4000
BROKEN = ("undefined_name_in_the_lesson + 1\n", "def broken(:\n    pass\n")


def submission(name: str, kind: str, seed: int = 0) -> dict:
    """One learner's notebook for lesson `name`, of the given kind."""
    learner = json.loads((ROOT / edition_paths(name)["learner"]).read_text(encoding="utf-8"))
    lesson = load_lesson(name)
    solutions = {cell.id: cell.source for cell in lesson.cells if cell.answer_for}
    first = next(iter(lesson.questions))
    for cell in learner["cells"]:
        question = lesson.answers.get(cell["id"])
        if question is None or kind == "blank":
            continue
        if kind == "solved" or (kind == "partly solved" and question == first):
            cell["source"] = solutions[cell["id"]]
        elif kind == "broken":
            cell["source"] = BROKEN[seed % len(BROKEN)]
    return learner


def make_class(folder: Path, learners: int = 30) -> dict[str, str]:
    """Write `learners` x every lesson notebooks under `folder`; return file -> kind."""
    kinds = {}
    for learner in range(learners):
        kind = KINDS[learner % len(KINDS)]
        for name in lesson_names():
            path = folder / f"learner{learner:02d}" / f"{name}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(submission(name, kind, learner)), encoding="utf-8")
            kinds[path.relative_to(folder).as_posix()] = kind
    return kinds


def bench_grading(learners: int = 30, repeats: int = 3) -> dict:
    with tempfile.TemporaryDirectory(prefix="effitrain-bench-grading-") as temp:
        temp = Path(temp)
        kinds = make_class(temp / "class", learners)
        print(f"  grading a class of {len(kinds)} notebooks ...", flush=True)
        start = time.perf_counter()
        results = grade.grade([str(temp / "class")], temp / "out", progress=True)
        class_seconds = time.perf_counter() - start
        one = temp / "one.ipynb"
        one.write_text(
            json.dumps(submission("01_checkpointing_first_principles", "solved")), encoding="utf-8"
        )
        singles = []
        for attempt in range(repeats):
            start = time.perf_counter()
            [single] = grade.grade([str(one)], temp / f"one_out{attempt}")
            singles.append(time.perf_counter() - start)
            assert single.total == single.possible, single.reason
        long_cell = submission("01_checkpointing_first_principles", "solved")
        answers = load_lesson("01_checkpointing_first_principles").answers
        answer = next(cell for cell in long_cell["cells"] if cell["id"] in answers)
        answer["source"] = "".join(answer["source"]) + "\n" + LONG_CELL
        one.write_text(json.dumps(long_cell), encoding="utf-8")
        longs, long_flags = [], []
        for attempt in range(repeats):
            start = time.perf_counter()
            [single] = grade.grade([str(one)], temp / f"long_out{attempt}")
            longs.append(time.perf_counter() - start)
            long_flags = list(single.flags)
    by_lesson: dict[str, list[float]] = collections.defaultdict(list)
    statuses = collections.Counter(result.status for result in results)
    earned: dict[str, list[float]] = collections.defaultdict(list)
    for result in results:
        by_lesson[result.lesson or "unknown"].append(result.seconds)
        earned[kinds[result.file]].append(result.total / result.possible if result.possible else 0.0)
    return {
        "notebooks": len(results),
        "learners": learners,
        "class_s": class_seconds,
        "per_notebook_s": class_seconds / len(results),
        "statuses": dict(statuses),
        "lesson_mean_s": {name: statistics.mean(times) for name, times in sorted(by_lesson.items())},
        "share_of_points": {kind: statistics.mean(values) for kind, values in earned.items()},
        "one_lesson01_s": statistics.median(singles),
        "one_lesson01_runs": singles,
        "long_cell_s": statistics.median(longs),
        "long_cell_runs": longs,
        "long_cell_flags": long_flags,
        "peak_memory_mb": max(result.peak_memory_mb for result in results),
    }
