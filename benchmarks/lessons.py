"""Run All, timed and weighed: each lesson edition in a fresh kernel, as a learner runs it.

A run starts a kernel (the environment's `python3`, in the notebook's own folder, offline as every
lesson is), executes every code cell in order, and stops the kernel. It reports:

- `run_all_s`: wall time from the first cell's execute request to the last cell's reply;
- `first_output_s`: from asking for the kernel to the first cell's reply (what a learner waits for
  after opening a lesson and pressing Run);
- `kernel_peak_rss`: the kernel process's peak resident memory, read from the kernel itself at
  the end (`VmHWM` in /proc/self/status on Linux: exact, not sampled);
- `children_peak_rss`: the largest peak of any process the kernel started and waited for
  (lesson 4's workers);
- `slowest_cells`: the five slowest cells (index, first line, seconds), to see where time goes;
- `tree_peak_pss`: the peak of the proportional set size summed over the kernel and all its
  descendants, sampled every 0.5 s from smaps_rollup (one read costs about 13 ms of CPU for a
  process that has imported torch, so the sampling is kept sparse). PSS splits copy-on-write
  pages between the forked processes that share them, so this is what the whole lesson costs a
  machine at its busiest moment.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient

from effitrain_lessons import lessons as manifest

# The kernel's own high-water mark is VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss
# across exec, so a kernel started by a large process would report that process's size.
PEAK_PROBE = """\
import json as _json, resource as _resource
_hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print("EFFITRAIN-PEAK " + _json.dumps({
    "kernel_peak_rss": (
        int(_hwm[0].split()[1]) if _hwm else _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
    ) * 1024,
    "children_peak_rss": _resource.getrusage(_resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
}))
"""


def _pss(pid: int) -> int:
    """A process's proportional set size in bytes, from /proc/<pid>/smaps_rollup (one cheap read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # gone, or no smaps_rollup on this system
        pass
    return 0


class TreeSampler(threading.Thread):
    """Samples the summed PSS of a process and its descendants until stopped (Linux)."""

    def __init__(self, pid: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                pids = [self.root.pid, *(child.pid for child in self.root.children(recursive=True))]
            except psutil.Error:
                break
            self.peak = max(self.peak, sum(_pss(pid) for pid in pids))
            self._stop_event.wait(self.interval)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        return self.peak


def lessons_to_run(only: list[str] | None = None) -> list[manifest.Lesson]:
    """The lessons the manifest lists, in order; with `only`, those whose file name starts with one of
    its prefixes ("04", "04_local_sgd")."""
    return [each for each in manifest.LESSONS if not only or any(each.file.startswith(x) for x in only)]


def run_all(path: Path, timeout: float = 600, probe: str = PEAK_PROBE, keep_printed: bool = False) -> dict:
    """Execute every code cell of the notebook at `path` in a fresh kernel; see the module doc.
    `probe` is the last cell, which prints "EFFITRAIN-PEAK " and a JSON object of what it read (the
    GPU check adds CUDA's peak to it); `keep_printed` adds `printed`, what the cells wrote to stdout."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(probe))
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    code_cells = [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    asked = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        sampler = TreeSampler(pid)
        sampler.start()
        first_output_s = None
        cell_seconds = []
        start = time.perf_counter()
        try:
            for index, cell in code_cells[:-1]:
                began = time.perf_counter()
                client.execute_cell(cell, index)
                cell_seconds.append(
                    (time.perf_counter() - began, index, cell.source.strip().splitlines()[0][:60])
                )
                if first_output_s is None:
                    first_output_s = time.perf_counter() - asked
            run_all_s = time.perf_counter() - start
        finally:
            tree_peak = sampler.stop()
        index, probe = code_cells[-1]
        client.execute_cell(probe, index)
    errors = [
        f"{output.get('ename')}: {output.get('evalue')}"
        for _, cell in code_cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    if errors:
        raise RuntimeError(f"{path.name} raised while running: {errors[0]}")
    text = "".join(output.get("text", "") for output in probe.outputs if output.get("name") == "stdout")
    peaks = json.loads(text.split("EFFITRAIN-PEAK ", 1)[1])
    slowest = [
        {"cell": index, "starts": line, "s": round(seconds, 2)}
        for seconds, index, line in sorted(cell_seconds, reverse=True)[:5]
    ]
    printed = [
        output.get("text", "").rstrip("\n")
        for _, cell in code_cells[:-1]
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stdout"
    ]
    return {
        "run_all_s": run_all_s,
        "first_output_s": first_output_s,
        "tree_peak_pss": tree_peak,
        **peaks,
        "slowest_cells": slowest,
        **({"printed": printed} if keep_printed else {}),
    }
