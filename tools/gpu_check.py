"""`make gpu-check`: the course on a GPU, in one prepared run of at most 8 minutes.

    python tools/gpu_check.py                 # on a CUDA machine: benchmarks/GPU_CHECK.md and gpu_check.json
    python tools/gpu_check.py --dry-run       # anywhere, in under 3 minutes: what it would run, tried small
    python tools/gpu_check.py --budget 300    # start no step after 300 s; what was left is recorded
    python tools/gpu_check.py --out DIR       # write the report into DIR instead of benchmarks/

Three parts, run in this order, each a list of steps:

1. **lessons**: every English learner and solution edition, and one Turkish edition, Run All in a
   fresh kernel with the benchmarks' executor (`benchmarks/lessons.run_all`), on a machine where the
   lessons' `pick_device` finds CUDA: errors, wall time, and the kernel's peak
   `torch.cuda.max_memory_allocated()` (lessons 4 and 5 train in processes on the CPU, over gloo:
   two ranks cannot share one GPU under NCCL).
2. **checkpointing**: a BERT-base-shaped model at sequence 512, a few AdamW steps with and without
   checkpointing, eager and SDPA attention, fp32 and 16-bit autocast (bf16 where the GPU has it, fp16
   with a loss scaler where it does not: a T4): peak memory and step time, the time ratio set beside
   Chen et al.'s "about 30 % more time" and the CPU ratio the benchmarks measured.
3. **planner**: lesson 6's estimate against the peak of real steps, BERT-base and GPT-2 small at real
   shapes (the grid of `cases()`).
4. **autocast**: what one forward pass under `torch.autocast("cuda", ...)` saves for backward (16-bit
   weight copies and activations, counted with lesson 8's saved-tensor hooks), in bf16 where the GPU
   has it and in fp16, against the planner's CUDA rules (`plan.estimate(..., device="cuda")`), which
   stay labelled predicted until this part has measured them (goal: within 10 %).

Lesson 7's solution edition measures offload (`save_on_cpu`, to pinned memory on a GPU) and the peak
of a step in its own cells: the report keeps what it printed.

`--dry-run` needs no GPU: it lists every step with its expected time on the GPU, checks that every
notebook and bundled model config a step needs is there, and runs each part's code on the CPU at a
tiny size (the executor on a two-cell notebook, the checkpointing and planner steps on a one-layer
model), so that a typo cannot waste a GPU slot. It writes nothing. Without CUDA and without
`--dry-run`, the check says so in one sentence and writes nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from effitrain_lessons.mixed_precision.measure import saved_in_forward  # noqa: E402
from effitrain_lessons.shared.device import synchronize  # noqa: E402
from effitrain_lessons.shared.memory import format_bytes  # noqa: E402
from effitrain_lessons.will_it_fit import plan  # noqa: E402

NO_CUDA = "No CUDA device here: the GPU check runs on a machine with an NVIDIA GPU (`make gpu-check`)."
MARKDOWN = "GPU_CHECK.md"
JSON = "gpu_check.json"
DEVICE = "cuda"
BUDGET_S = 450.0  # the default --budget: what may start; the last step then finishes within 8 minutes
GOAL_S = 480.0  # every step's expected time together: at most 8 minutes

# Part 1: which editions run. One Turkish edition: lesson 6's, the one whose tables and verdicts
# carry the most numbers written the Turkish way.
TURKISH_EDITION = "notebooks/tr/06_will_it_fit.ipynb"
# Editions whose printed output the report keeps: lesson 7 measures offload (`save_on_cpu` to pinned
# memory on a GPU) and the peak of a step in its cells, so what it printed is the measurement.
KEEP_PRINTED = ("notebooks/solutions/07_checkpoint_your_own_model.ipynb",)
# A lesson's expected time on the GPU machine: the CPU bench's Run All (2 cores, benchmarks/RESULTS.json)
# is an upper bound; the GPU machine has more cores and the GPU, so half its time after a kernel's
# start is expected. A guess until the first run: the report records the real times.
KERNEL_START_S = 4.0
GPU_SHARE = 0.5
UNBENCHED_LESSON_S = 45.0  # a lesson the bench has not timed yet: most of its 60 s goal, on the CPU

# Part 2: the checkpointing study.
STUDY_MODEL = "bert-base-uncased"
STUDY_SHAPE = (8, 512)  # batch, sequence
STUDY_STEPS = 4  # the first warms up; the time is the median of the others
CHEN_TIME = 1.30  # Chen et al. 2016: about 30 % more time for checkpointing (COURSE.md, slide notes)
STUDY_EXPECTED_S = 6.0  # per row: 4 steps of BERT-base at batch 8, sequence 512
# The dry run's sizes: the same families, built by the same code, one narrow layer each.
TINY_BERT = {"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 256}
TINY_GPT2 = {"n_layer": 1, "n_embd": 64, "n_head": 4}
TINY_SIZES = {"bert-base-uncased": TINY_BERT, "gpt2": TINY_GPT2}

# Part 3: the planner. (batch, seq) per model: BERT as the course fine-tunes it, GPT-2 at half and
# full context.
SHAPES = {
    "bert-base-uncased": [(8, 128), (32, 128), (8, 512), (32, 512)],
    "gpt2": [(4, 512), (8, 512), (4, 1024), (8, 1024)],
}
PRECISIONS = ("fp32", "16-bit")  # 16-bit: autocast over fp32 weights, bf16 or fp16 as the GPU allows
ATTENTIONS = ("sdpa", "eager")
PLANNER_STEPS = 3
PLANNER_EXPECTED_S = 1.5  # per row
COLUMNS = (
    "model",
    "batch",
    "seq",
    "precision",
    "attention",
    "checkpointing",
    "estimate (modelled)",
    "measured peak",
    "measured / modelled",
    "estimate (total)",
    "within total",
    "seconds",
)


# Part 4: autocast's CUDA rules. (batch, seq) per model: one shape each, long enough that the
# activations outweigh the weight copies.
AUTOCAST_SHAPES = {"bert-base-uncased": (8, 512), "gpt2": (4, 1024)}
AUTOCAST_GOAL = 0.10  # the planner's 16-bit figure within 10 % of what autocast saves
AUTOCAST_EXPECTED_S = 1.0  # per row: one forward pass with saved-tensor hooks


# ---------------------------------------------------------------------------------------------
# Choices that differ between GPUs (unit-tested on the CPU)


def autocast_dtype(capability: tuple[int, int] | None) -> torch.dtype:
    """The 16-bit type for mixed precision on a GPU of this compute capability: bf16 from Ampere
    (8, 0) on, fp16 (with a loss scaler) before it, as on a T4 (7, 5). None (no GPU): bf16, which
    CPUs compute."""
    if capability is None:
        return torch.bfloat16
    return torch.bfloat16 if plan.supports_bf16(tuple(capability)) else torch.float16


def precision_name(precision: str, capability: tuple[int, int] | None) -> str:
    """The name the planner and the report use: "fp32", "bf16" or "fp16"."""
    if precision == "fp32":
        return "fp32"
    return "bf16" if autocast_dtype(capability) == torch.bfloat16 else "fp16"


def capability_here() -> tuple[int, int] | None:
    return torch.cuda.get_device_capability() if torch.cuda.is_available() else None


# ---------------------------------------------------------------------------------------------
# Steps


@dataclass
class Step:
    """One thing the check runs: `run(device, tiny)` returns its row (a dict); `needs` are the files
    it reads, checked by the dry run; `expected_s` its expected time on the GPU."""

    part: str
    name: str
    expected_s: float
    run: Callable[[str, bool], dict]
    needs: list[Path] = field(default_factory=list)


def _bench_times() -> dict[str, float]:
    """Each edition's Run All time in the CPU bench (median of its runs), by notebook path."""
    results = ROOT / "benchmarks" / "RESULTS.json"
    if not results.exists():
        return {}
    folders = {"learner": "notebooks", "solution": "notebooks/solutions"}
    times = {}
    for lesson in json.loads(results.read_text(encoding="utf-8")).get("lessons", []):
        folder = folders.get(lesson.get("edition"))
        runs = [run["run_all_s"] for run in lesson.get("runs", [])]
        if folder and runs:
            times[f"{folder}/{lesson['lesson']}.ipynb"] = statistics.median(runs)
    return times


