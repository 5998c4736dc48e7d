"""`make bench`: run the benchmark suite and write benchmarks/RESULTS.md and RESULTS.json.

    python benchmarks/run.py                 # everything, Run All three times per lesson edition
    python benchmarks/run.py --repeats 1     # quicker, for a first look
    python benchmarks/run.py --only lessons --lessons 02 --no-write
    python benchmarks/run.py --only plan --merge   # rerun one part, keep the others from RESULTS.json

Before writing, the new figures are compared with the RESULTS.json already there (the committed
one): every figure that moved by more than 20 % is named in the report.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from effitrain_lessons import lessons as manifest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

GOAL_LESSON_S = max(each.budget_s for each in manifest.LESSONS)  # each lesson's own: its budget_s
GOAL_LESSON_BYTES = 1024**3
GOAL_TOTAL_S = 35.0 * len(manifest.LESSONS)  # 35 s a lesson on average
THRESHOLD = 0.20
PARTS = ("lessons", "busy", "techniques", "plan", "startup", "grading")
# The keys of RESULTS.json each part writes (for --merge).
PART_KEYS = {
    "lessons": ("lessons", "lessons_total_s"),
    "busy": ("busy",),
    "techniques": ("activations", "segments", "local_sgd", "diloco"),
    "plan": ("plan", "sharding"),
    "startup": ("imports",),
    "grading": ("grading",),
}
EDITIONS = {"learner": ROOT / "notebooks", "solution": ROOT / "notebooks" / "solutions"}


def machine() -> dict:
    import psutil
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.cuda.is_available(),
    }


def bench_lessons(repeats: int, only: list[str] | None) -> list[dict]:
    from lessons import lessons_to_run, run_all

    rows = []
    for edition, folder in EDITIONS.items():
        for each in lessons_to_run(only):
            path = folder / each.notebook
            runs = []
            for attempt in range(repeats):
                result = run_all(path)
                runs.append(result)
                print(
                    f"  {edition:8} {path.stem:40} run {attempt + 1}: {result['run_all_s']:.1f} s, "
                    f"kernel peak {result['kernel_peak_rss'] / 2**20:.0f} MiB, "
                    f"tree peak {result['tree_peak_pss'] / 2**20:.0f} MiB",
                    flush=True,
                )
            rows.append(
                {
                    "lesson": path.stem,
                    "edition": edition,
                    "runs": runs,
                    "run_all_s": statistics.median(run["run_all_s"] for run in runs),
                    "first_output_s": statistics.median(run["first_output_s"] for run in runs),
                    "kernel_peak_rss": max(run["kernel_peak_rss"] for run in runs),
                    "children_peak_rss": max(run["children_peak_rss"] for run in runs),
                    "tree_peak_pss": max(run["tree_peak_pss"] for run in runs),
                }
            )
    return rows


def figures(results: dict) -> dict[str, float]:
    """Every figure the regression report compares, under a stable name."""
    out: dict[str, float] = {}
    for row in results.get("lessons", []):
        for key in ("run_all_s", "first_output_s", "kernel_peak_rss", "tree_peak_pss"):
            out[f"lesson {row['lesson']} ({row['edition']}) {key}"] = row[key]
    for edition, total in results.get("lessons_total_s", {}).items():
        out[f"all lessons ({edition}) run_all_s"] = total
    busy = results.get("busy")
    if busy:
        for run in ("quiet", "busy"):
            out[f"lesson 02 {run} run_all_s"] = busy[run]["run_all_s"]
            out[f"lesson 02 {run} time ratio"] = busy[run]["ratio"]
    for row in results.get("activations", []):
        for key in (
            "saved_bytes",
            "saved_bytes_checkpointed",
            "layer_bytes",
            "layer_bytes_checkpointed",
            "flops_ratio",
            "time_ratio",
        ):
            out[f"{row['model']} {key}"] = row[key]
    segments = results.get("segments")
    if segments:
        out["deep stack best_k"] = segments["best_k"]
        out["deep stack kept_bytes_best"] = segments["kept_bytes_best"]
    for row in results.get("local_sgd", []):
        for key in ("synchronizations", "allreduce_calls", "megabytes", "seconds"):
            out[f"{row['run']} {key}"] = row[key]
    for row in results.get("diloco", []):
        for key in ("synchronizations", "allreduce_calls", "megabytes", "ms_per_step"):
            out[f"lesson 5 {row['run']} ({row['steps']} steps) {key}"] = row[key]
    for row in results.get("plan", []):
        key = (
            f"plan {row['model']} s={row['s']} b={row['b']} {row['attention']} checkpointing "
            f"{row['checkpointing']}"
        )
        if row.get("precision", "fp32") != "fp32":  # autocast rows (issue 47); fp32 keys as before
            key += f" {row['precision']} autocast"
        out[f"{key} ratio"] = row["ratio"]
    out.update(sharding_figures(results.get("sharding", [])))
    for label, seconds in results.get("imports", {}).items():
        out[f"import {label} s"] = seconds
    grading = results.get("grading")
    if grading:
        out["grading class_s"] = grading["class_s"]
        out["grading one_lesson01_s"] = grading["one_lesson01_s"]
        if "long_cell_s" in grading:
            out["grading long_cell_s"] = grading["long_cell_s"]
        for name, seconds in grading["lesson_mean_s"].items():
            out[f"grading lesson {name} mean_s"] = seconds
    return out


def sharding_figures(rows: list[dict]) -> dict[str, float]:
    """The sharding rows' ratios, planned over measured, under stable names."""
    return {
        f"sharding {row['model']} {row['gpus']} GPUs {row['sharding']} {line} ratio": row[f"{line}_ratio"]
        for row in rows
        for line in ("parameters", "gradients", "optimizer_state")
    }


