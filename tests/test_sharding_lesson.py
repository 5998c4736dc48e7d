"""Lesson 9's measuring (`sharding.measure`, `sharding.figures`) and what it stands on
(`shared.memory.LiveStorages`, `shared.processes.write_to_log`).

The setups are the lesson's own cells, written here again: data parallel with DDP, ZeRO-1 with
`ZeroRedundancyOptimizer`, ZeRO-2 and ZeRO-3 with `fully_shard`, checkpointing, a DCP save and load.
They run on a 2-block tiny BERT in processes forked by Accelerate's `notebook_launcher`, as the lesson
launches them (gloo on the CPU, 2 processes, 3 for the checkpoint's load). Two blocks, not one: with a
single block, checkpointing recomputes in backward everything it did not keep, and the peak cannot
fall.
"""

import logging
import sys
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import psutil
import pytest
import torch
import torch.distributed.checkpoint as dcp
from accelerate import notebook_launcher
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel
from torch.testing._internal.two_tensor import TwoTensor

from effitrain_lessons.sharding.figures import plot_per_process
from effitrain_lessons.sharding.measure import (
    Sharded,
    StepCounts,
    launching_setups,
    reloaded,
    ring_share,
    state_table,
)
from effitrain_lessons.shared.data import tokenized_mrpc
from effitrain_lessons.shared.distributed_runs import Link
from effitrain_lessons.shared.memory import LiveStorages, plain_tensors
from effitrain_lessons.shared.models import tiny_bert
from effitrain_lessons.shared.processes import can_fork, start_workers
from effitrain_lessons.shared.tables import format_bytes

needs_fork = pytest.mark.skipif(not can_fork(), reason="the processes are forked (Linux, macOS)")

COLUMNS = ("input_ids", "token_type_ids", "attention_mask", "labels")
ROWS = 8  # 4 a process
BLOCKS = 2


def rows_of(split: str) -> dict:
    rows = tokenized_mrpc()[split][:ROWS]
    return {name: rows[name] for name in COLUMNS}


def build_model():
    torch.manual_seed(0)
    return tiny_bert(dropout=False, num_hidden_layers=BLOCKS)


def whole_model() -> tuple[int, int, int]:
    """(parameters, fp32 bytes of them, tensors) of the model every setup starts from."""
    model = build_model()
    count = sum(p.numel() for p in model.parameters())
    return count, 4 * count, len(list(model.parameters()))


def no_children() -> bool:
    return psutil.Process().children(recursive=True) == []


# The lesson's setups, as its cells write them


def data_parallel(model):
    model = DistributedDataParallel(model, gradient_as_bucket_view=True)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def zero1(model):
    model = DistributedDataParallel(model, gradient_as_bucket_view=True)
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    return model, optimizer


def fsdp(reshard_after_forward):
    def setup(model):
        for block in model.bert.encoder.layer:
            fully_shard(block, reshard_after_forward=reshard_after_forward)
        fully_shard(model, reshard_after_forward=reshard_after_forward)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

    return setup


def checkpointed(setup):
    def with_checkpointing(model):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return setup(model)

    return with_checkpointing


SETUPS = {
    "data parallel": data_parallel,
    "ZeRO-1": zero1,
    "ZeRO-2": fsdp(reshard_after_forward=False),
    "ZeRO-3": fsdp(reshard_after_forward=True),
    "checkpointing": checkpointed(data_parallel),
    "ZeRO-3 + checkpointing": checkpointed(fsdp(reshard_after_forward=True)),
}
UNITS = BLOCKS + 1  # each block, then the root (embeddings, pooler, classifier)


def launched(setups, num_processes=2, **options):
    with launching_setups(setups, build_model, rows_of("train"), timeout=120, **options) as measured:
        notebook_launcher(measured, num_processes=num_processes, use_port=measured.port)
    return measured.results


@pytest.fixture(scope="module")
def results() -> Sharded:
    return launched(SETUPS, steps=2)


# ---------------------------------------------------------------------------------------------
# LiveStorages: what an op makes, until it is freed


def test_a_new_storage_counts_until_it_is_freed_and_a_view_adds_nothing():
    with LiveStorages([]) as live:
        made = torch.ones(1000)
        assert live.now == live.peak == 4000
        views = (made.view(10, 100), made[1:], made.t())
        assert live.now == 4000  # views share the storage
        del made, views
        small = torch.zeros(())  # the next op sees the storage gone
        assert (live.now, live.peak) == (small.element_size(), 4000)


