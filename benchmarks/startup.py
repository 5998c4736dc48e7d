"""How long a learner waits before anything happens: imports in a fresh interpreter.

Each figure is the median of `repeats` fresh `python -c "import ..."` processes (wall time, the
interpreter's own start included; the first figure is the interpreter alone, for reference).
Time to a lesson's first output is measured by `lessons.run_all` in a fresh kernel.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

IMPORTS = {
    "python alone": "pass",
    "effitrain_lessons": "import effitrain_lessons",
    "effitrain_lessons + torch": "import effitrain_lessons, torch",
    "effitrain_lessons.with_trainer.trainer (transformers)": "import effitrain_lessons.with_trainer.trainer",
    "effitrain_lessons.local_sgd.runs (accelerate)": "import effitrain_lessons.local_sgd.runs",
}


def import_times(repeats: int = 3) -> dict[str, float]:
    results = {}
    for label, statement in IMPORTS.items():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], check=True)
            times.append(time.perf_counter() - start)
        results[label] = statistics.median(times)
    return results