def expected_lesson_seconds(cpu_seconds: float | None) -> float:
    """A lesson's expected Run All time on the GPU machine, from the CPU bench's (see GPU_SHARE)."""
    cpu = UNBENCHED_LESSON_S if cpu_seconds is None else cpu_seconds
    return KERNEL_START_S + GPU_SHARE * max(0.0, cpu - KERNEL_START_S)


def editions() -> list[Path]:
    """The editions part 1 runs: every English learner and solution edition, and one Turkish."""
    learner = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    solutions = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
    return [*learner, *solutions, ROOT / TURKISH_EDITION]


CUDA_PROBE = """\
import json as _json, resource as _resource, sys as _sys
_hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
_torch = _sys.modules.get("torch")
_cuda = bool(_torch is not None and _torch.cuda.is_available() and _torch.cuda.is_initialized())
print("EFFITRAIN-PEAK " + _json.dumps({
    "kernel_peak_rss": (
        int(_hwm[0].split()[1]) if _hwm else _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
    ) * 1024,
    "children_peak_rss": _resource.getrusage(_resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    "cuda_used": _cuda,
    "cuda_peak_allocated": _torch.cuda.max_memory_allocated() if _cuda else None,
}))
"""


def lesson_step(path: Path, cpu_seconds: float | None) -> Step:
    relative = path.relative_to(ROOT).as_posix()

    def run(device: str, tiny: bool) -> dict:
        from lessons import run_all

        if tiny:  # the executor and the probe, on a two-cell notebook beside the lesson's folder
            return _tiny_notebook_run(run_all)
        keep = relative in KEEP_PRINTED
        try:
            measured = run_all(path, timeout=300, probe=CUDA_PROBE, keep_printed=keep)
        except Exception as error:  # the lesson raised: record it, go on with the others
            return {"notebook": relative, "status": "error", "error": str(error)[:500]}
        return {
            "notebook": relative,
            "status": "ok",
            "run_all_s": round(measured["run_all_s"], 1),
            "cuda_used": measured["cuda_used"],
            "cuda_peak_allocated": measured["cuda_peak_allocated"],
            "kernel_peak_rss": measured["kernel_peak_rss"],
            **({"printed": measured["printed"]} if keep else {}),
        }

    return Step("lessons", relative, expected_lesson_seconds(cpu_seconds), run, [path])