def test_a_storage_resized_in_place_counts_at_its_size_now():
    original = torch.UntypedStorage.resize_
    with LiveStorages([]) as live:
        storage = torch.ones(1000).untyped_storage()
        storage.resize_(0)  # as FSDP2 frees a whole parameter
        assert (live.now, live.peak) == (0, 4000)
        storage.resize_(8000)  # and refills it, larger here
        assert (live.now, live.peak) == (8000, 8000)
    assert torch.UntypedStorage.resize_ is original  # put back on leaving


def test_tensors_given_before_are_never_counted_nor_their_views():
    held = torch.ones(1000)
    wrapped = TwoTensor(torch.ones(10), torch.ones(10))
    with LiveStorages([held, wrapped]) as live:
        held.add_(1)
        held.view(10, 100).mul_(2)
        wrapped.add_(1)
        assert live.now == 0
        torch.ones(10).add_(1)
        assert live.peak == 40


def test_a_storage_made_where_a_freed_before_tensor_was_is_counted():
    missed = 0
    for _ in range(5):
        gone = torch.ones(1000)
        live = LiveStorages([gone])
        del gone
        with live:
            made = torch.ones(1000)  # noqa: F841
        missed += live.now != 4000
    assert missed == 0


def test_a_wrapper_tensor_counts_by_the_tensors_it_wraps():
    first, second = torch.ones(10), torch.zeros(10)
    found = plain_tensors({"pair": TwoTensor(first, second), "plain": [first], "other": 3})
    assert [t is first for t in found] == [True, False, True] and found[1] is second
    with LiveStorages([]) as live:
        doubled = TwoTensor(first, second) * 2  # two new inner tensors, no storage of its own
        assert live.now == 2 * 40
    assert len(plain_tensors(doubled)) == 2


def _dtensor_counts() -> list[dict]:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dist.init_process_group("gloo")
    whole = distribute_tensor(torch.ones(8, 4), init_device_mesh("cpu", (2,)), [Shard(0)])
    found = plain_tensors(whole)
    with LiveStorages([]) as live:
        doubled = whole * 2
    return [
        {
            "found": len(found),
            "is_local": found[0].untyped_storage()._cdata == whole.to_local().untyped_storage()._cdata,
            "counted": live.now,
            "local_bytes": doubled.to_local().numel() * 4,
        }
    ]


@needs_fork
def test_a_dtensor_counts_by_its_local_shard():
    for (report,) in start_workers(_dtensor_counts, 2, 60):
        assert report["found"] == 1 and report["is_local"]
        assert report["counted"] == report["local_bytes"] == 4 * 4 * 4  # half of 8 x 4 fp32
    assert no_children()


# ---------------------------------------------------------------------------------------------
# What each process holds


@needs_fork
def test_data_parallel_holds_16_bytes_a_parameter_in_every_process(results):
    _count, weights, tensors = whole_model()
    for counts in results.run("data parallel"):
        # AdamW's two fp32 moments a parameter, and one fp32 step count a tensor
        assert (counts.parameters, counts.gradients, counts.optimizer_state) == (
            weights,
            weights,
            2 * weights + 4 * tensors,
        )
        assert counts.gathered == 0


@needs_fork
@pytest.mark.parametrize("setup", ["ZeRO-2", "ZeRO-3"])
def test_fsdp_holds_exactly_the_local_shards_about_half_in_each(results, setup):
    _count, weights, tensors = whole_model()
    run = results.run(setup)
    assert sum(c.parameters for c in run) == sum(c.gradients for c in run) == weights
    assert sum(c.optimizer_state for c in run) == 2 * weights + 2 * 4 * tensors  # step counts in each
    for counts in run:
        assert counts.parameters == pytest.approx(weights / 2, rel=0.01)
        assert counts.states == pytest.approx(results.most("data parallel") / 2, rel=0.01)


@needs_fork
def test_zero1_splits_only_the_optimizer_state(results):
    _count, weights, _tensors = whole_model()
    run = results.run("ZeRO-1")
    assert all(c.parameters == c.gradients == weights for c in run)
    assert sum(c.optimizer_state for c in run) == results.run("data parallel")[0].optimizer_state
    assert min(c.optimizer_state for c in run) > 0  # both processes own some tensors


