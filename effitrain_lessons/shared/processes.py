"""Starting real worker processes from a notebook, and ending them (and a process's own group) cleanly.

Shared by the lessons that run training in several processes: lesson 3 (`checkpointing_under_ddp`:
checkpointing meets DDP), lessons 4 and 5 (`distributed_runs.launch`: the lesson's own loop,
measured). A job is a function; `start_workers` forks the processes that run it, each told who it is
through the same environment a launcher sets (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`, ...), collects
what each returned, and stops them all on failure or timeout. `end_processes` closes a process group
before the process exits. Forking needs Linux or macOS; `can_fork` says whether this platform can.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch

from effitrain_lessons.shared.i18n import _, phrase


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def start_workers(job, num_processes: int, timeout: float) -> list[list[dict]]:
    """Fork `num_processes` workers that each run `job()` (returning a list of report dicts) and
    collect what each returned; stop them all on failure or timeout."""
    if not can_fork():
        raise RuntimeError(
            _(
                "This platform cannot fork processes (Windows): run the lesson's training in a terminal "
                "instead, with torchrun --nproc_per_node 2 -m effitrain_lessons.local_sgd.runs --cpu."
            )
        )
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or not 2 <= num_processes <= 8:
        raise ValueError(
            phrase(
                "num_processes must be a whole number from 2 to 8, got {num_processes!r}.",
                num_processes=num_processes,
            )
        )
    threads = max(1, (os.cpu_count() or 1) // num_processes)
    preload()
    # A garbage collection in a forked worker would write to every object it inherited, and copy
    # each page that holds one; frozen, those objects are left alone (until the workers are done).
    gc.freeze()
    with tempfile.TemporaryDirectory(prefix="effitrain-workers-") as folder:
        context = torch.multiprocessing.start_processes(
            _child,
            args=(num_processes, free_port(), folder, job, threads),
            nprocs=num_processes,
            join=False,
            start_method="fork",
        )
        deadline = time.monotonic() + timeout
        try:
            while not context.join(timeout=0.5):
                if time.monotonic() > deadline:
                    raise TimeoutError
        except TimeoutError:
            raise RuntimeError(
                phrase(
                    "The processes did not finish within {timeout:.0f} s and were stopped: "
                    "try fewer steps or configurations.",
                    timeout=timeout,
                )
            ) from None
        except Exception as error:  # a process raised or died: torch has stopped the others
            raise RuntimeError(
                phrase(
                    "A training process failed ({kind}); its log ends: {log}",
                    kind=type(error).__name__,
                    log=log_tail(folder),
                )
            ) from None
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
                process.join(timeout=5)
            gc.unfreeze()
        return [json.loads((Path(folder) / f"rank{rank}.json").read_text()) for rank in range(num_processes)]


def end_processes() -> None:
    """Close this process's process group, if a launcher or the lesson opened one.

    A process that exits with its gloo group still open can abort in the group's threads as the
    interpreter shuts down ("terminate called without an active exception"), failing a run that
    finished its work; closing the group first ends the process cleanly.
    """
    import torch.distributed

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def preload() -> None:
    """Import here, once, what every worker needs: forked workers then share these pages with this
    process instead of each importing (and holding) its own copy, and start training at once."""
    import accelerate.local_sgd  # noqa: F401
    import torch.distributed  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel  # noqa: F401

    from effitrain_lessons.shared.models import tiny_bert  # noqa: F401  (transformers' BERT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_to_log(log) -> None:
    """Send this worker's output to `log`: print, Python's logging handlers that wrote to the
    notebook's streams (transformers' warnings), and torch's C++ warnings on file descriptor 2.
    They belong in the log, not under the notebook's cell."""
    import logging

    streams = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            # (logging's last resort writes to whatever sys.stderr is: it follows on its own)
            if isinstance(handler, logging.StreamHandler) and handler.stream in streams:
                with contextlib.suppress(AttributeError):
                    handler.setStream(log)
    sys.stdout = sys.stderr = log
    os.dup2(log.fileno(), 2)


def _child(rank: int, world_size: int, port: int, folder: str, job, threads: int) -> None:
    log = open(Path(folder) / f"rank{rank}.log", "w", buffering=1, encoding="utf-8")
    write_to_log(log)
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(threads)
    # A forked child inherits the parent's Accelerate state; start from a clean one.
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    PartialState._reset_state()
    try:
        reports = job()
    except BaseException:
        import traceback

        traceback.print_exc()
        raise
    (Path(folder) / f"rank{rank}.json").write_text(json.dumps(reports), encoding="utf-8")
    end_processes()


def log_tail(folder: str) -> str:
    lines = []
    for log in sorted(Path(folder).glob("rank*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        if text:
            lines.append(f"[{log.stem}] {text[-1]}")
    return " | ".join(lines) or _("(no output)")  # the lines themselves are the log's, as written