def _tiny_notebook_run(run_all) -> dict:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("from effitrain_lessons.shared.device import describe_device, pick_device"),
        nbformat.v4.new_code_cell("print(describe_device(pick_device()))"),
    ]
    with tempfile.TemporaryDirectory(prefix="effitrain-gpu-check-") as folder:
        path = Path(folder) / "tiny.ipynb"
        nbformat.write(notebook, path)
        measured = run_all(path, timeout=120, probe=CUDA_PROBE)
    return {"notebook": "(a two-cell notebook)", "status": "ok", "run_all_s": round(measured["run_all_s"], 1)}


def study_rows() -> list[dict]:
    return [
        {"attention": attention, "precision": precision, "checkpointing": checkpointing}
        for attention in ATTENTIONS
        for precision in PRECISIONS
        for checkpointing in (False, True)
    ]


def study_step(settings: dict) -> Step:
    name = (
        f"{STUDY_MODEL} b{STUDY_SHAPE[0]} s{STUDY_SHAPE[1]}, {settings['attention']}, "
        f"{settings['precision']}, checkpointing {'on' if settings['checkpointing'] else 'off'}"
    )

    def run(device: str, tiny: bool) -> dict:
        size = TINY_BERT if tiny else {}
        model = plan.build(STUDY_MODEL, attention=settings["attention"], **size)
        batch, seq = (2, 32) if tiny else STUDY_SHAPE
        model.to(device)
        capability = capability_here() if device == "cuda" else None
        precision = precision_name(settings["precision"], capability)
        timed = timed_steps(
            model, batch_for(model, batch, seq, device), precision, STUDY_STEPS, settings["checkpointing"]
        )
        del model
        _free(device)
        return {
            **settings,
            "requested": settings["precision"],
            "precision": precision,
            "batch": batch,
            "seq": seq,
            **timed,
        }

    return Step("checkpointing", name, STUDY_EXPECTED_S, run, [plan.CONFIG_DIR / f"{STUDY_MODEL}.json"])


