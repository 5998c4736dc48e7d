"""`python -m effitrain_lessons.local_sgd.launched`: each process a launcher starts says who it is. Lesson 4.

A launcher (`torchrun`, `accelerate launch`) tells each process it starts who it is through the
environment: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`; it is what
`torch.distributed` and `Accelerator` read to join the others. This module prints just that, and
imports nothing heavy (no torch), so that lesson 04 can count the processes a command line really
starts at a few MB each, where its training module takes hundreds of MB a process: a 1 GB machine
(Binder) holds the notebook and the launch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from effitrain_lessons.shared.i18n import phrase

MARK = "WORLD_SIZE="  # in every line this module prints, whatever the language: what a reader counts


def who_am_i(environment: dict[str, str] | None = None) -> str:
    """The line this process prints: its rank among how many, as the launcher set them."""
    environment = os.environ if environment is None else environment
    world = environment.get("WORLD_SIZE")
    if world is None:
        return phrase(
            "a process with {mark}(not set): no launcher made this a distributed run; it is the only one",
            mark=MARK,
        )
    return phrase(
        "process {rank} of {world}: RANK={rank} {mark}{world} MASTER_ADDR={address}",
        rank=environment.get("RANK", "?"),
        world=world,
        mark=MARK,
        address=environment.get("MASTER_ADDR", "?"),
    )


@dataclass(frozen=True)
class Started:
    """What one launch command started: the lines its processes printed (one per process), and how
    it ended. `print(started)` says it, in the language in use."""

    command: str
    lines: tuple[str, ...]
    exit_code: int

    def __str__(self) -> str:
        head = phrase(
            "$ {command}: processes started: {n}, exit code {code}",
            command=self.command,
            n=len(self.lines),
            code=self.exit_code,
        )
        return "\n".join([head, *[f"    {line}" for line in self.lines]])


def processes_started(command: str, finished) -> Started:
    """The processes a launch `command` started, from its finished `subprocess.run(...,
    capture_output=True, text=True)` of this module: the lines with `MARK`, one per process."""
    lines = sorted(line for line in finished.stdout.splitlines() if MARK in line)
    return Started(command, tuple(lines), finished.returncode)


if __name__ == "__main__":
    # One write of the whole line: the processes share one output, and a print() under an unbuffered
    # launcher writes the text and its newline apart, so two processes' lines could run together.
    os.write(1, (who_am_i() + "\n").encode())