@needs_fork
def test_the_optimizer_state_sums_to_one_value_however_it_is_split_or_copied(results):
    sums = {run[0].setup: run[0].optimizer_sum for run in results.runs}
    assert sums["data parallel"] > 0  # counted once, not once a process
    for setup in ("ZeRO-1", "ZeRO-2", "ZeRO-3"):
        assert sums[setup] == pytest.approx(sums["data parallel"], rel=1e-5), setup


@needs_fork
def test_only_zero2_keeps_the_whole_parameters_after_forward(results):
    _count, weights, _tensors = whole_model()
    assert [c.gathered for c in results.run("ZeRO-2")] == [weights, weights]
    assert [c.gathered for c in results.run("ZeRO-3")] == [0, 0]


@needs_fork
def test_every_setup_computes_the_same_losses(results):
    for rank in range(2):
        first = results.run("data parallel")[rank].losses
        assert len(first) == 2 and first[1] < first[0]  # it learns
        for run in results.runs:
            assert run[rank].losses == pytest.approx(first, rel=1e-5), run[0].setup


@needs_fork
@pytest.mark.parametrize(
    "setup, with_checkpointing", [("data parallel", "checkpointing"), ("ZeRO-3", "ZeRO-3 + checkpointing")]
)
def test_checkpointing_lowers_the_peak_and_not_what_is_held_between_steps(results, setup, with_checkpointing):
    plain, both = results.run(setup), results.run(with_checkpointing)
    assert max(c.peak for c in both) < max(c.peak for c in plain)
    assert [c.held_before for c in both] == [c.held_before for c in plain]
    assert all(c.held_before < c.peak for c in plain)


# ---------------------------------------------------------------------------------------------
# What a step communicates


def _calls(results, setup) -> list[tuple[str, int]]:
    return [tuple(call) for call in results.run(setup)[0].calls]


@needs_fork
def test_data_parallel_all_reduces_the_gradients_once_and_broadcasts_the_buffers(results):
    calls = _calls(results, "data parallel")
    kinds = Counter(kind for kind, _bytes in calls)
    assert set(kinds) == {"all-reduce", "broadcast"} and kinds["all-reduce"] == 1
    (reduced,) = [nbytes for kind, nbytes in calls if kind == "all-reduce"]
    assert reduced == results.run("data parallel")[0].gradients  # one bucket: the gradients' view
    buffers = sum(b.numel() * b.element_size() for b in build_model().buffers())
    assert ("broadcast", buffers) in calls  # BERT's position and token type ids, at each forward


@needs_fork
def test_zero3_gathers_each_unit_twice_and_zero2_once_both_reduce_scatter_it_once(results):
    _count, weights, _tensors = whole_model()
    for setup, gathers in (("ZeRO-2", 1), ("ZeRO-3", 2), ("ZeRO-3 + checkpointing", 2)):
        calls = _calls(results, setup)
        assert Counter(kind for kind, _b in calls) == {"all-gather": gathers * UNITS, "reduce-scatter": UNITS}
        gathered = sum(nbytes for kind, nbytes in calls if kind == "all-gather")
        scattered = sum(nbytes for kind, nbytes in calls if kind == "reduce-scatter")
        assert scattered == gathered / gathers  # the same units, each gathered `gathers` times
        assert weights <= scattered <= 1.01 * weights  # the whole model, padded to an even split


@pytest.mark.parametrize(
    "kind, n, share",
    [
        ("all-reduce", 2, 1.0),
        ("all-reduce", 4, 1.5),
        ("all-gather", 4, 0.75),
        ("reduce-scatter", 2, 0.5),
        ("broadcast", 8, 0.875),
    ],
)
def test_in_a_ring_each_process_sends_its_share(kind, n, share):
    assert ring_share(kind, n) == pytest.approx(share)


def test_a_links_time_is_computed_from_the_calls():
    calls = [["all-reduce", 1_000_000], ["all-gather", 500_000]]
    sharded = Sharded([[StepCounts("made up", 0, 2, calls=calls), StepCounts("made up", 1, 2)]])
    table = sharded.communication({"slow": Link(latency_ms=2, megabits_per_s=8), "own": Link()})
    # all-reduce: 2 x 1/2 x 1 MB = 1 MB at 8 Mb/s, 1 s; all-gather: 1/2 x 0.5 MB, 0.25 s; 2 ms each
    assert list(table.rows[0]) == [
        "made up",
        2,
        "1 all-reduce, 1 all-gather",
        2,
        "1.19 MiB",  # 1.25 MB
        "1254 ms",
        "0 ms",
    ]
    assert "slow" in table.columns[-2] and "own" in table.columns[-1]
    assert "link slow: 8 Mb/s, 2 ms a call" in str(table)