def timed_steps(model, batch: dict, precision: str, steps: int, checkpointing: bool) -> dict:
    """`steps` AdamW steps: the peak CUDA memory over them (None off CUDA) and the median time of a
    step after the first, with the device synchronized around each."""
    device = next(model.parameters()).device.type
    if checkpointing:
        model.activation_checkpointing_enable()
    else:
        model.activation_checkpointing_disable()
    model.train()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    seconds = []
    try:
        for _ in range(steps):
            synchronize(device)
            began = time.perf_counter()
            train_steps(model, batch, precision, 1)
            synchronize(device)
            seconds.append(time.perf_counter() - began)
    except torch.cuda.OutOfMemoryError:
        return {"status": "out of memory", "peak_bytes": None, "step_s": None}
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return {"status": "ok", "peak_bytes": peak, "step_s": statistics.median(seconds[1:] or seconds)}


def batch_for(model: torch.nn.Module, batch: int, seq: int, device: str) -> dict:
    """Random token ids with labels: a class per sequence for BERT, the ids themselves for a
    language model."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=generator)
    if model.config.model_type == "bert":
        inputs = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": torch.zeros(batch, dtype=torch.long),
        }
    else:
        inputs = {"input_ids": ids, "labels": ids}
    return {name: tensor.to(device) for name, tensor in inputs.items()}


def train_steps(model: torch.nn.Module, batch: dict, precision: str, steps: int) -> list[float]:
    """`steps` AdamW steps on `batch`: fp32, or autocast over fp32 weights in bf16, or in fp16 with a
    loss scaler (GradScaler), as on a GPU without bf16. The losses."""
    device = next(model.parameters()).device.type
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    optimizer = getattr(model, "_gpu_check_optimizer", None)
    if optimizer is None:
        optimizer = model._gpu_check_optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device, enabled=precision == "fp16")
    losses = []
    for _ in range(steps):
        with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = model(**batch).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


@dataclass(frozen=True)
class Case:
    """One row of the planner part: a model, a shape and a setup."""

    model: str
    batch: int
    seq: int
    precision: str
    attention: str
    checkpointing: bool

    def estimate(self) -> plan.Estimate:
        return plan.estimate(
            self.model,
            batch=self.batch,
            seq=self.seq,
            precision=self.precision,
            master_weights=True,
            optimizer="adamw",
            attention=self.attention,
            checkpointing=self.checkpointing,
            device="cuda",
        )


def cases(capability: tuple[int, int] | None = (8, 0)) -> list[Case]:
    """The planner's grid, ordered so that one model is built per (model, attention); its 16-bit
    rows are bf16 or fp16 as a GPU of this capability allows."""
    return [
        Case(model, batch, seq, precision_name(precision, capability), attention, checkpointing)
        for model, shapes in SHAPES.items()
        for attention in ATTENTIONS
        for batch, seq in shapes
        for precision in PRECISIONS
        for checkpointing in (False, True)
    ]


_built: dict = {}


def planner_step(case: Case) -> Step:
    name = (
        f"{case.model} b{case.batch} s{case.seq}, {case.precision}, {case.attention}, "
        f"checkpointing {'on' if case.checkpointing else 'off'}"
    )

    def run(device: str, tiny: bool) -> dict:
        measured = dataclasses.replace(case, batch=1, seq=16) if tiny else case
        key = (measured.model, measured.attention, tiny)
        if key not in _built:
            _built.clear()  # one model on the device at a time
            _free(device)
            size = TINY_SIZES[measured.model] if tiny else {}
            _built[key] = plan.build(measured.model, attention=measured.attention, **size).to(device)
        peak, status = measure(_built[key], measured, PLANNER_STEPS if not tiny else 1, device)
        return row(measured, peak, status, 0.0)

    needs = [plan.CONFIG_DIR / f"{case.model}.json"]
    return Step("planner", name, PLANNER_EXPECTED_S, run, needs)


def measure(model: torch.nn.Module, case: Case, steps: int, device: str = DEVICE) -> tuple[int | None, str]:
    """(peak bytes allocated over `steps` training steps, "ok"), or (None, "out of memory"); the peak
    is None off CUDA."""
    if case.checkpointing:
        model.activation_checkpointing_enable()  # gradient_checkpointing_enable before transformers 5
    else:
        model.activation_checkpointing_disable()
    model.zero_grad(set_to_none=True)
    model._gpu_check_optimizer = None  # each row starts its optimizer state afresh
    peak, status = None, "ok"
    try:
        batch = batch_for(model, case.batch, case.seq, device)
        synchronize(device)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        train_steps(model, batch, case.precision, steps)
        synchronize(device)
        if device == "cuda":
            peak = torch.cuda.max_memory_allocated()
    except torch.cuda.OutOfMemoryError:
        status = "out of memory"
    # Out of the except block, the error (and the tensors its frames hold) is gone.
    batch = None
    model.zero_grad(set_to_none=True)
    model._gpu_check_optimizer = None
    _free(device)
    return peak, status


def _free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def row(case: Case, peak: int | None, status: str, seconds: float) -> dict:
    """One planner row: the case, the estimate's modelled and total bytes, the measured peak."""
    estimate = case.estimate()
    return {
        **dataclasses.asdict(case),
        "estimate_modelled_bytes": estimate.modelled,
        "estimate_total_bytes": estimate.total,
        "measured_peak_bytes": peak,
        "ratio": None if peak is None else peak / estimate.modelled,
        "seconds": round(seconds, 2),
        "status": status,
    }


