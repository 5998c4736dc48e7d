"""Tests for lesson 4's slow link and its launch with Accelerate's `notebook_launcher`.

The link is simulated (`distributed_runs.Link`): these tests check that it adds what was asked,
where the communication happens, and that Local SGD's crossover with data parallel moves the right
way when the link gets slower. Every launch starts 2 processes that talk over gloo on this CPU.
"""

import math
import statistics
import time

import psutil
import pytest
from accelerate import notebook_launcher
from matplotlib.figure import Figure

from effitrain_lessons.local_sgd.figures import plot_link_timings
from effitrain_lessons.local_sgd.reports import link_table
from effitrain_lessons.local_sgd.runs import (
    LinkTiming,
    LocalSGDConfig,
    link_milliseconds,
    link_sweep,
    link_timings,
    predicted_ms_per_step,
)
from effitrain_lessons.local_sgd.saved import train
from effitrain_lessons.shared.distributed_runs import Link, RunConfig, measuring

LATENCY_MS = 30


def no_children() -> bool:
    return psutil.Process().children(recursive=True) == []


def launched(configs, loop=train, timeout=120):
    with measuring(configs, loop, timeout=timeout) as measured:
        notebook_launcher(measured, num_processes=2, use_port=measured.port)
    return measured.runs


def test_a_link_takes_latency_plus_bytes_over_bandwidth():
    assert Link().seconds(10**6) == 0 and not Link().simulated
    assert Link(latency_ms=10).seconds(10**9) == pytest.approx(0.010)
    # 1 MB at 8 Mb/s is one second, plus 5 ms
    assert Link(latency_ms=5, megabits_per_s=8).seconds(10**6) == pytest.approx(1.005)
    assert RunConfig(latency_ms=2, megabits_per_s=100).link == Link(2, 100)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"latency_ms": -1}, "latency_ms must be a number of at least 0"),
        ({"megabits_per_s": math.nan}, "megabits_per_s must be a number of at least 0"),
        ({"bucket_mb": 0}, "bucket_mb must be above 0"),
        ({"latency_ms": True}, "latency_ms must be a number"),
    ],
)
def test_bad_link_settings_are_one_sentence(settings, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**settings).check()


@pytest.fixture(scope="module")
def delayed():
    """Data parallel and Local SGD (K = 4) on this machine's link and on a 30 ms link."""
    configs = [
        LocalSGDConfig(mode="ddp", steps=9, layers=1),
        LocalSGDConfig(mode="ddp", steps=9, layers=1, latency_ms=LATENCY_MS),
        LocalSGDConfig(mode="local_sgd", k=4, steps=9, layers=1, latency_ms=LATENCY_MS),
    ]
    return launched(configs)


def test_notebook_launcher_starts_two_measured_processes_and_leaves_none(delayed):
    for reports in delayed:
        assert [report.rank for report in reports] == [0, 1]
        assert {report.distributed_type for report in reports} == {"MULTI_CPU"}
        assert all(len(report.step_starts) == 9 for report in reports)
    assert no_children()


def test_each_parameter_all_reduce_and_barrier_waits_what_the_link_asks(delayed):
    for report in delayed[2]:
        calls = len(report.parameter_allreduces) + len(report.barrier_steps)
        assert calls == 3 * 26  # 2 averages and the one on exit; a barrier and 25 tensors each
        assert report.link_seconds == pytest.approx(calls * LATENCY_MS / 1000)
        # what was asked, within timing noise: never less, and the typical call hardly more
        assert min(report.parameter_allreduce_seconds) >= LATENCY_MS / 1000
        assert statistics.median(report.parameter_allreduce_seconds) < LATENCY_MS / 1000 + 0.010


def test_data_parallel_pays_the_link_in_its_communication_hook(delayed):
    fast, slow = delayed[0][0], delayed[1][0]
    assert len(slow.gradient_allreduces) == 9 and slow.link_seconds == pytest.approx(9 * LATENCY_MS / 1000)

    # one bucket a step, ready at the end of backward(): nothing hides the 30 ms, in any step
    def steps(report):
        return [later - earlier for earlier, later in zip(report.step_starts, report.step_starts[1:])]

    assert min(steps(slow)) >= LATENCY_MS / 1000
    # and it adds hardly more: the typical step (a median, which one step slowed by other work on
    # the machine does not move) is at most 25 ms longer than the link asks
    added = statistics.median(steps(slow)) - statistics.median(steps(fast))
    assert 1000 * added < LATENCY_MS + 25
    assert link_milliseconds(slow, Link(LATENCY_MS)) == pytest.approx(LATENCY_MS)
    assert predicted_ms_per_step(fast, slow, Link(LATENCY_MS)) == pytest.approx(fast.ms_per_step + LATENCY_MS)