@needs_fork
def test_the_communication_table_reads_process_0s_calls(results):
    link = Link(latency_ms=2, megabits_per_s=60)
    table = results.communication({"A": link})
    rows = {row[0]: row for row in table.rows}
    assert len(rows) == len(SETUPS)
    calls = _calls(results, "ZeRO-3")
    seconds = sum(link.seconds(nbytes / 2) for _kind, nbytes in calls)  # all gathers and scatters: 1/2
    assert rows["ZeRO-3"][2:4] == ("6 all-gather, 3 reduce-scatter", 9)
    assert rows["ZeRO-3"][-1] == f"{1000 * seconds:.0f} ms"


# ---------------------------------------------------------------------------------------------
# A sharded checkpoint: saved by 2 processes, loaded by 3


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dcp")

    def save(model, optimizer):
        model_state, optimizer_state = get_state_dict(model, optimizer)
        dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)

    def load(model, optimizer):
        model_state, optimizer_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])

    zero3 = {"ZeRO-3": fsdp(reshard_after_forward=True)}
    probe = rows_of("validation")
    saved = launched(zero3, 2, steps=2, probe=probe, after=save)
    loaded = launched(zero3, 3, steps=0, probe=probe, before=load)
    return saved, loaded


@needs_fork
def test_a_checkpoint_saved_by_2_and_loaded_by_3_scores_and_holds_the_same(checkpoint):
    saved, loaded = checkpoint
    before, after = saved.run("ZeRO-3"), loaded.run("ZeRO-3")
    assert len(before) == 2 and len(after) == 3
    probe_losses = {c.probe_loss for c in before}
    assert len(probe_losses) == 1 and None not in probe_losses  # every process scores the same batch
    assert [c.probe_loss for c in after] == pytest.approx([before[0].probe_loss] * 3, rel=1e-6)
    with torch.no_grad():  # a fresh model scores otherwise: the loaded one is the trained one
        fresh = build_model()(**rows_of("validation")).loss.item()
    assert before[0].probe_loss != pytest.approx(fresh, rel=1e-4)
    assert [c.optimizer_sum for c in after] == pytest.approx([before[0].optimizer_sum] * 3, rel=1e-6)
    assert before[0].optimizer_sum > 0


@needs_fork
def test_each_of_3_processes_holds_about_a_third(checkpoint):
    _count, weights, tensors = whole_model()
    after = checkpoint[1].run("ZeRO-3")
    assert sum(c.parameters for c in after) == weights
    # each tensor cut into ceil(rows / 3) rows a process: 64 rows go 22, 22, 20
    for counts in after:
        assert counts.parameters == pytest.approx(weights / 3, rel=0.05)
        assert counts.optimizer_state == pytest.approx(2 * counts.parameters + 4 * tensors, rel=0.01)
    assert after[0].parameters == max(c.parameters for c in after) > after[2].parameters


@needs_fork
def test_the_reloaded_table_has_a_row_for_each_process_of_each_launch(checkpoint):
    text = str(reloaded(*checkpoint))
    assert "sum of |AdamW's moments|, all processes" in text
    table = reloaded(*checkpoint)
    assert [row[:2] for row in table.rows] == [
        ("saved", "0 / 2"),
        ("saved", "1 / 2"),
        ("loaded", "0 / 3"),
        ("loaded", "1 / 3"),
        ("loaded", "2 / 3"),
    ]


# ---------------------------------------------------------------------------------------------
# The launch refuses, and fails, in one sentence


@pytest.mark.parametrize("setups", [{}, {"data parallel": "data_parallel"}])
def test_a_launch_needs_a_dict_of_setup_functions(setups):
    with pytest.raises(TypeError, match=r"^Give the launch a dict of setups: a name for each, .*model\.$"):
        launching_setups(setups, build_model, rows_of("train"))


def _broken(model):
    raise ValueError("this setup breaks on purpose")


@needs_fork
def test_a_setup_that_raises_is_one_sentence_and_no_process_is_left():
    with pytest.raises(RuntimeError, match="A training process failed") as failed:
        launched({"broken": _broken})
    message = str(failed.value)
    assert "ValueError: this setup breaks on purpose" in message and "\n" not in message
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    assert no_children()


# ---------------------------------------------------------------------------------------------
# The figure and the tables


