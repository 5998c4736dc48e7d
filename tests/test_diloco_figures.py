"""Lesson 5's figures and widget: the drawing of inner and outer steps, the loss curves with their
outer steps, and the H / outer-lr explorer."""

import io
import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from effitrain_lessons.diloco import figures as diloco_figures
from effitrain_lessons.local_sgd.figures import local_sgd_explorer


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _laid_out(figure: Figure):
    """Draw `figure` on an Agg canvas (as the notebook does) and return its renderer, to measure text."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


def _by_gid(figure: Figure, gid: str) -> list:
    return [artist for artist in figure.findobj() if artist.get_gid() == gid]


def _words(figure: Figure) -> list:
    """Every piece of text the drawing shows: lane names, outer-step names, legend, title."""
    (ax,) = figure.axes
    texts = [*ax.get_yticklabels(), *ax.texts, *figure.legends[0].get_texts(), figure._suptitle]
    return [text for text in texts if text.get_visible() and text.get_text()]


@pytest.fixture
def longer_language(monkeypatch):
    """Every word the module shows about a third longer, as a translation may be."""

    def longer(text):
        return " ".join(word + "xx" * (len(word) > 3) for word in text.split(" "))

    monkeypatch.setattr(diloco_figures, "_", longer)
    monkeypatch.setattr(
        diloco_figures, "phrase", lambda template, **values: longer(template.format(**values))
    )


# --- the drawing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("h, rounds, workers", [(4, 2, 2), (8, 3, 4), (1, 1, 2), (32, 2, 3)])
def test_the_drawing_has_a_lane_per_worker_h_inner_steps_and_an_outer_step_per_round(h, rounds, workers):
    figure = diloco_figures.draw_diloco(h=h, rounds=rounds, workers=workers)
    assert len(_by_gid(figure, "worker-lane")) == workers and len(_by_gid(figure, "global-lane")) == 1
    assert len(_by_gid(figure, "inner-step")) == h * rounds * workers
    outer_steps = _by_gid(figure, "outer-step")
    assert len(outer_steps) == rounds
    span = h + 2  # each outer step sits on the global lane (y = 0), one round after the last
    assert [tuple(line.get_xydata()[0]) for line in outer_steps] == [
        (span * (r + 1), 0.0) for r in range(rounds)
    ]
    labels = [label.get_text().replace("\n", " ") for label in figure.axes[0].get_yticklabels()]
    assert labels[0] == "global parameters θ"
    assert labels[1:] == [f"worker {w}: H = {h} inner steps (AdamW)" for w in range(workers)]
    assert plt.get_fignums() == []  # closed: the notebook shows it once, as the cell's value
    assert _png(figure).startswith(b"\x89PNG")


@pytest.mark.parametrize("words", ["english", "longer"])
def test_the_drawing_words_do_not_overlap_or_leave_the_figure(words, request):
    if words == "longer":
        request.getfixturevalue("longer_language")
    for h, rounds, workers in [(4, 2, 2), (8, 3, 4)]:
        figure = diloco_figures.draw_diloco(h=h, rounds=rounds, workers=workers)
        renderer = _laid_out(figure)
        boxes = [(text.get_text(), text.get_window_extent(renderer)) for text in _words(figure)]
        whole = figure.bbox
        for text, box in boxes:
            assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, (
                text
            )
        for (first, a), (second, b) in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), f"{first!r} overlaps {second!r}"


@pytest.mark.parametrize(
    "arguments, word",
    [
        ({"h": 0}, "h"),
        ({"rounds": 1.5}, "rounds"),
        ({"workers": True}, "workers"),
        ({"workers": 1}, "at least 2"),
    ],
)
def test_the_drawing_refuses_bad_arguments_in_one_sentence(arguments, word):
    with pytest.raises(ValueError, match=word) as error:
        diloco_figures.draw_diloco(**arguments)
    message = str(error.value)
    assert message.endswith(".") and message.count(". ") == 0 and "\n" not in message


# --- the loss curves ----------------------------------------------------------------------------------


def test_the_loss_figure_smooths_each_run_and_ticks_its_outer_steps():
    curves = {
        "data parallel": [3.0 - 0.01 * s for s in range(40)],
        "DiLoCo, H = 8": [3.0 - 0.01 * s + (0.2 if s % 2 else 0.0) for s in range(40)],
        "DiLoCo, H = 16": [2.5] * 33,
    }
    # 48 is past that run's end
    outer = {"DiLoCo, H = 8": [8, 16, 24, 32, 40], "DiLoCo, H = 16": [16, 32, 48]}
    figure = diloco_figures.plot_diloco_losses(curves, outer, title="training loss in process 0")
    (ax,) = figure.axes
    smoothed = _by_gid(figure, "smoothed")
    assert [line.get_label() for line in smoothed] == list(curves)
    assert [len(line.get_xdata()) for line in smoothed] == [40, 40, 33]
    assert list(smoothed[0].get_xdata()) == list(range(1, 41))
    # a trailing mean of 8: step 21 averages steps 14 to 21 (indices 13 to 20), where the
    # alternating 0.2 adds 0.1
    assert smoothed[1].get_ydata()[20] == pytest.approx(3.0 - 0.01 * 16.5 + 0.1)
    assert smoothed[2].get_ydata()[-1] == pytest.approx(2.5)
    ticks = _by_gid(figure, "outer-steps")
    assert [list(line.get_xdata()) for line in ticks] == [[8, 16, 24, 32, 40], [16, 32]]
    assert [line.get_color() for line in ticks] == [smoothed[1].get_color(), smoothed[2].get_color()]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == list(curves)
    assert ax.get_title() == "training loss in process 0" and ax.get_ylabel() == "training loss"
    assert ax.get_xlim()[1] >= 40
    # no loss values beside the ticks
    assert min(ax.get_yticks()) >= min(min(losses) for losses in curves.values()) - 0.5
    assert _png(figure).startswith(b"\x89PNG")


def test_the_loss_figure_without_outer_steps_and_its_errors():
    figure = diloco_figures.plot_diloco_losses({"data parallel": [2.0, 1.5, 1.2]})
    assert len(_by_gid(figure, "smoothed")) == 1 and _by_gid(figure, "outer-steps") == []
    assert _by_gid(figure, "smoothed")[0].get_ydata() == pytest.approx([2.0, 1.75, 4.7 / 3])
    _png(figure)
    with pytest.raises(ValueError, match="at least one run"):
        diloco_figures.plot_diloco_losses({})
    with pytest.raises(ValueError, match="DiLoCo has none"):
        diloco_figures.plot_diloco_losses({"DiLoCo": []})


def test_the_loss_figure_draws_the_plateau_a_run_that_learns_nothing_stays_on():
    curves = {"data parallel": [0.7] * 20 + [0.4] * 20, "DiLoCo, H = 8": [0.66] * 40}
    figure = diloco_figures.plot_diloco_losses(
        curves, {"DiLoCo, H = 8": [8, 16, 24, 32, 40]}, title="a message", baseline=0.641
    )
    (ax,) = figure.axes
    (line,) = _by_gid(figure, "baseline")
    assert list(line.get_ydata()) == [0.641, 0.641]
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == [*curves, "always predicting the label frequencies: 0.64"]
    # the legend sits above the row of ticks, not on it
    renderer = _laid_out(figure)
    legend, ticks = ax.get_legend().get_window_extent(renderer), _by_gid(figure, "outer-steps")[0]
    assert legend.y0 >= ticks.get_window_extent(renderer).y1 - 1


def test_the_loss_figure_in_a_longer_language_renders(longer_language):
    figure = diloco_figures.plot_diloco_losses(
        {"a": [1.0] * 50, "b": [2.0] * 50}, {"a": [10, 20]}, title="training loss in process 0"
    )
    renderer = _laid_out(figure)
    for text in (figure.axes[0].xaxis.label, figure.axes[0].yaxis.label, figure.axes[0].title):
        box = text.get_window_extent(renderer)
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1 and box.y1 <= figure.bbox.y1, (
            text.get_text()
        )


# --- the explorers -------------------------------------------------------------------------------------


def _controls(box):
    row, status = box.children
    return list(row.children), status


def test_the_diloco_explorer_reruns_with_the_sliders_values(shown):
    first, calls = Figure(), []

    def run(h, outer_lr):
        calls.append((h, outer_lr))
        return Figure()

    box = diloco_figures.diloco_explorer(run, first, h=32, outer_lr=0.7)
    (h_slider, lr_slider), status = _controls(box)
    # the figure first, then the widgets
    assert shown[0] == ("display", first) and shown[1] == ("display", box)
    assert (h_slider.description, h_slider.value, list(h_slider.options)) == ("H", 32, [4, 8, 16, 32, 64])
    assert (lr_slider.description, lr_slider.value) == ("outer lr", 0.7)
    assert status.value == "Move H or the outer learning rate to run again." and calls == []
    h_slider.value = 8
    assert calls == [(8, 0.7)] and shown[-1] == ("update", shown[-1][1]) and shown[-1][1] is not first
    assert status.value == "H = 8, outer lr 0.7: measured just now."
    lr_slider.value = 1.0
    assert calls == [(8, 0.7), (8, 1.0)] and status.value == "H = 8, outer lr 1: measured just now."
    assert [kind for kind, _ in shown] == ["display", "display", "update", "update"]


def test_the_diloco_explorer_says_why_a_run_failed_and_keeps_the_figure(shown):
    def run(h, outer_lr):
        raise RuntimeError(f"The launch with H = {h} did not finish in 120 s.")

    box = diloco_figures.diloco_explorer(run, Figure())
    (h_slider, _lr_slider), status = _controls(box)
    h_slider.value = 64
    assert status.value == "The launch with H = 64 did not finish in 120 s."
    assert [kind for kind, _ in shown] == ["display", "display"]  # no new figure in place of the old


def test_the_local_sgd_explorer_keeps_its_controls_and_words(shown):
    calls = []

    def run(k, num_processes):
        calls.append((k, num_processes))
        if num_processes == 4:
            raise ValueError("4 processes need 4 devices.")
        return Figure()

    box = local_sgd_explorer(run, Figure())
    (slider, menu), status = _controls(box)
    assert (slider.description, slider.value, menu.description, menu.value) == ("K", 8, "processes", 2)
    assert status.value == "Move K or change the number of processes to run again."
    menu.value = 3
    assert (
        calls == [(8, 3)]
        and status.value == "K = 8, 3 processes: measured just now."
        and shown[-1][0] == "update"
    )
    slider.value = 16
    menu.value = 4
    assert calls == [(8, 3), (16, 3), (16, 4)] and status.value == "4 processes need 4 devices."


# --- the outer step against the pseudo-gradient, and the bytes against the loss -----------------


def test_the_outer_step_figure_draws_each_runs_ratio_and_the_ceiling():
    from effitrain_lessons.diloco.runs import OuterStep

    stalled = [OuterStep(8, 1.0, 1.33), OuterStep(16, 0.5, 1.5), OuterStep(24, 0.2, 1.2)]
    plain = [OuterStep(8, 1.0, 1.0), OuterStep(16, 0.7, 0.7)]
    figure = diloco_figures.plot_outer_steps(
        {"H = 8: stalls": stalled, "lr 1": plain}, title="a message", ceiling=7.0
    )
    lines = _by_gid(figure, "ratio")
    assert [list(line.get_xdata()) for line in lines] == [[8, 16, 24], [8, 16]]
    assert list(lines[0].get_ydata()) == pytest.approx([1.33, 3.0, 6.0])
    assert list(lines[1].get_ydata()) == pytest.approx([1.0, 1.0])
    (ceiling,) = _by_gid(figure, "ceiling")
    assert list(ceiling.get_ydata()) == [7.0, 7.0]
    assert figure.axes[0].get_ylim()[0] == 0  # the ratio's zero is on the axis: no trend from noise
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["H = 8: stalls", "lr 1", "lr / (1 − momentum) = 7"]
    assert _png(figure).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="at least one run with outer steps"):
        diloco_figures.plot_outer_steps({"data parallel": []})


def test_the_bytes_figure_puts_every_run_on_one_log_plane_with_data_parallel_as_a_band():
    band = {
        "data parallel": [[(0.3, 0.7), (1.2, 0.64), (40.0, 0.41)], [(0.3, 0.68), (1.2, 0.65), (40.0, 0.44)]]
    }
    points = {"DiLoCo, H = 32": [(1.26, 0.426), (1.26, 0.421)], "Local SGD, H = 8": [(5.3, 0.42)]}
    figure = diloco_figures.plot_bytes_against_loss(
        band, points, title="a message", baseline=0.641, target=(0.41, 0.44)
    )
    (ax,) = figure.axes
    assert ax.get_xscale() == "log"
    (area,) = _by_gid(figure, "band")
    low, high = area.get_paths()[0].vertices[:, 1].min(), area.get_paths()[0].vertices[:, 1].max()
    assert (low, high) == pytest.approx((0.41, 0.7))  # between the seeds, from end to start
    runs = _by_gid(figure, "runs")
    assert [list(run.get_ydata()) for run in runs] == [[0.426, 0.421], [0.42]]
    assert len(_by_gid(figure, "target")) == 1 and len(_by_gid(figure, "baseline")) == 1
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels[:3] == ["data parallel", "DiLoCo, H = 32", "Local SGD, H = 8"]
    assert "where data parallel ended: 0.410 to 0.440" in labels
    _laid_out(figure)
    assert [tick.get_text() for tick in ax.get_xticklabels() if tick.get_text()][:2] == ["0.1", "1"]
    with pytest.raises(ValueError, match="a band or at least one run"):
        diloco_figures.plot_bytes_against_loss({}, {})
    with pytest.raises(ValueError, match="no measurements"):
        diloco_figures.plot_bytes_against_loss({"data parallel": [[]]}, {})