def autocast_cases(capability: tuple[int, int] | None = (8, 0)) -> list[Case]:
    """Part 4's grid: each model at its shape, fp16 and (where the GPU has it) bf16, eager and SDPA,
    with and without checkpointing."""
    precisions = ("fp16",) if autocast_dtype(capability) == torch.float16 else ("bf16", "fp16")
    return [
        Case(model, batch, seq, precision, attention, checkpointing)
        for model, (batch, seq) in AUTOCAST_SHAPES.items()
        for attention in ATTENTIONS
        for precision in precisions
        for checkpointing in (False, True)
    ]


def autocast_step(case: Case) -> Step:
    name = (
        f"{case.model} b{case.batch} s{case.seq}, {case.precision} autocast, {case.attention}, "
        f"checkpointing {'on' if case.checkpointing else 'off'}"
    )

    def run(device: str, tiny: bool) -> dict:
        measured = dataclasses.replace(case, batch=1, seq=16) if tiny else case
        size = TINY_SIZES[measured.model] if tiny else {}
        key = (measured.model, measured.attention, tiny)
        if key not in _built:
            _built.clear()
            _free(device)
            _built[key] = plan.build(measured.model, attention=measured.attention, **size).to(device)
        return autocast_row(_built[key], measured, device, size)

    needs = [plan.CONFIG_DIR / f"{case.model}.json"]
    return Step("autocast", name, AUTOCAST_EXPECTED_S, run, needs)


def autocast_row(model: torch.nn.Module, case: Case, device: str = DEVICE, size: dict | None = None) -> dict:
    """One row of part 4: what a forward pass under autocast on `device` saved for backward (weight
    copies and activations apart) against the planner's rules for that device (`size`: the config
    fields the model was built with, as the dry run's tiny models are)."""
    if case.checkpointing:
        model.activation_checkpointing_enable()  # gradient_checkpointing_enable before transformers 5
    else:
        model.activation_checkpointing_disable()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[case.precision]
    try:
        log = saved_in_forward(model, batch_for(model, case.batch, case.seq, device), dtype, device)
    except torch.cuda.OutOfMemoryError:
        log = None
    _free(device)
    if log is None:
        return {**dataclasses.asdict(case), "status": "out of memory"}
    estimate = plan.estimate(
        {**plan._read_config(case.model)[1], **(size or {})},
        batch=case.batch,
        seq=case.seq,
        precision=case.precision,
        attention=case.attention,
        checkpointing=case.checkpointing,
        device="cuda" if device == "cuda" else "cpu",
    )
    planned = estimate.bytes_of("activations") + estimate.bytes_of("16-bit weight copies")
    return {
        **dataclasses.asdict(case),
        "measured_copies_bytes": log.copy_bytes,
        "measured_activation_bytes": log.activation_bytes,
        "planned_copies_bytes": estimate.bytes_of("16-bit weight copies"),
        "planned_activation_bytes": estimate.bytes_of("activations"),
        "ratio": log.total_bytes / planned if planned else None,
        "status": "ok",
    }


