"""How every lesson times a step: warm-up steps, several timed steps, the median and the spread.

A single timed step says little on a laptop: the first steps pay one-off costs (allocations, lazy
initialisation), and any other program (a browser, a video call) can take the core in the middle of
one. So a lesson runs `warmup` steps untimed, times `repeats` more, and reports their median with
the middle half of them (the interquartile range) as the spread.

Which clock: on a CPU, the process's own CPU time (`time.process_time`), beside the wall time.
With PyTorch on one thread (each lesson's setup cell calls `torch.set_num_threads(1)`), CPU time
counts what the step cost this process, and another busy program does not add to it: it takes the
core away, which stretches wall time only. With several threads, OpenMP's threads spin while they
wait for each other, and a busy machine makes that wait (and the CPU time) grow: one thread is what
makes the clock trustworthy. On a GPU the work is asynchronous, so the clock is the wall time
between two synchronizations.

A ratio of two times carries its spread too (`Ratio`): the lowest and highest ratio the two middle
halves allow. A lesson says "slower" only where even the lowest is above 1 (`Ratio.clear`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.device import synchronize
from effitrain_lessons.shared.i18n import format_number, phrase

WARMUP = 2  # untimed steps first
REPEATS = 7  # timed steps


def _quartiles(values: tuple[float, ...]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, middle, high


@dataclass(frozen=True)
class Times:
    """The timed steps of one setting, warm-up left out (seconds each)."""

    seconds: tuple[float, ...]  # by the clock that counts: CPU time on a CPU, wall time on a GPU
    wall: tuple[float, ...]  # the wall time of the same steps
    clock: str  # "cpu" or "wall"

    def __post_init__(self):
        if not self.seconds or len(self.seconds) != len(self.wall):
            raise ValueError(phrase("Times needs at least one timed step, and a wall time for each."))

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def low(self) -> float:
        """The first quartile: a quarter of the steps were faster."""
        return _quartiles(self.seconds)[0]

    @property
    def high(self) -> float:
        """The third quartile: a quarter of the steps were slower."""
        return _quartiles(self.seconds)[2]

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)

    @property
    def steps(self) -> int:
        return len(self.seconds)

    def scaled(self, factor: float) -> Times:
        """The same steps, each `factor` times as long (e.g. one micro-batch times the accumulation steps)."""
        return Times(
            tuple(s * factor for s in self.seconds), tuple(w * factor for w in self.wall), self.clock
        )

    def __truediv__(self, base: Times) -> Ratio:
        return Ratio(self.median / base.median, self.low / base.high, self.high / base.low)

    def milliseconds(self) -> str:
        """'6.6 ms (6.1-7.4)': the median, and the middle half of the steps."""
        return phrase(
            "{median} ms ({low}-{high})",
            median=format_number(self.median * 1e3, ".1f"),
            low=format_number(self.low * 1e3, ".1f"),
            high=format_number(self.high * 1e3, ".1f"),
        )

    def __str__(self) -> str:
        if self.clock == "cpu":
            return phrase(
                "{times}, median of {steps} steps (CPU time; wall {wall} ms)",
                times=self.milliseconds(),
                steps=self.steps,
                wall=format_number(self.wall_median * 1e3, ".1f"),
            )
        return phrase("{times}, median of {steps} steps", times=self.milliseconds(), steps=self.steps)


@dataclass(frozen=True)
class Ratio:
    """One time over another: the ratio of the medians, and the lowest and highest the spreads allow."""

    median: float
    low: float
    high: float

    @property
    def clear(self) -> bool:
        """Whether the spread leaves no doubt about the direction: all of it above 1, or all below."""
        return self.low > 1 or self.high < 1

    def __str__(self) -> str:
        return phrase(
            "{median}x ({low}x-{high}x)",
            median=format_number(self.median, ".2f"),
            low=format_number(self.low, ".2f"),
            high=format_number(self.high, ".2f"),
        )


def clock_for(device: torch.device | str) -> str:
    return "cpu" if torch.device(device).type == "cpu" else "wall"


class Clock:
    """Times steps that run inside someone else's loop (a `Trainer` callback): `start()` before a
    step, `stop()` after it; `times()` drops the first `warmup` and returns the rest."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.seconds: list[float] = []
        self.wall: list[float] = []
        self._started: tuple[float, float] | None = None

    def start(self) -> None:
        synchronize(self.device)
        self._started = (time.process_time(), time.perf_counter())

    def stop(self) -> None:
        if self._started is None:
            return
        synchronize(self.device)
        cpu, wall = time.process_time() - self._started[0], time.perf_counter() - self._started[1]
        self._started = None
        self.wall.append(wall)
        self.seconds.append(cpu if self.device.type == "cpu" else wall)

    def times(self, warmup: int = WARMUP) -> Times | None:
        """The steps timed after `warmup` (all of them if there were no more); None if none."""
        kept = slice(warmup, None) if len(self.seconds) > warmup else slice(None)
        if not self.seconds:
            return None
        return Times(tuple(self.seconds[kept]), tuple(self.wall[kept]), clock_for(self.device))


def time_steps(
    step: Callable[[], object],
    device: torch.device | str = "cpu",
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> Times:
    """Run `step()` `warmup` times untimed, then `repeats` times timed."""
    return time_alternating({"step": step}, device, warmup, repeats)["step"]


def time_alternating(
    steps: Mapping[str, Callable[[], object]],
    device: torch.device | str = "cpu",
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> dict[str, Times]:
    """Time several settings in turn (A, B, A, B, ...), so that a burst of load elsewhere on the
    machine falls on all of them alike; returns each one's `Times`."""
    whole_numbers(repeats=repeats)
    if type(warmup) is not int or warmup < 0:
        raise ValueError(phrase("warmup must be a whole number of at least 0, got {value!r}.", value=warmup))
    clocks = {name: Clock(device) for name in steps}
    for _round in range(warmup + repeats):  # not `_`: the translation function's name
        for name, step in steps.items():
            clocks[name].start()
            step()
            clocks[name].stop()
    return {name: clock.times(warmup) for name, clock in clocks.items()}
