"""Tests for lesson 4's slow link and its launch with Accelerate's `notebook_launcher`.

The link is simulated (`distributed_runs.Link`): these tests check that it adds what was asked,
where the communication happens, and that Local SGD's crossover with data parallel moves the right
way when the link's bandwidth or latency changes. Every launch starts 2 processes that talk over gloo
on this CPU.
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
    crossover,
    link_seconds_per_step,
    link_sweep,
    link_timings,
    model_crossover_on,
    predicted_seconds_per_step,
)
from effitrain_lessons.local_sgd.saved import train
from effitrain_lessons.shared.distributed_runs import Link, RunConfig, launch, measuring
from effitrain_lessons.shared.timing import Times

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
    assert LocalSGDConfig(latency_ms=2, megabits_per_s=100).link == Link(2, 100)
    assert RunConfig().link == Link() and not hasattr(RunConfig(), "latency_ms")  # lesson 4's alone


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
        LocalSGDConfig(**settings).check()


@pytest.fixture(scope="module")
def delayed():
    """Data parallel and Local SGD (K = 4) on this machine's link and on a 30 ms link."""
    configs = [
        LocalSGDConfig(mode="ddp", steps=9, layers=1),
        LocalSGDConfig(mode="ddp", steps=9, layers=1, latency_ms=LATENCY_MS),
        LocalSGDConfig(mode="local_sgd", k=4, steps=9, layers=1, latency_ms=LATENCY_MS),
    ]
    return launched(configs)


def test_notebook_launcher_says_it_launches_on_cpus_on_a_cpu(capsys):
    """accelerate's notebook_launcher names CUDA when it finds no accelerator; the package's launch
    makes it say what it starts."""
    launched([LocalSGDConfig(mode="ddp", steps=2, layers=1)])
    out = capsys.readouterr().out
    assert "Launching training on 2 CPUs." in out and "CUDA" not in out


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
    assert link_seconds_per_step(slow, Link(LATENCY_MS)) == pytest.approx(LATENCY_MS / 1000)
    assert predicted_seconds_per_step(fast, slow, Link(LATENCY_MS)) == pytest.approx(
        fast.step_times().median + LATENCY_MS / 1000
    )


@pytest.fixture(scope="module")
def counted():
    """Data parallel and Local SGD at K = 8 on this machine's own link: the calls a step and an
    average make, which the model's crossover reads (they do not depend on the link)."""
    ddp, local = launch(
        [LocalSGDConfig(mode="ddp", steps=9, layers=1), LocalSGDConfig(k=8, steps=9, layers=1)],
        train,
        num_processes=2,
    )
    return ddp[0], local[0]


def test_the_models_crossover_falls_with_bandwidth_and_rises_with_latency(counted):
    """K* = (26 alpha + B / beta) / (alpha + B / beta): an average is a barrier and 25 tensors, a step
    of data parallel one bucket, both of the model's B bytes."""
    ddp, local = counted
    size = sum(size for _step, size in ddp.gradient_allreduces) // len(ddp.gradient_allreduces)
    assert [len(calls) for calls in local.calls_by_synchronization().values()] == [26]
    for link in (Link(2, 60), Link(2, 20), Link(7, 60), Link(10, 12)):
        carry = size * 8 / (link.megabits_per_s * 1e6)
        expected = (26 * link.latency_ms / 1000 + carry) / (link.latency_ms / 1000 + carry)
        assert crossover(local, ddp, link) == pytest.approx(expected)
    assert (
        crossover(local, ddp, Link(2, 20))
        < crossover(local, ddp, Link(2, 60))
        < crossover(local, ddp, Link(7, 60))
    )
    assert crossover(local, ddp, Link(5, 0)) == pytest.approx(26)  # latency alone: the calls' ratio
    assert crossover(local, ddp, Link(0, 10)) == pytest.approx(1)  # bandwidth alone: any K pays


def test_on_a_latency_bound_link_k8_is_slower_and_on_a_bandwidth_bound_one_faster():
    """Measured, with margins far larger than a busy machine's noise: 15 ms a call at 1000 Mb/s makes
    an average of 26 calls cost more than 8 steps of data parallel; at 20 Mb/s the bytes dominate."""
    links = {
        "fast link": Link(latency_ms=15, megabits_per_s=1000),
        "slow link": Link(latency_ms=15, megabits_per_s=20),
    }
    sweep = link_sweep(links, ks=(8,), layers=1)
    on_this_machine = [
        LocalSGDConfig(mode="ddp", steps=9, layers=1),
        LocalSGDConfig(mode="local_sgd", k=8, steps=19, layers=1),
    ]
    runs = launched([*on_this_machine, *sweep.values()])
    fast, slow = link_timings(links, sweep, runs[2:], zip(on_this_machine, runs[:2]))
    assert fast.measured_crossover is None and slow.measured_crossover == (None, 8)
    assert slow.model_crossover < 8 < fast.model_crossover
    assert "not clearly faster at any K up to 8" == fast.describe_crossover()
    assert "clearly faster from K = 8" == slow.describe_crossover()
    assert fast.against_data_parallel(8).low > 1 and slow.against_data_parallel(8).high < 1
    table = str(link_table([fast, slow]))
    assert "fast link: 1000 Mb/s, 15 ms a call" in table
    figure = plot_link_timings([fast, slow], title="the slower link pays sooner")
    assert isinstance(figure, Figure) and len(figure.axes) == 2


def test_the_exercises_links_cross_where_the_model_says():
    """Lesson 4's exercise, by the model on the calls counted: link D (10 ms, 12 Mb/s) has K* = 2.14,
    so from K = 3; link E (2 ms, 10 Mb/s) K* = 1.20, so from K = 2; link C (7 ms, 60 Mb/s) K* = 4.58,
    so from K = 5. K* by hand: 314,120 bytes a synchronization, 26 calls an average, 1 a step."""
    assert model_crossover_on(Link(latency_ms=10, megabits_per_s=12), layers=1, batch_size=4) == 3
    assert model_crossover_on(Link(latency_ms=2, megabits_per_s=10), layers=1, batch_size=4) == 2
    assert model_crossover_on(Link(latency_ms=7, megabits_per_s=60), layers=1, batch_size=4) == 5
    by_hand = {(10, 12): 3, (2, 10): 2, (7, 60): 5}
    for (latency, megabits), k in by_hand.items():
        carry = 314_120 * 8 / (megabits * 1e6) * 1000  # ms
        assert math.floor((26 * latency + carry) / (latency + carry)) + 1 == k


def _times(ms: float) -> Times:
    return Times((ms / 1000,) * 3, (ms / 1000,) * 3, "wall")


def test_the_measured_crossover_is_where_every_larger_k_is_clearly_faster():
    def timing(local):
        steps = {k: (_times(ms), ms / 1000) for k, ms in local.items()}
        return LinkTiming("x", Link(1), _times(10), 0.010, steps, 5.0)

    assert timing({4: 12, 8: 9, 16: 5}).measured_crossover == (4, 8)
    assert timing({4: 9, 8: 11, 16: 5}).measured_crossover == (8, 16)  # a faster K=4 alone is noise
    assert timing({4: 9, 8: 8}).measured_crossover == (None, 4)
    assert timing({4: 12, 8: 11}).measured_crossover is None
    # a spread that reaches data parallel's time is not clearly faster
    spread = LinkTiming(
        "x",
        Link(1),
        _times(10),
        0.010,
        {4: (Times((0.008, 0.009, 0.013), (0.008, 0.009, 0.013), "wall"), 0.009)},
        5.0,
    )
    assert spread.measured_crossover is None


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