def steps(capability: tuple[int, int] | None = (8, 0)) -> list[Step]:
    """Every step of the check, in the order it runs."""
    bench = _bench_times()
    planned = [lesson_step(path, bench.get(path.relative_to(ROOT).as_posix())) for path in editions()]
    planned += [study_step(settings) for settings in study_rows()]
    planned += [planner_step(case) for case in cases(capability)]
    planned += [autocast_step(case) for case in autocast_cases(capability)]
    return planned


# ---------------------------------------------------------------------------------------------
# Running


def run(planned: list[Step], budget: float, device: str = DEVICE, tiny: bool = False) -> list[dict]:
    """Run the steps in order until `budget` seconds have passed: a step that would start later is
    recorded as not run. A step that raises is recorded with its error; the others go on."""
    rows, start = [], time.perf_counter()
    for step in planned:
        began = time.perf_counter()
        base = {"part": step.part, "step": step.name, "expected_s": round(step.expected_s, 1)}
        if began - start > budget:
            rows.append({**base, "status": "not run (time budget)"})
            continue
        try:
            result = step.run(device, tiny)
        except Exception as error:
            result = {"status": "error", "error": f"{type(error).__name__}: {error}"[:500]}
        seconds = time.perf_counter() - began
        rows.append({**base, **result, "seconds": round(seconds, 2)})
        print(f"[{step.part}] {step.name}: {result.get('status')} ({seconds:.1f} s)", flush=True)
    return rows


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def dry_run(planned: list[Step]) -> int:
    """List every step with its expected GPU time, check what each needs, run each part's code once
    on the CPU at a tiny size. Returns the exit code: 1 if anything is missing or failed."""
    problems = []
    for step in planned:
        missing = [path for path in step.needs if not path.exists()]
        mark = "MISSING " + ", ".join(_shown(path) for path in missing) if missing else ""
        print(f"[{step.part}] {step.name}: expected {step.expected_s:.1f} s {mark}".rstrip())
        problems += [f"{step.name}: {path} is missing" for path in missing]
        for path in step.needs:
            if path.suffix == ".ipynb" and path.exists():
                try:
                    json.loads(path.read_text(encoding="utf-8"))["cells"]
                except (ValueError, KeyError) as error:
                    problems.append(f"{path}: not a notebook ({error})")
    total = sum(step.expected_s for step in planned)
    parts = {}
    for step in planned:
        parts[step.part] = parts.get(step.part, 0.0) + step.expected_s
    print(
        f"{len(planned)} steps, expected {total / 60:.1f} min on the GPU in all ("
        + ", ".join(f"{part} {seconds / 60:.1f} min" for part, seconds in parts.items())
        + f"); the goal is at most {GOAL_S / 60:.0f} min."
    )
    if total > GOAL_S:
        problems.append(f"the steps are expected to take {total:.0f} s, over the {GOAL_S:.0f} s goal")
    # each step's code on the CPU at a tiny size; the lessons share theirs (the executor), tried once
    tried = [step for step in planned if step.part != "lessons"]
    tried[:0] = [step for step in planned if step.part == "lessons"][:1]
    for row_ in run(tried, budget=float("inf"), device="cpu", tiny=True):
        if row_.get("status") != "ok":
            problems.append(f"{row_['part']} at a tiny size on the CPU: {row_.get('error', row_['status'])}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("dry run: ready for a GPU." if not problems else f"dry run: {len(problems)} problem(s).")
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------------
# The report


def machine() -> dict:
    import transformers

    return {
        "gpu": torch.cuda.get_device_name(),
        "gpu_memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
    }


def _cpu_time_ratio() -> str:
    """The CPU's step-time ratio with checkpointing, as the benchmarks measured it (BERT-base shape)."""
    results = ROOT / "benchmarks" / "RESULTS.json"
    if not results.exists():
        return "not measured"
    for entry in json.loads(results.read_text(encoding="utf-8")).get("activations", []):
        if entry.get("model", "").startswith("BERT-base"):
            return f"{entry['time_ratio']:.2f} (seq {entry['s']}, batch {entry['b']}, `make bench`)"
    return "not measured"


def markdown(report: dict) -> str:
    """The report as a Markdown page: the machine, then one section per part."""
    rows = report["rows"]
    capability = ".".join(str(n) for n in report["capability"])
    lines = [
        "# GPU check: the course on a GPU",
        "",
        "Written by `make gpu-check` (tools/gpu_check.py). "
        f"GPU: {report['gpu']} ({format_bytes(report['gpu_memory_bytes'])}, compute capability "
        f"{capability}); torch {report['torch']} (CUDA {report['cuda']}); transformers "
        f"{report['transformers']}; {report['seconds']:.0f} s in all, budget {report['budget']:.0f} s.",
        "",
        "## 1. Every lesson, Run All on the GPU machine",
        "",
        "| notebook | status | Run All (s) | CUDA used | peak CUDA allocated | kernel peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for r in (r for r in rows if r["part"] == "lessons"):
        peak = r.get("cuda_peak_allocated")
        used = {True: "yes", False: "no"}.get(r.get("cuda_used"), "")
        lines.append(
            f"| {r['step']} | {r['status']}{': ' + r['error'] if r.get('error') else ''} | "
            f"{r.get('run_all_s', '')} | {used} | {format_bytes(peak) if peak is not None else ''} | "
            f"{format_bytes(r['kernel_peak_rss']) if r.get('kernel_peak_rss') else ''} |"
        )
    lines += [
        "",
        "Lesson 09's processes talk over gloo on the CPU here, as on a laptop: the lesson keeps gloo so "
        "that it runs anywhere (NCCL needs one GPU per process).",
    ]
    for r in (r for r in rows if r.get("printed")):
        lines += ["", f"What {r['step']} printed on the GPU (its offload and peak measurements):", "", "```"]
        lines += [*r["printed"], "```"]
    study = [r for r in rows if r["part"] == "checkpointing"]
    lines += [
        "",
        f"## 2. Checkpointing at a real width: {STUDY_MODEL} shape, batch {STUDY_SHAPE[0]}, "
        f"sequence {STUDY_SHAPE[1]}",
        "",
        f"{STUDY_STEPS} AdamW steps each; the step time is the median after the first. Time ratio: with "
        f"checkpointing over without, beside Chen et al.'s about {CHEN_TIME:.2f} and this CPU's "
        f"{_cpu_time_ratio()}.",
        "",
        "| attention | precision | peak without | peak with | saved | step without (ms) | "
        "step with (ms) | time ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for attention in ATTENTIONS:
        for precision in PRECISIONS:
            pair = {
                r.get("checkpointing"): r
                for r in study
                if r.get("attention") == attention and r.get("requested") == precision
            }
            off, on = pair.get(False, {}), pair.get(True, {})
            if not off and not on:
                continue
            shown = off.get("precision") or on.get("precision") or precision

            def peak(r):
                return (
                    format_bytes(r["peak_bytes"]) if r.get("peak_bytes") is not None else r.get("status", "")
                )

            def ms(r):
                return f"{1000 * r['step_s']:.1f}" if r.get("step_s") is not None else r.get("status", "")

            saved = (
                f"{1 - on['peak_bytes'] / off['peak_bytes']:.0%}"
                if on.get("peak_bytes") and off.get("peak_bytes")
                else ""
            )
            ratio = f"{on['step_s'] / off['step_s']:.2f}" if on.get("step_s") and off.get("step_s") else ""
            cells = [attention, shown, peak(off), peak(on), saved, ms(off), ms(on), ratio]
            lines.append("| " + " | ".join(cells) + " |")
    planner = [r for r in rows if r["part"] == "planner" and "estimate_modelled_bytes" in r]
    lines += [
        "",
        "## 3. The planner against real steps",
        "",
        f"Peak `torch.cuda.max_memory_allocated()` over {PLANNER_STEPS} AdamW steps against "
        '`effitrain_lessons.will_it_fit.plan.estimate(..., device="cuda")`: modelled is the estimate '
        "without its "
        "allowance, total with it. 16-bit rows are autocast over fp32 weights.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in planner:
        measured = r["measured_peak_bytes"]
        cells = [
            r["model"],
            r["batch"],
            r["seq"],
            r["precision"],
            r["attention"],
            "on" if r["checkpointing"] else "off",
            format_bytes(r["estimate_modelled_bytes"]),
            format_bytes(measured) if measured is not None else r["status"],
            f"{r['ratio']:.2f}" if r["ratio"] is not None else "",
            format_bytes(r["estimate_total_bytes"]),
            ("yes" if measured <= r["estimate_total_bytes"] else "no") if measured is not None else "",
            f"{r['seconds']:.1f}",
        ]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    ratios = [r["ratio"] for r in planner if r["ratio"] is not None]
    if ratios:
        within = sum(
            r["measured_peak_bytes"] <= r["estimate_total_bytes"] for r in planner if r["ratio"] is not None
        )
        lines += [
            "",
            f"Measured / modelled from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} rows; "
            f"{within} of {len(ratios)} within the estimate's total.",
        ]
    lines += _autocast_section([r for r in rows if r["part"] == "autocast" and "ratio" in r])
    left = [r for r in rows if r["status"] != "ok"]
    if left:
        lines += ["", "## Not run, or not ok", ""]
        lines += [
            f"- [{r['part']}] {r['step']}: {r['status']}{': ' + r['error'] if r.get('error') else ''}"
            for r in left
        ]
    return "\n".join(lines) + "\n"


def _autocast_section(rows: list[dict]) -> list[str]:
    """Part 4 of the report: each row's measured and planned bytes, and whether it is within the goal."""
    lines = [
        "",
        "## 4. What autocast saves on the GPU, against the planner's CUDA rules",
        "",
        'One forward pass under `torch.autocast("cuda", ...)`, its saved tensors counted with saved-tensor '
        "hooks (`mixed_precision.measure.saved_in_forward`: each storage once, the parameters left out), "
        'against `plan.estimate(..., device="cuda")`: its activations and 16-bit weight copies. '
        f"Goal: within {AUTOCAST_GOAL:.0%}; a row within it settles the planner's predicted label for its "
        "setting.",
        "",
        "| model | batch | seq | precision | attention | checkpointing | copies measured | copies planned "
        "| activations measured | activations planned | measured / planned | within |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r["ratio"]
        cells = [
            r["model"],
            r["batch"],
            r["seq"],
            r["precision"],
            r["attention"],
            "on" if r["checkpointing"] else "off",
            format_bytes(r["measured_copies_bytes"]),
            format_bytes(r["planned_copies_bytes"]),
            format_bytes(r["measured_activation_bytes"]),
            format_bytes(r["planned_activation_bytes"]),
            f"{ratio:.3f}" if ratio is not None else "",
            ("yes" if abs(ratio - 1) <= AUTOCAST_GOAL else "no") if ratio is not None else "",
        ]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return lines


def write_report(report: dict, out: Path) -> list[Path]:
    """Write `report` as out/GPU_CHECK.md and out/gpu_check.json; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / MARKDOWN, out / JSON]
    paths[0].write_text(markdown(report), encoding="utf-8")
    paths[1].write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks", help="folder for the report (benchmarks/)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=BUDGET_S,
        help=f"seconds after which no step starts; the steps left are recorded (default: {BUDGET_S:.0f})",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="on any machine: list the steps and their expected time, check what they need, "
        "and run each part's code on the CPU at a tiny size; writes nothing",
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        return dry_run(steps(capability_here()))
    if not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    start = time.perf_counter()
    rows = run(steps(capability_here()), args.budget)
    report = {
        **machine(),
        "budget": args.budget,
        "seconds": round(time.perf_counter() - start, 1),
        "rows": rows,
    }
    for path in write_report(report, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
