"""The benchmark suite's own logic: the formulas, the regression report, the Run All harness.

The benchmarks themselves run with `make bench`; here only what decides their verdicts is tested.
"""

import importlib
import json
import sys
from pathlib import Path

import nbformat
import pytest

from effitrain_lessons.lessons import LESSONS

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield {name: importlib.import_module(name) for name in ("run", "techniques", "lessons", "grading")}
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_korthikanti_formula_matches_the_paper(bench):
    techniques = bench["techniques"]
    # GPT-3-like layer from the paper's table: s=2048, b=1, h=12288, a=96 -> sbh(34 + 5as/h).
    s, b, h, a = 2048, 1, 12288, 96
    assert techniques.korthikanti_layer_bytes(s, b, h, a) == round(s * b * h * (34 + 5 * a * s / h))
    assert techniques.korthikanti_layer_bytes(32, 8, 64, 4) == 32 * 8 * 64 * 44
    assert techniques.korthikanti_checkpointed_layer_bytes(128, 8, 768) == 2 * 128 * 8 * 768


def test_regressions_name_every_figure_that_moved_more_than_20_percent(bench):
    run = bench["run"]
    old = {"a": 10.0, "b": 10.0, "c": 10.0, "gone": 1.0, "zero": 0.0}
    new = {"a": 12.0, "b": 12.5, "c": 7.0, "new": 3.0, "zero": 0.0}
    moved = {m["figure"]: m["change"] for m in run.regressions(old, new)}
    assert set(moved) == {"b", "c"}  # +20 % exactly is not "more than 20 %"
    assert moved["b"] == pytest.approx(0.25) and moved["c"] == pytest.approx(-0.3)


def test_report_states_goals_and_moved_figures(bench):
    run = bench["run"]
    lesson = {
        "lesson": "04_local_sgd",
        "edition": "learner",
        "run_all_s": 61.0,
        "first_output_s": 2.0,
        "kernel_peak_rss": 600 * 2**20,
        "children_peak_rss": 0,
        "tree_peak_pss": 700 * 2**20,
        "runs": [{"run_all_s": 61.0}],
    }
    fast = dict(lesson, lesson="00_start_here", run_all_s=5.0, runs=[{"run_all_s": 5.0}])
    results = {
        "date": "2026-11-30",
        "seconds": 100.0,
        "machine": {
            "cpu": "x",
            "cores": 2,
            "memory_gib": 24,
            "python": "3.11",
            "torch": "2.13.0",
            "transformers": "5",
            "cuda": False,
        },
        "lessons": [lesson, fast],
        "lessons_total_s": {"learner": 66.0},
        "previous": "2026-11-29",
        "moved": [{"figure": "f", "before": 1.0, "after": 2.0, "change": 1.0}],
    }
    text = run.markdown(results)
    assert (
        "| 04_local_sgd | learner | 61.0 |" in text
        and "**misses**" in text.split("04_local_sgd")[1].split("\n")[0]
    )
    assert "meets" in text.split("00_start_here")[1].split("\n")[0]
    assert f"66.0 s (meets the {run.GOAL_TOTAL_S:.0f} s goal)" in text
    assert run.GOAL_TOTAL_S == 35 * len(LESSONS)  # 35 s a lesson on average
    assert "| f | 1 | 2 | +100% |" in text


def test_run_all_times_and_weighs_a_notebook(bench, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("print('first')"),
        nbformat.v4.new_code_cell('block = b"x" * (300 * 2**20); import time; time.sleep(1.5)'),
    ]
    path = tmp_path / "probe.ipynb"
    nbformat.write(notebook, path)
    result = bench["lessons"].run_all(path)
    assert result["kernel_peak_rss"] > 300 * 2**20  # the 300 MiB block was seen by getrusage
    assert result["tree_peak_pss"] > 300 * 2**20  # and by the sampler
    assert 1.5 < result["run_all_s"] < 60
    assert 0 < result["first_output_s"]
    json.dumps(result)  # what RESULTS.json stores


def test_run_all_reports_a_cell_that_raises(bench, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("raise ValueError('broken lesson')")]
    path = tmp_path / "broken.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(Exception, match="broken lesson"):
        bench["lessons"].run_all(path)


def test_the_benchmark_class_has_every_kind_of_submission(bench, tmp_path):
    grading = bench["grading"]
    from effitrain_lessons.course.lessons import lesson_names, load_lesson

    kinds = grading.make_class(tmp_path, learners=4)
    assert sorted(set(kinds.values())) == sorted(grading.KINDS) and len(kinds) == 4 * len(
        lesson_names()
    ) == 4 * len(LESSONS)
    lesson = load_lesson("01_checkpointing_first_principles")
    solutions = {cell.id: cell.source for cell in lesson.cells if cell.answer_for}

    def answers(kind):
        notebook = grading.submission(lesson.name, kind)
        return {c["id"]: "".join(c["source"]) for c in notebook["cells"] if c["id"] in solutions}

    assert answers("solved") == solutions
    partly = answers("partly solved")
    assert [partly[i] == solutions[i] for i in solutions] == [True, False, False]
    assert all(source in grading.BROKEN for source in answers("broken").values())
    assert all(source != solutions[i] for i, source in answers("blank").items())