@needs_fork
def test_the_figure_draws_a_panel_per_process_count_and_a_bar_per_process_and_part(results, checkpoint):
    per_process = (results + checkpoint[1]).per_process()
    assert list(per_process) == [2, 3] and list(per_process[2]) == list(SETUPS)
    fig = plot_per_process(per_process, title="what each process holds")
    assert len(fig.axes) == 2
    bars = [p for ax in fig.axes for p in ax.patches]
    for part in ("parameters", "gradients", "optimizer_state"):
        drawn = [bar.get_height() * 2**20 for bar in bars if bar.get_gid() == part]
        measured = [b for count in (2, 3) for parts in per_process[count].values() for b in parts[part]]
        assert drawn == pytest.approx(measured)  # 2 bars a setup, then 3 for the load
    # the whole parameters ZeRO-2 still holds after forward: one bar of its own, beside its two
    gathered = [bar for bar in bars if bar.get_gid() == "gathered"]
    assert [bar.get_height() * 2**20 for bar in gathered] == pytest.approx(
        [max(per_process[2]["ZeRO-2"]["gathered"])]
    )
    assert all(bar.get_y() == 0 for bar in gathered)  # another moment: not stacked on the others
    assert fig._suptitle.get_text() == "what each process holds"


@pytest.mark.parametrize("nothing", [{}, {2: {}}])
def test_the_figure_refuses_nothing_measured(nothing):
    with pytest.raises(ValueError, match="plot_per_process needs what a launch measured"):
        plot_per_process(nothing)


@needs_fork
def test_the_holding_table_has_a_row_for_each_setup_and_process_count(results, checkpoint):
    table = (results + checkpoint[1]).holding()
    text = str(table)
    for column in table.columns:
        assert column in text
    assert [row[:2] for row in table.rows] == [(name, 2) for name in SETUPS] + [("ZeRO-3", 3)]
    share = {row[0]: row[table.columns.index("share of data parallel")] for row in table.rows[:-1]}
    assert (share["data parallel"], share["ZeRO-1"], share["ZeRO-3"]) == ("100%", "75%", "50%")


@needs_fork
def test_the_peaks_table_has_a_row_for_each_setup(results):
    table = results.peaks()
    assert list(table.columns) == [
        "setup",
        "processes",
        "held between steps",
        "peak during a step",
        "peak below the first row's",
    ]
    assert [row[0] for row in table.rows] == list(SETUPS)
    first = max(c.peak for c in results.runs[0])
    below = [first - max(c.peak for c in run) for run in results.runs[1:]]
    assert [row[4] for row in table.rows] == ["-", *[format_bytes(b) for b in below]]
    assert "The peak of a step, in the busiest process" in str(table)


def test_the_state_table_gives_16_bytes_a_parameter_after_an_adamw_step():
    model = build_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(**rows_of("train")).loss.backward()
    optimizer.step()
    table = state_table(model, optimizer)
    count, _weights, _tensors = whole_model()
    assert f"{count:,} parameters" in str(table)
    assert [(row[0], row[2]) for row in table.rows] == [
        ("parameters", "4.00"),
        ("gradients", "4.00"),
        ("optimizer state", "8.00"),
        ("together", "16.00"),
    ]


# ---------------------------------------------------------------------------------------------
# A worker's output goes to its log


def _warn_and_read_the_log() -> list[dict]:
    import os

    import transformers

    transformers.logging.get_logger("transformers").warning("a warning from the worker")
    os.write(2, b"written on descriptor 2\n")  # as torch's C++ warnings are
    print("printed by the worker")
    sys.stderr.flush()
    return [{"log": Path(sys.stderr.name).read_text(encoding="utf-8")}]


@needs_fork
def test_a_workers_warnings_go_to_its_log_not_under_the_cell(capfd, monkeypatch):
    # as in a notebook, transformers' handler writes to the stream the notebook shows
    # (here it holds the file pytest captured at import, which a worker's warning would bypass anyway)
    import transformers

    logger = transformers.logging.get_logger("transformers")  # which gives it its handler
    (handler,) = [h for h in logger.handlers if type(h) is logging.StreamHandler]
    monkeypatch.setattr(handler, "stream", sys.stderr)
    monkeypatch.setattr(logger, "level", logging.WARNING)
    reports = start_workers(_warn_and_read_the_log, 2, 60)
    for (report,) in reports:
        for line in ("a warning from the worker", "written on descriptor 2", "printed by the worker"):
            assert line in report["log"]
    out, err = capfd.readouterr()
    assert "worker" not in err and "descriptor 2" not in err and "worker" not in out
