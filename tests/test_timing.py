"""The one timing discipline of every lesson (effitrain_lessons/shared/timing.py).

What is held here is the method, not a speed: warm-up steps left out, the median and the middle half
reported, a ratio's range taken from both spreads, the clock on a CPU the process's own CPU time
(so time the process spends off the core, as when another program takes it, is not counted), and
every lesson's setup cell putting PyTorch on one thread. That the lessons' times hold up beside a
busy program is measured by `make bench` (benchmarks/busy.py), not by a timed test.
"""

from __future__ import annotations

import time

import pytest
import torch

from effitrain_lessons.course.build import setup_cell_source
from effitrain_lessons.shared import timing
from effitrain_lessons.shared.memory import StepReport, measure_step
from effitrain_lessons.shared.timing import Clock, Ratio, Times, time_alternating, time_steps


def test_median_and_middle_half():
    times = Times((0.010, 0.011, 0.012, 0.013, 0.050), (0.010, 0.011, 0.012, 0.013, 0.050), "cpu")
    assert times.median == 0.012  # one slow step does not move it
    assert (times.low, times.high) == (0.011, 0.013)
    assert times.milliseconds() == "12.0 ms (11.0-13.0)"
    assert "median of 5 steps (CPU time; wall 12.0 ms)" in str(times)


def test_a_ratio_carries_both_spreads_and_says_when_the_direction_is_clear():
    base = Times((1.0, 1.0, 1.1, 1.2, 1.2), (1.0,) * 5, "cpu")
    slower = Times((1.5, 1.5, 1.6, 1.7, 1.7), (1.5,) * 5, "cpu")
    ratio = slower / base
    assert isinstance(ratio, Ratio)
    assert ratio.median == pytest.approx(1.6 / 1.1)
    assert ratio.low == pytest.approx(1.5 / 1.2) and ratio.high == pytest.approx(1.7 / 1.0)
    assert ratio.clear
    overlapping = Times((1.0, 1.1, 1.2, 1.3, 1.4), (1.0,) * 5, "cpu") / base
    assert not overlapping.clear
    assert str(ratio) == "1.45x (1.25x-1.70x)"


def test_warm_up_steps_are_run_but_not_timed():
    calls = []
    times = time_steps(lambda: calls.append(1), warmup=3, repeats=4)
    assert len(calls) == 7 and times.steps == 4


def test_settings_are_timed_in_turn():
    order = []
    time_alternating({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, warmup=1, repeats=2)
    assert order == ["a", "b"] * 3


def test_on_a_cpu_the_clock_counts_only_this_process_s_work():
    """A step that waits (as a step does while another program has the core) costs no CPU time."""
    times = time_steps(lambda: time.sleep(0.02), warmup=0, repeats=3)
    assert times.clock == "cpu"
    assert min(times.wall) >= 0.02
    assert times.median < 0.01


def test_a_clock_stopped_without_a_start_counts_nothing():
    clock = Clock()
    clock.stop()
    assert clock.times() is None
    for _ in range(3):
        clock.start()
        clock.stop()
    assert clock.times(warmup=2).steps == 1
    assert clock.times(warmup=5).steps == 3  # fewer steps than the warm-up: all of them


@pytest.mark.parametrize("warmup, repeats", [(-1, 3), (1, 0), (1.5, 3), (1, True)])
def test_bad_counts_are_refused_in_one_sentence(warmup, repeats):
    with pytest.raises(ValueError, match="must be a whole number"):
        time_steps(lambda: None, warmup=warmup, repeats=repeats)


def test_measure_step_times_several_steps_and_leaves_one_step_s_gradients():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
    x = torch.randn(4, 8)
    state = torch.get_rng_state()
    report = measure_step(model, x, warmup=1, repeats=5)
    assert report.times.steps == 5
    once = [p.grad.clone() for p in model.parameters()]
    torch.set_rng_state(state)  # the same step, run once by hand with the caller's random state
    model.zero_grad()
    model(x).sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(once, model.parameters()))


def test_a_step_report_from_one_time_is_a_single_step():
    report = StepReport(1, 1, 3, 1, 0.010, None, "cpu", True)
    assert report.seconds == 0.010 and report.times.steps == 1


@pytest.mark.parametrize("language", ["en", "tr"])
def test_every_lesson_s_setup_cell_puts_pytorch_on_one_thread(language):
    source = setup_cell_source(language)
    assert "import torch" in source and "torch.set_num_threads(1)" in source
    # after the language is chosen, so that the comment above it is in the lesson's language
    assert source.index("use_language(") < source.index("torch.set_num_threads(1)")


def test_the_module_explains_the_clock_it_chose():
    assert "process_time" in timing.__doc__ and "one thread" in timing.__doc__
