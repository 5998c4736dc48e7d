"""Lesson 6's planner figures: the stacked bars of estimates against a GPU's line, and the explorer."""

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.patches import Rectangle

from effitrain_lessons.will_it_fit import figures as plan_figures
from effitrain_lessons.will_it_fit import plan

GiB = 2**30


def _bars(figure):
    return [p for p in figure.axes[0].patches if isinstance(p, Rectangle) and p.get_gid() == "memory-line"]


def test_each_bar_is_its_estimates_lines_end_to_end_against_the_gpus_line():
    estimates = [
        plan.estimate("bert-base-uncased", batch=32, seq=512, attention=a) for a in ("eager", "sdpa")
    ]
    figure = plan_figures.plot_memory_estimates(estimates, ["eager", "sdpa"], gpu="T4")
    bars = _bars(figure)
    assert len(bars) == sum(len(e.lines) for e in estimates)
    at = 0
    for row, estimate in enumerate(estimates):
        left = 0.0
        for line in estimate.lines:
            bar = bars[at]
            assert bar.get_width() == pytest.approx(line.nbytes / GiB) and bar.get_x() == pytest.approx(left)
            assert bar.get_y() + bar.get_height() / 2 == pytest.approx(row)
            # the allowance is hatched: stated, not modelled
            assert (bar.get_hatch() == "//") == (not line.modelled)
            left += line.nbytes / GiB
            at += 1
        assert left == pytest.approx(estimate.total / GiB)
    [limit] = [line for line in figure.axes[0].lines if line.get_gid() == "gpu-memory"]
    assert limit.get_xdata()[0] == pytest.approx(plan.GPUS["T4"] / GiB)
    totals = {t.get_text(): t.get_color() for t in figure.axes[0].texts}
    assert totals["23.76 GiB"] == "#cf222e" and totals["12.63 GiB"] == "#333333"  # over the T4 in red
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["eager", "sdpa"]


def test_the_bars_refuse_nothing_to_draw_and_a_label_count_that_does_not_match():
    with pytest.raises(ValueError, match="needs at least one estimate"):
        plan_figures.plot_memory_estimates([])
    with pytest.raises(ValueError, match="has 1 estimates and 2 labels: give one label each"):
        plan_figures.plot_memory_estimates([plan.estimate("gpt2")], ["a", "b"])


def test_the_explorer_redraws_at_every_change_and_says_the_verdict(shown):
    box = plan_figures.plan_explorer("bert-base-uncased", gpu="T4", batch=32, seq=512, attention="eager")
    first_row, second_row, third_row, status = box.children
    model, gpu, batch, seq = first_row.children
    precision, attention, checkpointing = second_row.children
    gpus, sharding = third_row.children
    assert [kind for kind, _ in shown] == ["display", "display"] and shown[1][1] is box
    assert (
        status.value
        == plan.verdict("bert-base-uncased", "T4", batch=32, seq=512, attention="eager").sentence()
    )
    assert status.value.startswith("T4: does not fit")
    gpu.value = "A100-80GB"
    assert shown[-1][0] == "update" and status.value.startswith("A100-80GB: fits")
    largest = plan.largest_micro_batch("bert-base-uncased", "A100-80GB", seq=512, attention="eager")
    assert f"the largest micro-batch that fits is {largest}." in status.value
    labels = [t.get_text() for t in shown[-1][1].axes[0].get_yticklabels()]
    assert labels[1].replace("\n", " ") == f"the largest micro-batch that fits: {largest}"
    gpu.value, checkpointing.value = "T4", True
    assert status.value.startswith("T4: fits") and [kind for kind, _ in shown].count("update") == 3
    assert sorted(model.options) == plan.bundled_models() and list(precision.options) == list(plan.PRECISIONS)
    assert (batch.value, seq.value, attention.value) == (32, 512, "eager")
    # lesson 9's stages: 4 T4s at ZeRO-3, every line per GPU; a stage on one GPU is refused in one line
    checkpointing.value = False
    gpus.value, sharding.value = 4, "zero3"
    per_gpu = plan.verdict(
        "bert-base-uncased", "T4", batch=32, seq=512, attention="eager", gpus=4, sharding="zero3"
    )
    assert status.value == per_gpu.sentence()
    assert shown[-1][1].axes[0].get_title().startswith("bert-base-uncased on 4 x T4, ZeRO-3, fp32")
    updates = [kind for kind, _ in shown].count("update")
    gpus.value = 1
    assert "one GPU has nothing to share" in status.value
    assert [kind for kind, _ in shown].count("update") == updates  # the last figure stays
    assert [label for label, _stage in sharding.options][0] == "no sharding"


def test_one_estimate_against_a_gpu_says_in_its_title_whether_it_fits():
    fits = plan_figures.plot_memory_estimates([plan.estimate("gpt2", batch=2, seq=64)], gpu="T4")
    assert fits.axes[0].get_title() == "gpt2 on T4: fits"
    big = plan.estimate("llama-3.2-1b-shaped", batch=16, seq=2048, precision="bf16")
    over = plan_figures.plot_memory_estimates([big], gpu="h100-80gb")
    assert over.axes[0].get_title() == "llama-3.2-1b-shaped on H100-80GB: does not fit"
    named = plan_figures.plot_memory_estimates([big], gpu="H100-80GB", title="mine")
    assert named.axes[0].get_title() == "mine"
    assert plan_figures.plot_memory_estimates([big]).axes[0].get_title() == (
        "What one training step needs (estimated)"
    )


def test_every_line_the_planner_names_has_its_own_colour_and_legend_entry():
    estimates = [
        plan.estimate("bert-base-uncased", batch=32, seq=512, precision="fp16", device="cuda"),
        plan.estimate("bert-base-uncased", batch=32, seq=512, precision="fp16", master_weights=True),
        plan.estimate("bert-base-uncased", batch=32, seq=512, checkpointing=True),
    ]
    names = {line.name for e in estimates for line in e.lines}
    assert "16-bit weight copies" in names and "fp32 master weights" in names
    assert names <= set(plan_figures.PLAN_COLOURS)
    colours = list(plan_figures.PLAN_COLOURS.values())
    assert len(set(colours)) == len(colours)  # no two lines look alike
    figure = plan_figures.plot_memory_estimates(estimates[:1], ["fp16"], gpu="T4")
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert "16-bit weight copies" in legend and "activations" in legend