def sharding_table(rows: list[dict]) -> list[str]:
    """The planner per GPU against sharded processes (`techniques.plan_sharding_rows`)."""
    if not rows:
        return []
    lines = [
        "### Sharded: the planner per GPU against real processes",
        "",
        "`estimate(..., gpus=N, sharding=...)` against the most any of N processes (gloo on the CPU, "
        "one AdamW step, fp32) holds once the step is over, from its own shards: data parallel (none), "
        "`ZeroRedundancyOptimizer` (zero1), FSDP2 `fully_shard` with `reshard_after_forward=False` "
        "(zero2) and `True` (zero3). Goal: within 10 %. The last column is ZeRO-2's whole parameters, "
        "which FSDP2 holds from forward to backward on top of its shards.",
        "",
    ]
    lines += table(
        [
            "model",
            "GPUs",
            "sharding",
            "parameters measured / planned",
            "gradients measured / planned",
            "optimizer state measured / planned",
            "ratios",
            "within 10 %",
            "gathered measured / planned",
        ],
        [
            [
                row["model"],
                str(row["gpus"]),
                row["sharding"],
                *(
                    f"{mib(row[f'{line}_measured'])} / {mib(row[f'{line}_planned'])}"
                    for line in ("parameters", "gradients", "optimizer_state")
                ),
                " ".join(
                    f"{row[f'{line}_ratio']:.3f}" for line in ("parameters", "gradients", "optimizer_state")
                ),
                "yes"
                if all(
                    abs(row[f"{line}_ratio"] - 1) <= 0.10
                    for line in ("parameters", "gradients", "optimizer_state")
                )
                else "**no**",
                f"{mib(row['gathered_measured'])} / {mib(row['gathered_planned'])}",
            ]
            for row in rows
        ],
    )
    return lines + [""]


def regressions(old: dict, new: dict) -> list[dict]:
    """Figures present in both that moved by more than THRESHOLD (relative to the old value)."""
    moved = []
    for name, value in new.items():
        before = old.get(name)
        if before is None or value is None:
            continue
        if before == 0:
            change = 0.0 if value == 0 else float("inf")
        else:
            change = (value - before) / abs(before)
        if abs(change) > THRESHOLD:
            moved.append({"figure": name, "before": before, "after": value, "change": change})
    return moved


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def _fmt(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}"
    return f"{value:,.0f}"