def test_the_crossover_moves_to_a_smaller_k_when_the_link_gets_slower():
    """On a link where latency dominates, Local SGD's 26 calls an average keep K = 8 slower than
    data parallel; with the same latency and a tenth of the bandwidth, K = 8 is faster."""
    links = {
        "fast link": Link(latency_ms=15, megabits_per_s=1000),
        "slow link": Link(latency_ms=15, megabits_per_s=20),
    }
    sweep = link_sweep(links, ks=(8,), steps=9, layers=1)
    on_this_machine = [
        LocalSGDConfig(mode="ddp", steps=9, layers=1),
        LocalSGDConfig(mode="local_sgd", k=8, steps=9, layers=1),
    ]
    runs = launched([*on_this_machine, *sweep.values()])
    fast, slow = link_timings(links, sweep, runs[2:], zip(on_this_machine, runs[:2]))
    assert fast.measured_crossover is None and slow.measured_crossover == (None, 8)
    assert slow.model_crossover < 8 < fast.model_crossover
    assert "no K up to 8" in fast.describe_crossover() and "K = 8 or less" in slow.describe_crossover()
    table = str(link_table([fast, slow]))
    assert "fast link: 1000 Mb/s, 15 ms a call" in table
    figure = plot_link_timings([fast, slow], title="the slower link pays sooner")
    assert isinstance(figure, Figure) and len(figure.axes) == 2


def test_the_measured_crossover_is_where_every_larger_k_is_faster():
    def timing(local):
        return LinkTiming("x", Link(1), (10.0, 10.0), {k: (ms, ms) for k, ms in local.items()}, 5.0)

    assert timing({4: 12, 8: 9, 16: 5}).measured_crossover == (4, 8)
    assert timing({4: 9, 8: 11, 16: 5}).measured_crossover == (8, 16)  # a faster K=4 alone is noise
    assert timing({4: 9, 8: 8}).measured_crossover == (None, 4)
    assert timing({4: 12, 8: 11}).measured_crossover is None


def test_a_failing_process_is_one_sentence_and_leaves_no_process():
    def crash(config, model, train_set):
        raise ValueError("boom in the loop")

    with pytest.raises(RuntimeError, match=r"A training process failed .*ValueError: boom in the loop"):
        launched([LocalSGDConfig(mode="ddp", steps=2, layers=1)], crash)
    assert no_children()


def test_a_launch_past_its_timeout_stops_every_process():
    def forever(config, model, train_set):
        time.sleep(600)

    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"did not finish within 3 s and were stopped"):
        launched([LocalSGDConfig(mode="ddp", steps=2, layers=1)], forever, timeout=3)
    assert time.monotonic() - started < 60
    assert no_children()


def test_where_the_launcher_runs_the_function_here_the_processes_are_forked(capsys):
    """notebook_launcher calls the function in the notebook's own process on Colab without two GPUs."""
    with measuring([LocalSGDConfig(mode="ddp", steps=3, layers=1)], train, timeout=120) as measured:
        measured()
    assert "the package forks 2 processes instead" in capsys.readouterr().out
    assert [report.distributed_type for report in measured.runs[0]] == ["MULTI_CPU"] * 2
    assert no_children()


def test_a_function_that_wrote_no_report_is_one_sentence():
    with pytest.raises(RuntimeError, match="ended without their reports"):
        with measuring([LocalSGDConfig(mode="ddp", steps=2, layers=1)], train) as measured:

            def something_else():
                pass

            notebook_launcher(something_else, num_processes=2, use_port=measured.port)
    assert no_children()


def test_an_error_before_any_process_starts_is_left_as_it_is():
    with pytest.raises(NameError):
        with measuring([LocalSGDConfig(mode="ddp", steps=2, layers=1)], train) as measured:
            notebook_launcher(measured, num_processes=undefined_name)  # noqa: F821
    assert no_children()
