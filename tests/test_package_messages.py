"""What the measuring modules show a learner comes from the runtime catalog, and stays English without one.

A made-up catalog marks each message of these modules as `TR[...]`, so a text that escaped the
catalog shows up unmarked; the real Turkish catalog is not needed (nor read) here.
"""

import re
from pathlib import Path

import polib
import pytest
import torch

from effitrain_lessons.course.translate import runtime_messages
from effitrain_lessons.first_principles import checkpointing
from effitrain_lessons.shared import i18n, tracing
from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.distributed_runs import ProcessReport, RunConfig
from effitrain_lessons.shared.memory import measure_step
from effitrain_lessons.with_accelerator.train_loop import TrainingRun

ROOT = Path(__file__).resolve().parents[1]
MODULES = tuple(
    f"effitrain_lessons/{name}.py"
    for name in (
        "shared/memory",
        "shared/tracing",
        "first_principles/checkpointing",
        "shared/distributed_runs",
        "shared/processes",
        "local_sgd/runs",
        "with_accelerator/train_loop",
        "with_trainer/trainer",
        "shared/finetuning",
        "shared/device",
        "shared/data",
        "shared/models",
        "shared/metrics",
        "shared/hub",
        "shared/arguments",
        "will_it_fit/plan",
        "will_it_fit/recompute",
        "first_principles/reports",
        "with_trainer/reports",
        "with_accelerator/reports",
        "local_sgd/reports",
        "diloco/reports",
        "will_it_fit/compare",
        "own_model/measure",
    )
)


@pytest.fixture
def marked(tmp_path, monkeypatch):
    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for message in runtime_messages(ROOT):
        if any(where.startswith(MODULES) for where in message.where.split()):
            catalog.append(polib.POEntry(msgid=message.text, msgstr=f"TR[{message.text}]"))
    folder = tmp_path / "tr" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    catalog.save_as_mofile(str(folder / f"{i18n.DOMAIN}.mo"))
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")
    i18n._catalog.cache_clear()
    yield
    i18n._catalog.cache_clear()


def shown():
    """A few of the texts these modules show: a traced step's table, a sweep's line, a run's label, ..."""
    inputs = checkpointing.abc_inputs(batch=4, width=8)
    trace = tracing.trace_step(checkpointing.abc, inputs, names=checkpointing.ABC_OPS)
    stack = checkpointing.deep_stack(4, 8)
    sweep = checkpointing.sweep_segments(stack, checkpointing.stack_input(stack, 4), repeats=1)
    report = measure_step(torch.nn.Linear(4, 4), torch.randn(2, 4))
    try:
        whole_numbers(steps=0)
    except ValueError as error:
        refusal = str(error)
    return [
        str(trace.table()),
        str(checkpointing.compare_traces({"plain": trace})),
        sweep.describe(2),
        str(report.table()),
        RunConfig(accumulation=2).label,
        ProcessReport(rank=0, num_processes=2, distributed_type="MULTI_CPU", config={}).describe(),
        str(TrainingRun().table()),
        refusal,
    ]


def test_the_texts_come_from_the_catalog(marked):
    trace, compared, line, report, label, process, run, refusal = shown()
    assert "TR[held by]" in trace and "TR[autograd (saved-tensor hooks)]" in trace
    assert "TR[recomputed during backward:    TR[nothing]]" in trace
    assert "TR[A recomputed]" in compared and "plain" in compared  # the caller's label: not in this catalog
    assert line.startswith("TR[k = 2: keeps ")
    assert "TR[saved activations]" in report and "TR[peak GPU memory]" in report
    assert label == "TR[TR[data parallel], accumulation 2]"
    assert process == "TR[process 0 of 2: distributed_type=MULTI_CPU, num_processes=2]"
    assert "TR[optimizer steps]" in run
    assert refusal == "TR[steps must be a whole number of at least 1, got 0.]"


def test_without_a_translation_the_english_is_unchanged(tmp_path, monkeypatch):
    english = shown()
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)  # a Turkish edition whose catalog is empty
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")
    i18n._catalog.cache_clear()
    try:
        turkish = shown()
    finally:
        i18n._catalog.cache_clear()
    # the timings differ from run to run: compare everything but the lines that hold them; the numbers
    # are Turkish (tests/test_turkish_numbers.py), the words English
    assert [_without_times(_words(text)) for text in turkish] == [
        _without_times(_words(text)) for text in english
    ]
    assert english[4] == "data parallel, accumulation 2" and english[2].startswith("k = 2: keeps ")


def _words(text: str) -> str:
    """`text` with its numbers' marks taken out (1,234.5 and 1.234,5 and 15% and %15 read alike)."""
    return re.sub(r"(?<=\d)[.,](?=\d)|%", "", text)


def _without_times(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "time" not in line and "seconds" not in line)


def test_the_planners_lines_and_verdicts_come_from_the_catalog(marked):
    from effitrain_lessons.will_it_fit import plan

    table = str(plan.estimate("gpt2", batch=2, seq=64, checkpointing=True))
    assert (
        "TR[parameters]" in table
        and "TR[one layer recomputed]" in table
        and "TR[not modelled (allowance)]" in table
    )
    assert "TR[checkpointing {checkpointing}]" not in table and "TR[on]" in table
    assert plan.verdict("gpt2", "A100-80GB", batch=2, seq=64).sentence().startswith("TR[A100-80GB: fits")
    refused = plan.verdict("gpt2", "8GiB", batch=8, seq=1024).sentence()
    assert refused.startswith("TR[8GiB: does not fit") and "TR[checkpointing]" in refused