def test_report_states_the_grading_goals(bench):
    run = bench["run"]
    grading = {
        "notebooks": 150,
        "learners": 30,
        "class_s": 1300.0,
        "per_notebook_s": 8.7,
        "statuses": {"graded": 150},
        "lesson_mean_s": {"00_start_here": 2.0},
        "share_of_points": {"solved": 1.0},
        "one_lesson01_s": 9.0,
        "one_lesson01_runs": [9.0, 9.1, 8.9],
        "long_cell_s": 15.5,
        "long_cell_runs": [15.5, 15.4, 15.6],
        "long_cell_flags": ["q_checkpoint_block: runs shell commands (!)"],
        "peak_memory_mb": 600.0,
    }
    results = {
        "date": "2026-11-30",
        "seconds": 100.0,
        "machine": {
            "cpu": "x",
            "cores": 2,
            "memory_gib": 24,
            "python": "3.11",
            "torch": "2.13.0",
            "transformers": "5",
            "cuda": False,
        },
        "grading": grading,
        "previous": None,
        "moved": [],
    }
    text = run.markdown(results)
    assert "**21.7 min**" in text and "**misses** the 20-minute goal" in text
    assert "**9.0 s**" in text and "meets the 15 s goal" in text
    assert "**15.5 s**" in text and "+6.5 s (**misses** the +5 s goal)" in text
    assert "flags: q_checkpoint_block: runs shell commands (!)." in text
    assert run.figures(results)["grading class_s"] == 1300.0


def test_report_has_lesson_5s_table_and_compares_its_figures(bench):
    run = bench["run"]
    row = {
        "run": "DiLoCo, H=8",
        "steps": 128,
        "synchronizations": 16,
        "expected": 16,
        "allreduce_calls": 16,
        "calls_per_sync": 1.0,
        "megabytes": 5.03,
        "kilobytes_per_sync": 314.1,
        "ms_per_sync": float("nan"),
        "ms_per_step": 21.2,
        "eval_loss": 0.6627,
        "seconds": 2.7,
        "bytes_per_step_vs_dp": 0.125,
    }
    text = run.markdown(
        {
            "date": "2026-12-02",
            "seconds": 1.0,
            "machine": {
                "cpu": "x",
                "cores": 2,
                "memory_gib": 24,
                "python": "3.11",
                "torch": "2.13.0",
                "transformers": "5",
                "cuda": False,
            },
            "diloco": [row],
        }
    )
    assert "### DiLoCo against Local SGD and data parallel" in text
    assert "| DiLoCo, H=8 | 128 | 16 | 16 | 16 | 1 | 5.03 | 0.1250 | - | 21.2 | 0.6627 |" in text
    assert run.figures({"diloco": [row]})["lesson 5 DiLoCo, H=8 (128 steps) allreduce_calls"] == 16


def test_report_has_the_planners_table_and_merges_kept_parts(bench):
    results = {
        "date": "2026-12-02",
        "seconds": 60.0,
        "machine": {
            "cpu": "x",
            "cores": 2,
            "memory_gib": 24,
            "cuda": False,
            "python": "3",
            "torch": "2",
            "transformers": "5",
        },
        "plan": [
            {
                "model": "BERT-base shape, 2 layers",
                "b": 4,
                "s": 128,
                "attention": "sdpa",
                "checkpointing": False,
                "activations_measured": 100,
                "activations_estimated": 120,
                "ratio": 1.2,
                "states_measured": 10,
                "states_estimated": 11,
            }
        ],
        "merged": {"rerun": ["plan"], "kept": ["lessons"], "kept_from": "2026-11-30", "seconds_kept": 1.0},
        "previous": None,
        "moved": [],
    }
    report = bench["run"].markdown(results)
    assert "## 5. The planner" in report and "## 6. Against the previous results" in report
    assert "| 1.200 | **no** |" in report and "11 B **differs**" in report
    assert "Parts kept from the run of 2026-11-30: lessons." in report
    assert "plan BERT-base shape, 2 layers s=128 b=4 sdpa checkpointing False ratio" in bench["run"].figures(
        results
    )


def test_report_shows_the_sharding_rows_measured_against_planned(bench):
    row = {"model": "GPT-2 small shape, 2 layers, h=256", "gpus": 4, "sharding": "zero3"}
    for line, (measured, planned) in {
        "parameters": (100, 100),
        "gradients": (100, 100),
        "optimizer_state": (200, 240),
    }.items():
        row.update(
            {f"{line}_measured": measured, f"{line}_planned": planned, f"{line}_ratio": planned / measured}
        )
    row.update(gathered_measured=0, gathered_planned=0)
    text = "\n".join(bench["run"].sharding_table([row]))
    assert "### Sharded: the planner per GPU against real processes" in text
    assert "| 4 | zero3 |" in text and "1.000 1.000 1.200 | **no** |" in text
    figures = bench["run"].figures({"sharding": [row]})
    assert figures["sharding GPT-2 small shape, 2 layers, h=256 4 GPUs zero3 optimizer_state ratio"] == 1.2