def table(header: list[str], rows) -> list[str]:
    """A markdown table's lines: the header, its rule, and one line per row (cells already formatted)."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(str(cell) for cell in row) + " |" for row in rows
    ]


def busy_section(b: dict) -> list[str]:
    from busy import GOAL_BUSY_S, GOAL_RATIO_CHANGE

    def verdict(ok: bool) -> str:
        return "meets" if ok else "**misses**"

    return [
        "## 1b. Lesson 02 on a busy laptop",
        "",
        "Run All of lesson 02's solution edition alone, then beside one busy program (a Python loop "
        "spinning on one core), and the headline time ratio each run printed (section 4, checkpointed "
        f"step over plain step). Goals: beside the busy loop within {GOAL_BUSY_S:.0f} s, and the ratio "
        f"within {GOAL_RATIO_CHANGE:.0%} of the quiet run's.",
        "",
        *table(
            ["run", "Run All (s)", "time ratio"],
            [
                ["alone", f"{b['quiet']['run_all_s']:.1f}", f"{b['quiet']['ratio']:.2f}x"],
                ["beside a busy loop", f"{b['busy']['run_all_s']:.1f}", f"{b['busy']['ratio']:.2f}x"],
            ],
        ),
        "",
        f"Beside the busy loop: {b['busy']['run_all_s']:.1f} s ({verdict(b['busy_ok'])} the "
        f"{GOAL_BUSY_S:.0f} s goal); the ratio moved {b['ratio_change']:+.0%} ({verdict(b['ratio_ok'])} "
        f"the {GOAL_RATIO_CHANGE:.0%} goal).",
        "",
    ]


def markdown(results: dict) -> str:
    m = results["machine"]
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {results['date']} in {results['seconds'] / 60:.1f} min. "
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
        f"{'a CUDA GPU' if m['cuda'] else 'no GPU'}; Python {m['python']}, torch {m['torch']}, "
        f"transformers {m['transformers']}. Every lesson runs offline. Regenerate with `make bench`.",
        "",
    ]
    merged = results.get("merged")
    if merged:
        lines[2] = lines[2].replace(
            f"in {results['seconds'] / 60:.1f} min",
            f"in {results['seconds'] / 60:.1f} min (parts rerun: {', '.join(merged['rerun'])})",
        )
        lines.insert(3, "")
        lines.insert(
            4, f"Parts kept from the run of {merged['kept_from']}: {', '.join(merged['kept']) or 'none'}."
        )
    if results.get("lessons"):
        repeats = len(results["lessons"][0]["runs"])
        lines += [
            "## 1. Each lesson, Run All in a fresh kernel",
            "",
            f"Wall time of Run All: median of {repeats} runs. Memory: the largest of the runs. Goals: each "
            f"lesson at most {GOAL_LESSON_S:.0f} s and 1 GiB (Binder guarantees 1 GB), all lessons together "
            f"at most {GOAL_TOTAL_S / 60:.0f} min.",
            "",
            "- *kernel peak RSS*: the kernel process's own peak (`VmHWM`, exact);",
            "- *workers' peak RSS*: the largest peak among processes the kernel started and waited for "
            "(`getrusage`; a forked worker's RSS counts the pages it shares with the kernel);",
            "- *whole-lesson peak PSS*: kernel and workers together at their busiest moment (sampled every "
            "0.5 s; PSS splits shared copy-on-write pages, so forked workers are not double-counted);",
            "- *first output*: from asking for a kernel to the first cell's reply.",
            "",
        ]
        rows = []
        for row in results["lessons"]:
            worst = max(row["kernel_peak_rss"], row["tree_peak_pss"])
            budget = manifest.lesson(row["lesson"]).budget_s
            ok = row["run_all_s"] <= budget and worst <= GOAL_LESSON_BYTES
            rows.append(
                [
                    row["lesson"],
                    row["edition"],
                    f"{row['run_all_s']:.1f}",
                    ", ".join(f"{run['run_all_s']:.1f}" for run in row["runs"]),
                    f"{row['first_output_s']:.1f}",
                    mib(row["kernel_peak_rss"]),
                    mib(row["children_peak_rss"]) if row["children_peak_rss"] else "-",
                    mib(row["tree_peak_pss"]),
                    "meets" if ok else "**misses**",
                ]
            )
        lines += table(
            [
                "lesson",
                "edition",
                "Run All (s)",
                "runs (s)",
                "first output (s)",
                "kernel peak RSS",
                "workers' peak RSS",
                "whole-lesson peak PSS",
                "goal",
            ],
            rows,
        )
        lines.append("")
        for edition, total in results["lessons_total_s"].items():
            verdict = "meets" if total <= GOAL_TOTAL_S else "**misses**"
            lines.append(
                f"All lessons, {edition} edition: {total:.1f} s ({verdict} the {GOAL_TOTAL_S:.0f} s goal)."
            )
        lines.append("")
    if results.get("busy"):
        lines += busy_section(results["busy"])
    if results.get("activations"):
        lines += [
            "## 2. Each technique against its anchor",
            "",
            "### Saved activations per layer, against Korthikanti et al. 2022",
            "",
            "One forward and backward pass, fp32, dropout on, no training. The per-layer figure is measured: "
            "(saved at L layers - saved at L/2 layers) / (L/2), so embeddings, pooler and loss drop out. "
            "The reference is twice the paper's 16-bit formula, `2 * s*b*h*(34 + 5*a*s/h)`, and with full "
            "recomputation `2 * 2*s*b*h` (only the layer's input).",
            "",
        ]
        lines += table(
            [
                "model",
                "s, b",
                "saved, whole model",
                "with full checkpointing",
                "reduction",
                "per layer measured",
                "per layer, formula",
                "ratio",
                "checkpointed layer measured",
                "formula",
                "ratio",
            ],
            [
                [
                    row["model"],
                    row.get("precision", "fp32")
                    + (" autocast" if row.get("precision", "fp32") != "fp32" else ""),
                    f"{row['s']}, {row['b']}",
                    mib(row["saved_bytes"]),
                    mib(row["saved_bytes_checkpointed"]),
                    f"{row['reduction']:.1%}",
                    mib(row["layer_bytes"]),
                    mib(row["layer_bytes_formula"]),
                    f"{row['layer_ratio']:.3f}",
                    f"{row['layer_bytes_checkpointed'] / 1024:.1f} KiB",
                    f"{row['layer_bytes_checkpointed_formula'] / 1024:.1f} KiB",
                    f"{row['layer_ratio_checkpointed']:.3f}",
                ]
                for row in results["activations"]
            ],
        )
        lines += ["", "### FLOPs and time with full checkpointing, against 4/3", ""]
        lines += table(
            [
                "model",
                "FLOPs without",
                "FLOPs with",
                "FLOPs ratio (anchor 1.333)",
                "step time ratio on this CPU (one thread, CPU time, range)",
            ],
            [
                [
                    row["model"],
                    f"{row['flops'] / 1e9:.3f} GFLOP",
                    f"{row['flops_checkpointed'] / 1e9:.3f} GFLOP",
                    f"{row['flops_ratio']:.4f}",
                    f"{row['time_ratio']:.2f} ({row.get('time_ratio_low', row['time_ratio']):.2f}-"
                    f"{row.get('time_ratio_high', row['time_ratio']):.2f})",
                ]
                for row in results["activations"]
            ],
        )
        lines.append("")
    if results.get("segments"):
        s = results["segments"]
        lines += [
            "### Segments on lesson 1's deep stack, against sqrt(n)",
            "",
            f"{s['n_blocks']} blocks (Linear + Tanh, width 256, batch 64), checkpointed in k segments for "
            "every divisor k. Chen et al. 2016: memory O(n/k + k), least at k = sqrt(n) = "
            f"{s['sqrt_n']:.2f}. Measured least memory at k = {s['best_k']} ({mib(s['kept_bytes_best'])} kept"
            + (f", against {mib(s['kept_bytes_k1'])} with one segment" if s.get("kept_bytes_k1") else "")
            + f"), for {s['flops_ratio_best']:.3f}x the FLOPs.",
            "",
        ]
        lines += table(
            ["k"] + [str(row["k"]) for row in s["rows"]],
            [["kept"] + [mib(row["kept_bytes"]) for row in s["rows"]]],
        )
        lines.append("")
    if results.get("local_sgd"):
        lines += [
            "### Local SGD against data parallel",
            "",
            f"Lesson 4's setting: 2 processes, {results['local_sgd'][0]['steps']} micro-batches of 16 each, "
            "1-layer tiny BERT. Counted per process by instrumentation (DDP comm hook, wrapped "
            "`all_reduce`); the rule is `steps` for data parallel and floor(steps / K) + 1 for Local SGD.",
            "",
        ]
        lines += table(
            [
                "run",
                "synchronizations",
                "rule",
                "all-reduce calls",
                "MB sent",
                "bytes vs data parallel",
                "validation loss",
                "s",
            ],
            [
                [
                    row["run"],
                    row["synchronizations"],
                    row["expected"],
                    row["allreduce_calls"],
                    f"{row['megabytes']:.2f}",
                    f"{row['bytes_vs_dp']:.3f}",
                    f"{row['eval_loss']:.4f}",
                    f"{row['seconds']:.1f}",
                ]
                for row in results["local_sgd"]
            ],
        )
        lines.append("")
    if results.get("diloco"):
        lines += [
            "### DiLoCo against Local SGD and data parallel",
            "",
            f"Lesson 5's setting: 2 processes, {results['diloco'][0]['steps']} micro-batches of 16 each, "
            "1-layer tiny BERT; DiLoCo with the paper's outer optimizer (SGD, lr 0.7, Nesterov momentum "
            "0.9); the last two rows are H = 1 with outer lr 1 and no momentum (Local SGD's K = 1), one "
            "all-reduce per tensor against one flat buffer. The rule is `steps` for data parallel, "
            "floor(steps / K) + 1 for Local SGD, floor(steps / H) for DiLoCo; ms in all-reduce is per "
            "synchronization, in the process that arrived last (median). Two seeds of data parallel show "
            "the noise a loss difference must exceed.",
            "",
        ]
        lines += table(
            [
                "run",
                "steps",
                "synchronizations",
                "rule",
                "all-reduce calls",
                "calls per sync",
                "MB sent",
                "bytes per step vs data parallel",
                "ms in all-reduce per sync",
                "ms per step",
                "validation loss",
            ],
            [
                [
                    row["run"],
                    row["steps"],
                    row["synchronizations"],
                    row["expected"],
                    row["allreduce_calls"],
                    f"{row['calls_per_sync']:.0f}",
                    f"{row['megabytes']:.2f}",
                    f"{row['bytes_per_step_vs_dp']:.4f}",
                    "-" if row["ms_per_sync"] != row["ms_per_sync"] else f"{row['ms_per_sync']:.2f}",
                    f"{row['ms_per_step']:.1f}",
                    f"{row['eval_loss']:.4f}",
                ]
                for row in results["diloco"]
            ],
        )
        lines.append("")
    if results.get("imports"):
        lines += [
            "## 3. Start-up",
            "",
            "Fresh interpreter, median of 3 (the interpreter's own start included).",
            "",
        ]
        lines += table(
            ["import", "s"],
            [[f"`{label}`", f"{seconds:.2f}"] for label, seconds in results["imports"].items()],
        )
        if results.get("lessons"):
            lines += [
                "",
                "Time to the first cell's output in a fresh "
                "kernel is the *first output* column of section 1.",
            ]
        lines.append("")
    if results.get("grading"):
        from grading import GOAL_CLASS_S, GOAL_LONG_CELL_EXTRA_S, GOAL_ONE_S

        g = results["grading"]
        class_ok = g["class_s"] <= GOAL_CLASS_S
        one_ok = g["one_lesson01_s"] <= GOAL_ONE_S
        lines += [
            "## 4. Grading a class",
            "",
            f"`effitrain grade` with its defaults (bubblewrap sandbox, 2 workers) on {g['learners']} "
            f"learners x every lesson = {g['notebooks']} notebooks, in four kinds taken in turn: solved, "
            "blank, partly solved (the first question), broken (answers that raise or do not parse). Each "
            "submission runs only the cells its questions need, never the lesson's trainings.",
            "",
            f"- the class: **{g['class_s'] / 60:.1f} min** ({g['per_notebook_s']:.1f} s per notebook; "
            f"{'meets' if class_ok else '**misses**'} the {GOAL_CLASS_S / 60:.0f}-minute goal); statuses: "
            + ", ".join(f"{count} {status}" for status, count in sorted(g["statuses"].items()))
            + ";",
            f"- one solved lesson-01 submission on its own: **{g['one_lesson01_s']:.1f} s**, median of "
            f"{len(g['one_lesson01_runs'])} ({', '.join(f'{t:.1f}' for t in g['one_lesson01_runs'])} s; "
            f"{'meets' if one_ok else '**misses**'} the {GOAL_ONE_S:.0f} s goal);",
            f"- largest memory of one submission: {g['peak_memory_mb']:.0f} MiB (the cap is 3072 MiB).",
        ]
        if "long_cell_s" in g:
            extra = g["long_cell_s"] - g["one_lesson01_s"]
            lines.append(
                f"- the same submission with one more answer cell of 4,000 lines `a = !b`: "
                f"**{g['long_cell_s']:.1f} s**, median of {len(g['long_cell_runs'])} "
                f"({', '.join(f'{t:.1f}' for t in g['long_cell_runs'])} s), {extra:+.1f} s "
                f"({'meets' if extra <= GOAL_LONG_CELL_EXTRA_S else '**misses**'} the "
                f"+{GOAL_LONG_CELL_EXTRA_S:.0f} s goal); flags: "
                + ("; ".join(g["long_cell_flags"]) or "none")
                + "."
            )
        lines.append("")
        lines += table(
            ["lesson", "mean s per submission"],
            [[name, f"{s:.1f}"] for name, s in g["lesson_mean_s"].items()],
        )
        lines += [
            "",
            "Share of the points each kind earned (a check that the class is graded as written):",
            "",
        ]
        lines += table(
            ["kind", "share of points"],
            [[kind, f"{share:.0%}"] for kind, share in g["share_of_points"].items()],
        )
        lines.append("")
    if results.get("plan"):
        lines += [
            "## 5. The planner (`effitrain plan`, lesson 6) against measurement",
            "",
            '`effitrain_lessons.will_it_fit.plan.estimate(..., device="cpu")` against the bytes saved for '
            "backward, "
            "measured as lesson 1 measures them (saved-tensor hooks, each storage once), for real widths "
            "at a few layers, fp32, dropout as the config has it, with and without full checkpointing, "
            "eager and SDPA attention. Goal: within 10 %. Parameters, gradients and AdamW state: the "
            "estimate against the tensors counted after one real AdamW step (goal: equal). The rows "
            'marked bf16 or fp16 run the forward under `torch.autocast("cpu", ...)` and hold '
            '`estimate(..., precision="bf16"|"fp16", device="cpu")` (autocast\'s CPU rules) against it: '
            "measured and estimated count the activations and the 16-bit weight copies together (the "
            "copies apart in the last column); the states are torch.amp's (fp32 weights, gradients and "
            "AdamW state) after one real step under autocast. Goal: within 10 %. The CUDA rules are "
            "predicted (PyTorch's documented op lists), not measured here.",
            "",
        ]
        lines += table(
            [
                "model",
                "precision",
                "s, b",
                "attention",
                "checkpointing",
                "measured",
                "estimated",
                "ratio",
                "within 10 %",
                "states measured",
                "states estimated",
                "16-bit weight copies measured / estimated",
            ],
            [
                [
                    row["model"],
                    row.get("precision", "fp32")
                    + (" autocast" if row.get("precision", "fp32") != "fp32" else ""),
                    f"{row['s']}, {row['b']}",
                    row["attention"],
                    "on" if row["checkpointing"] else "off",
                    mib(row["activations_measured"]),
                    mib(row["activations_estimated"]),
                    f"{row['ratio']:.3f}",
                    "yes" if abs(row["ratio"] - 1) <= 0.10 else "**no**",
                    f"{row['states_measured']:,} B" if "states_measured" in row else "",
                    (
                        f"{row['states_estimated']:,} B"
                        + ("" if row["states_estimated"] == row["states_measured"] else " **differs**")
                    )
                    if "states_measured" in row
                    else "",
                    f"{mib(row['copies_measured'])} / {mib(row['copies_estimated'])}"
                    if "copies_measured" in row
                    else "",
                ]
                for row in results["plan"]
            ],
        )
        lines.append("")
        lines += sharding_table(results.get("sharding", []))
    lines += [f"## {6 if results.get('plan') else 5}. Against the previous results", ""]
    previous = results.get("previous")
    if previous is None:
        lines.append("No earlier RESULTS.json to compare with.")
    elif not results["moved"]:
        lines.append(
            f"Compared with the results of {previous}: no figure moved by more than {THRESHOLD:.0%}."
        )
    else:
        lines += [
            f"Compared with the results of {previous}, these figures moved by more than {THRESHOLD:.0%}:",
            "",
        ]
        lines += table(
            ["figure", "before", "after", "change"],
            [
                [m["figure"], _fmt(m["before"]), _fmt(m["after"]), f"{m['change']:+.0%}"]
                for m in results["moved"]
            ],
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="Run All runs per lesson edition (median taken)"
    )
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    parser.add_argument("--lessons", nargs="*", help="lesson number prefixes, e.g. 02 04 (default: all)")
    parser.add_argument(
        "--no-write", action="store_true", help="print the report instead of writing RESULTS.*"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the parts not rerun from the RESULTS.json there (the report says which are whose)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1.")
    parts = {part.strip() for part in args.only.split(",")}
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}: choose from {', '.join(PARTS)}.")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    results: dict = {"date": datetime.date.today().isoformat(), "machine": machine()}
    if "startup" in parts:
        from startup import import_times

        print("imports ...", flush=True)
        results["imports"] = import_times()
    if "techniques" in parts:
        import techniques

        print("activations against Korthikanti ...", flush=True)
        results["activations"] = techniques.activation_anchors()
        print("segments against sqrt(n) ...", flush=True)
        results["segments"] = techniques.segment_anchor()
        print("Local SGD against data parallel ...", flush=True)
        results["local_sgd"] = techniques.local_sgd_anchor()
        print("DiLoCo against Local SGD and data parallel ...", flush=True)
        results["diloco"] = techniques.diloco_anchor()
    if "plan" in parts:
        import techniques

        print("the planner against measurement ...", flush=True)
        results["plan"] = techniques.plan_anchor()
        print("the planner per GPU against sharded processes ...", flush=True)
        results["sharding"] = techniques.plan_sharding_rows()
    if "lessons" in parts:
        print("lessons ...", flush=True)
        results["lessons"] = bench_lessons(args.repeats, args.lessons)
        totals: dict[str, float] = {}
        for row in results["lessons"]:
            totals[row["edition"]] = totals.get(row["edition"], 0.0) + row["run_all_s"]
        results["lessons_total_s"] = totals
    if "busy" in parts:
        from busy import busy_machine

        print("lesson 02 alone and beside a busy loop ...", flush=True)
        results["busy"] = busy_machine(ROOT)
    if "grading" in parts:
        from grading import bench_grading

        print("grading a class ...", flush=True)
        results["grading"] = bench_grading()
    results["seconds"] = time.perf_counter() - started

    json_path, md_path = HERE / "RESULTS.json", HERE / "RESULTS.md"
    if args.merge and json_path.exists():
        old = json.loads(json_path.read_text())
        kept = [part for part in PARTS if part not in parts and any(key in old for key in PART_KEYS[part])]
        for part in kept:
            for key in PART_KEYS[part]:
                if key in old:
                    results[key] = old[key]
        results["merged"] = {
            "rerun": sorted(parts),
            "kept": kept,
            "kept_from": old.get("merged", {}).get("kept_from", old.get("date")),
            "seconds_kept": old.get("seconds", 0.0),
        }
    new_figures = figures(results)
    results["figures"] = new_figures
    if json_path.exists():
        old = json.loads(json_path.read_text())
        results["previous"] = old.get("date", "an earlier run")
        results["moved"] = regressions(old.get("figures", {}), new_figures)
    else:
        results["previous"], results["moved"] = None, []
    report = markdown(results)
    if args.no_write:
        print(report)
        return 0
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    md_path.write_text(report)
    print(report)
    print(f"wrote {md_path.relative_to(ROOT)} and {json_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
