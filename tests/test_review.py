"""The static review of an answer cell (`review.review_answer`): honest answers earn no flag, whatever
names they import things under; each way a red team reached the grader from an answer earns one.

Plain unit tests on source text: nothing runs, nothing is graded.
"""

import json
from types import SimpleNamespace

import pytest

from effitrain_lessons.course import review
from effitrain_lessons.course.lessons import ROOT, SOLUTION_TAG, edition_paths, lesson_names, load_lesson


def flags(source: str) -> list[str]:
    return review.review_answer(source)


def flagged(source: str, phrase: str) -> bool:
    return any(phrase in found for found in flags(source))


# ---------------------------------------------------------------------------------------------
# Honest answers


HONEST_ALIASES = [
    "import torch as tt\nx = tt.randn(3, 4)\ny = tt.nn.functional.relu(x).sum()\n",
    "import numpy as np\na = np.zeros((2, 3))\na[0, 1] = np.pi\n",
    "from torch import nn as N\nlayer = N.Linear(4, 4)\nlayer.weight.requires_grad = False\n",
    "import torch.nn.functional as F\n\ndef act(x):\n    return F.relu(x) + F.gelu(x)\n",
    "import torch.utils.checkpoint as ck\n\ndef checkpointed_block(x):\n"
    "    return ck.checkpoint(block, x, use_reentrant=False)\n",
    "from torch.utils.checkpoint import checkpoint as cp\n\ndef checkpointed_block(x):\n"
    "    return cp(block, x, use_reentrant=False)\n",
    "import math as m\n\ndef tensor_bytes(shape, dtype):\n    return m.prod(shape) * dtype.itemsize\n",
    "import torch as tt\nimport math\n\ndef tensor_bytes(shape, dtype):\n"
    "    return math.prod(shape) * tt.empty((), dtype=dtype).element_size()\n",
]

HONEST_UNUSUAL = [
    # comprehensions, helpers, a generator
    "def choose_segments(n_blocks):\n    costs = {k: n_blocks / k + k - 1 for k in range(1, n_blocks + 1)}\n"
    "    return min(costs, key=costs.get)\n",
    "def helper(x):\n    return x * 2\n\n\ndef outer(values):\n    return [helper(v) for v in values if v]\n",
    "def squares(n):\n    yield from (i * i for i in range(n))\n",
    # functools, math, operator with literal names
    "import functools\nimport math\n\nscale = functools.partial(math.prod, start=2)\n"
    "total = functools.reduce(lambda a, b: a + b, [1, 2, 3])\n",
    "from functools import partial\n\ndef tensor_bytes(shape, dtype):\n"
    "    count = partial(math.prod)\n    return count(shape) * dtype.itemsize\n",
    "import operator\nkey = operator.attrgetter('weight')\nsorted_layers = sorted(layers, key=key)\n",
    # a module with forward, no_grad, f-strings in prints
    "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self, width):\n"
    "        super().__init__()\n        self.linear = nn.Linear(width, width)\n\n"
    "    def forward(self, x):\n        return torch.relu(self.linear(x))\n",
    "import torch\n\nwith torch.no_grad():\n    out = model(batch)\n"
    "print(f'loss {out.loss:.3f}, shape {tuple(out.logits.shape)}')\n",
    "@torch.no_grad()\ndef evaluate(model, batch):\n    return model(**batch).loss.item()\n",
    # getattr and setattr-free attribute work on the learner's own objects
    "heads = getattr(model.config, 'num_attention_heads', 12)\nmodel.config.use_cache = False\n",
    "def turn_on_checkpointing(model):\n    model.gradient_checkpointing_enable()\n"
    "    model.config.use_cache = False\n",
    "x = torch.randn(3, requires_grad=True)\nx.grad = None\n"
    "weights = {name: p.shape for name, p in model.named_parameters()}\n",
    # names that are also module names or built-ins, used as the learner's own variables
    "signal = torch.randn(16)\nsignal[0] = 0.0\n\ndef scaled(input, filter=None):\n    return input * 2\n",
    "from dataclasses import dataclass\n\n\n@dataclass\nclass Plan:\n"
    "    batch: int\n    accumulation: int = 1\n",
    "%time x = 1\n",
    "def fixed_loop(accelerator, model, optimizer, dataloader):\n    for batch in dataloader:\n"
    "        with accelerator.accumulate(model):\n            accelerator.backward(model(**batch).loss)\n"
    "            optimizer.step()\n            optimizer.zero_grad()\n",
    "def predicted(micro_batches, k):\n"
    "    '''How many synchronizations: one every k steps, plus the last.'''\n"
    "    return micro_batches // k + 1\n",
]


@pytest.mark.parametrize("source", HONEST_ALIASES + HONEST_UNUSUAL)
def test_honest_answers_earn_no_flag(source):
    assert flags(source) == []


def solution_answer_cells():
    """Every answer cell of every solution edition, English and Turkish (the cells Otter tags)."""
    for name in lesson_names():
        answers = load_lesson(name).answers
        for kind in ("solution", "solution_tr"):
            notebook = json.loads((ROOT / edition_paths(name)[kind]).read_text(encoding="utf-8"))
            for cell in notebook["cells"]:
                tags = cell.get("metadata", {}).get("tags", [])
                if cell["cell_type"] == "code" and SOLUTION_TAG in tags:
                    assert cell["id"] in answers, (name, kind, cell["id"])
                    yield f"{kind}/{name}/{cell['id']}", "".join(cell["source"])


def test_solution_answers_earn_no_flag():
    cells = dict(solution_answer_cells())
    assert len(cells) >= 2 * sum(len(load_lesson(name).answers) for name in lesson_names())
    assert {where: flags(source) for where, source in cells.items() if flags(source)} == {}


def test_an_alias_is_judged_by_what_it_names():
    assert flags("import os as o") == ["imports os"]
    assert flags("import sys as tt\ntt.path") == ["imports sys"]
    assert flags("from os import path as p") == ["imports os"]
    assert flags("import torch as tt\ntt.testing.assert_close = print") == [
        "assigns torch.testing.assert_close"
    ]


# ---------------------------------------------------------------------------------------------
# What the red team used


STACK_WALK = """
import logging

def tensor_bytes(shape, dtype):
    frame = logging.sys._getframe(1)
    while frame is not None:
        scope = getattr(frame, "f_" + "locals")
        if "run_" + "case" in scope:
            cells = getattr(scope["run_" + "case"], "__clo" + "sure__")
        frame = getattr(frame, "f_" + "back")
    return 7
"""


@pytest.mark.parametrize(
    "source",
    [
        "logging.sys._getframe(1)",
        "import logging\nlogging.sys",
        "import traceback\nframe = traceback.sys._getframe(0)",
        "getattr(logging, 'sys')._getframe",
        "from logging import sys as s",
        "x = torch.os",
        "operator.attrgetter('sys')(logging)",
        "cs = collections._sys",  # a module's private name for sys
    ],
)
def test_sys_reached_through_another_module_is_flagged(source):
    assert flagged(source, "through another module"), flags(source)


@pytest.mark.parametrize(
    "source, phrase",
    [
        ("logging.sys._getframe(1)", "reads the call stack (_getframe)"),
        ("x = __import__('sys')\nframe = x._getframe(2)", "reads the call stack (_getframe)"),
        ("frames = s._current_frames()", "reads the call stack (_current_frames)"),
        ("logging.currentframe()", "reads the call stack (currentframe)"),
        ("threading.settrace(f)", "sets a trace function (settrace)"),
        ("t.setprofile(f)", "sets a trace function (setprofile)"),
        ("pkgutil.resolve_name('sys:_getframe')(0)", "reads the call stack (_getframe)"),
        ("objects = g.get_objects()", "walks the garbage collector (get_objects)"),
    ],
)
def test_the_call_stack_and_tracing_are_flagged_under_any_name(source, phrase):
    assert phrase in flags(source)


@pytest.mark.parametrize(
    "source",
    [
        'getattr(frame, "f_" + "back")',
        'getattr(fn, "__clo" + "sure__")',
        "getattr(frame, f'f_{part}')",
        "getattr(frame, ''.join(['f_', 'back']))",
        "name = 'f_' + 'back'\ngetattr(frame, name)",
        "vars(frame)[name]",
        "frame.__dict__[key]",
        "globals()[key]",
        "operator.attrgetter(name)(frame)",
        "functools.reduce(getattr, names, frame)",
        "g = getattr\ng(frame, name)",
        "getattr(*pair)",
    ],
)
def test_attribute_names_built_at_run_time_are_flagged(source):
    assert flagged(source, "reads an attribute by a computed name"), flags(source)


@pytest.mark.parametrize(
    "source",
    [
        'setattr(torch.testing, "assert_" + "close", lambda *a, **k: None)',
        "delattr(torch, name)",
        "vars(torch)[name] = print",
    ],
)
def test_attribute_writes_by_a_computed_name_are_flagged(source):
    assert flagged(source, "sets an attribute by a computed name"), flags(source)


INTERNAL_NAMES = [
    "f_back",
    "f_globals",
    "f_locals",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "__closure__",
    "__code__",
    "__globals__",
    "co_consts",
    "__wrapped__",
    "__self__",
    "__func__",
    "cell_contents",
    "__subclasses__",
    "__mro__",
    "__bases__",
]


@pytest.mark.parametrize("name", INTERNAL_NAMES)
def test_frame_code_and_function_internals_are_flagged_however_named(name):
    for source in (f"x = obj.{name}", f"x = getattr(obj, {name!r})", f"setattr(obj, {name!r}, 1)"):
        assert f"reaches into {name}" in flags(source), source


@pytest.mark.parametrize(
    "source, phrase",
    [
        ("torch.testing.assert_close = lambda *a, **k: None", "assigns torch.testing.assert_close"),
        ("np.allclose = lambda *a, **k: True", "assigns numpy.allclose"),
        ("setattr(torch, 'isclose', f)", "assigns torch.isclose"),
        ("torch.__dict__['isclose'] = f", "assigns torch.__dict__[...]"),
        ("vars(torch)['isclose'] = f", "assigns torch.__dict__[...]"),
        ("del torch.isclose", "deletes torch.isclose"),
        ("delattr(torch, 'isclose')", "deletes torch.isclose"),
        ("torch.manual_seed.calls += 1", "assigns torch.manual_seed.calls"),
        ("import torch.testing as T\nT.assert_close = f", "assigns torch.testing.assert_close"),
        ("from torch import testing as T\nT.assert_close = f", "assigns torch.testing.assert_close"),
        ("T = torch.testing\nT.assert_close = f", "assigns torch.testing.assert_close"),
        (
            "import importlib\nimportlib.import_module('torch.testing').assert_close = f",
            "assigns torch.testing.assert_close",
        ),
        ("sys.modules['torch.testing'].assert_close = f", "assigns torch.testing.assert_close"),
        (
            "def patch(m):\n    m.assert_close = f\n\npatch(torch.testing)",
            "assigns torch.testing.assert_close",
        ),
        ("for m in [torch.testing]:\n    m.assert_close = f", "assigns torch.testing.assert_close"),
        (
            "import torch.utils.flop_counter\ntorch.utils.flop_counter.FlopCounterMode.get_total_flops = f",
            "assigns torch.utils.flop_counter.FlopCounterMode.get_total_flops",
        ),
        ("Accelerator.backward = lambda self, loss: None", "assigns Accelerator.backward"),
    ],
)
def test_writes_to_imported_modules_are_flagged_by_their_real_name(source, phrase):
    assert phrase in flags(source), flags(source)


TYPE_BUILT_MODE = (
    'Mode = type("M", (torch.overrides.TorchFunctionMode,), {"__torch_function__": f})\nMode().__enter__()'
)


@pytest.mark.parametrize(
    "source, phrase",
    [
        (TYPE_BUILT_MODE, "builds a class at run time"),
        ("t = type\nMode = t('M', (Base,), {})", "builds a class at run time"),
        ("Mode = type(*parts)", "builds a class at run time"),
        ("Mode = types.new_class('M', (Base,))", "builds a class at run time"),
        ("Mode = Meta('M', (Base,), {'f': g})", "builds a class at run time"),
        ("f = types.FunctionType(code, namespace)", "builds a function at run time"),
    ],
)
def test_classes_and_functions_built_at_run_time_are_flagged(source, phrase):
    assert phrase in flags(source), flags(source)


@pytest.mark.parametrize(
    "source, phrase",
    [
        (TYPE_BUILT_MODE, "uses torch's override machinery (TorchFunctionMode)"),
        (TYPE_BUILT_MODE, "uses torch's override machinery (__torch_function__)"),
        (
            "from torch.overrides import TorchFunctionMode as Quiet\nclass M(Quiet):\n    pass",
            "defines a torch function mode",
        ),
        (
            "class M(torch.utils._python_dispatch.TorchDispatchMode):\n    pass",
            "defines a torch function mode",
        ),
        ("class T(torch.Tensor):\n    __torch_function__ = f", "defines __torch_function__ on a class"),
        ("torch.Tensor.__torch_function__ = f", "uses torch's override machinery (__torch_function__)"),
        ("torch._C._push_on_torch_function_stack(mode)", "reaches torch internals (torch._C)"),
        ("from torch import _C", "reaches torch internals (torch._C)"),
        ("import torch.overrides", "uses torch's override machinery (torch.overrides)"),
        ("lib = torch.library.Library('aten', 'IMPL')", "registers torch kernels (torch.library)"),
    ],
)
def test_torch_function_modes_and_overrides_are_flagged(source, phrase):
    assert flagged(source, phrase), flags(source)


FINDER = """
import sys

class Finder:
    def find_spec(self, name, path, target=None):
        return None

sys.meta_path.insert(0, Finder())
"""


def test_the_import_machinery_is_flagged():
    found = flags(FINDER)
    assert "defines an import finder" in found and "reaches the import machinery (meta_path)" in found
    assert "reaches the import machinery (path_hooks)" in flags("logging.sys.path_hooks.append(hook)")
    assert flagged("class L(importlib.abc.MetaPathFinder):\n    pass", "import machinery")


@pytest.mark.parametrize(
    "source",
    [
        'torch.testing.assert_close = ok; ok.__module__ = "torch.testing"',
        "ok.__qualname__ = 'assert_close'",
        "ok.__name__ = 'assert_close'",
        "setattr(ok, '__module__', 'torch.testing')",
        "@functools.wraps(torch.testing.assert_close)\ndef ok(*args, **kwargs):\n    pass",
        "Quiet = type('Quiet', (), {'__module__': 'torch.testing'})",
    ],
)
def test_relabelled_functions_are_flagged(source):
    assert flagged(source, "relabels a"), flags(source)


def test_the_red_teams_routes_are_each_flagged():
    walk = flags(STACK_WALK)
    assert "reads the call stack (_getframe)" in walk and "reads an attribute by a computed name" in walk
    relabel = flags('torch.testing.assert_close = ok\nok.__module__ = "torch.testing"')
    assert relabel == ["assigns torch.testing.assert_close", "relabels a function"]
    assert "sets an attribute by a computed name" in flags(
        'setattr(torch.testing, "assert_" + "close", lambda *a, **k: None)'
    )
    assert "defines an import finder" in flags(FINDER)


# ---------------------------------------------------------------------------------------------
# Flags stay short, few and stable; no source makes the review fail


def test_flags_are_collapsed_and_capped():
    assert flags("import os\nimport os\nos.getcwd()\nos.getcwd()") == ["imports os"]
    many = "\n".join(f"torch.name_{i} = 1" for i in range(200))
    found = flags(many)
    assert len(found) == review.MAX_FLAGS + 1
    assert found[-1] == f"and {200 - review.MAX_FLAGS} more"


def test_flags_are_one_short_printable_line():
    found = flags(f"get_ipython().run_line_magic('a\\x1b[2J\\nforged line {'x' * 500}', '')")
    assert len(found) == 1
    assert all(c.isprintable() for c in found[0]) and len(found[0]) <= review.MAX_FLAG_CHARS
    assert "\\x1b" in found[0]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(:\n", []),  # not Python: it fails to run, as it fails to parse here
        ("x = 1\0", []),
        ("", []),
        ("-" * 100_000 + "1", [review.TOO_DEEP]),
        ("f" + "()" * 5_000, [review.TOO_DEEP]),
        ("x = " + "(" * 300 + ")" * 300, []),
        ("a" + ".b" * 800, []),
        ("'x' + " * 1_000 + "'y'", []),
    ],
)
def test_no_source_makes_the_review_fail(source, expected):
    assert flags(source) == expected


@pytest.mark.parametrize(
    "source, phrase",
    [
        ("import __main__\n__main__.REACH = {}", "imports __main__"),
        ("w = sys.modules['effitrain_lessons.course.worker']", "names the grader (effitrain_lessons.course)"),
        ("effitrain_lessons.course.worker.REACH.clear()", "reaches the grader (effitrain_lessons.course)"),
        (
            "class Raw:\n    __array_interface__ = {'data': (0, False)}",
            "defines __array_interface__ on a class",
        ),
        ("class Later:\n    def __del__(self):\n        pass", "defines __del__ on a class"),
        ("get_ipython().events.register('post_run_cell', f)", "uses the IPython shell (events)"),
        ("torch.nn.modules.module.register_module_forward_hook(f)", "registers a global hook"),
        ("import pytest\ntensor_bytes = pytest.approx(0, abs=1e12)", "imports pytest"),
        (
            "class Near(float):\n    def __sub__(self, other):\n        return 0.0",
            "defines __sub__ on a class",
        ),
        ("%time torch.testing.assert_close = f", "assigns torch.testing.assert_close"),
        ("%timeit -n 1 -r 1 torch.isclose = f", "assigns torch.isclose"),
        ("%%capture out\nlogging.sys._getframe(0)\n", "reads the call stack (_getframe)"),
    ],
)
def test_other_ways_around_the_tests_are_flagged(source, phrase):
    assert flagged(source, phrase), flags(source)


def test_the_grading_attacks_keep_their_flags():
    """The static flags the hostile class of tests/test_grading.py relies on."""
    assert "imports the grader (effitrain_lessons.course.worker)" in flags(
        "import effitrain_lessons.course.worker as worker\nworker._machinery = lambda report_fd: None\n"
    )
    assert "imports the grader (effitrain_lessons.course)" in flags("from effitrain_lessons import course")
    assert "defines __eq__ on a class" in flags(
        "class E:\n    def __eq__(self, other):\n        return True\n"
    )
    assert "assigns torch.testing.assert_close" in flags(
        "import torch\ntorch.testing.assert_close = lambda *args, **kwargs: None\n"
    )
    assert "imports os" in flags("import os\nos.makedirs('x')")
    assert "imports glob" in flags("import os, glob\nprint(glob.glob('/work/**'))")
    assert "calls setattr()" in flags("setattr(torch, 'equal', print)")
    assert "uses __import__" in flags("__import__('os')")


# ---------------------------------------------------------------------------------------------
# Tools an answer does not need unless its question calls for them (issue 45)


@pytest.mark.parametrize(
    "source, flag",
    [
        (
            "def patched(*args):\n"
            "    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):\n"
            "        return inner(*args)\n\nmodel.forward = patched\n",
            "uses saved-tensor hooks (saved_tensors_hooks)",
        ),
        ("from torch.autograd.graph import save_on_cpu as off\nwith off():\n    y = f(x)", "(save_on_cpu)"),
        (
            "with torch.autograd.graph.disable_saved_tensors_hooks('no'):\n    pass",
            "(disable_saved_tensors_hooks)",
        ),
        (
            "y.grad_fn._raw_saved_self.register_hooks(pack, unpack)",
            "uses saved-tensor hooks (register_hooks)",
        ),
        ("model.forward = patched", "replaces a method on a model (forward)"),
        ("setattr(model, 'forward', patched)", "replaces a method on a model (forward)"),
        (
            "import types\nblock.forward = types.MethodType(run, block)",
            "replaces a method on a model (forward)",
        ),
        ("import types\nbound = types.MethodType(run, block)", "builds a function at run time"),
        (
            "with torch.random.fork_rng():\n    model(x)",
            "saves or restores the random generator's state (fork_rng)",
        ),
        ("state = torch.get_rng_state()\nmodel(x)\ntorch.set_rng_state(state)", "(get_rng_state)"),
        ("torch.cuda.set_rng_state_all(states)", "(set_rng_state_all)"),
        (
            "from concurrent.futures import ThreadPoolExecutor\n\ndef checkpointed_block(x):\n"
            "    with ThreadPoolExecutor(1) as pool:\n        return pool.submit(block, x).result()\n",
            "runs threads or processes (concurrent)",
        ),
        ("import threading\nthreading.Thread(target=run).start()", "runs threads or processes (threading)"),
        ("import asyncio\nasyncio.run(main())", "runs threads or processes (asyncio)"),
        (
            "import torch.multiprocessing as mp\nmp.spawn(run)",
            "runs threads or processes (torch.multiprocessing)",
        ),
        ("future = torch.jit.fork(run, x)", "runs threads or processes (torch.jit.fork)"),
        ("x.register_hook(lambda grad: grad * 1)", "registers a hook (register_hook)"),
        ("model.register_forward_hook(seen)", "registers a hook (register_forward_hook)"),
        ("model.register_forward_pre_hook(seen)", "registers a hook (register_forward_pre_hook)"),
        ("model.register_full_backward_hook(seen)", "registers a hook (register_full_backward_hook)"),
        (
            "p.register_post_accumulate_grad_hook(seen)",
            "registers a hook (register_post_accumulate_grad_hook)",
        ),
        ("model._forward_hooks[7] = seen", "registers a hook (_forward_hooks)"),
        ("torch.nn.modules.module.register_module_forward_hook(seen)", "registers a global hook"),
        ("%time with torch.random.fork_rng(): model(x)", "(fork_rng)"),
    ],
)
def test_tools_that_hide_work_from_the_measurement_are_flagged(source, flag):
    assert flagged(source, flag), flags(source)


@pytest.mark.parametrize(
    "source, flag",
    [
        (
            "from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process\n\n"
            "def steps_per_process(batches_per_epoch, accumulation, epochs, processes):\n"
            "    return optimizer_steps_on_one_process(batches_per_epoch, accumulation, epochs, processes)\n",
            "uses the course's own measurement (optimizer_steps_on_one_process)",
        ),
        (
            "import effitrain_lessons.with_accelerator.train_loop as loop\n"
            "steps = loop.optimizer_steps_on_one_process(10, 2, 1, 2)\n",
            "uses the course's own measurement (optimizer_steps_on_one_process)",
        ),
        (
            "from effitrain_lessons.first_principles.checkpointing import sweep_segments\n\n"
            "def choose_segments(n_blocks):\n    return sweep_segments(n_blocks)\n",
            "uses the course's own measurement (sweep_segments)",
        ),
        # the lesson's own cells import the sweep: calling it needs no import
        (
            "def choose_segments(n_blocks):\n"
            "    sweep = sweep_segments(deep_stack(n_blocks), stack_input())\n"
            "    return sweep.best\n",
            "uses the course's own measurement (sweep_segments)",
        ),
        (
            "from effitrain_lessons import with_accelerator as wa\n"
            "wa.train_loop.optimizer_steps_on_one_process(1, 1, 1, 1)",
            "(optimizer_steps_on_one_process)",
        ),
        (
            "x = effitrain_lessons.will_it_fit.plan.estimate(config)",
            "uses the course's own measurement (estimate)",
        ),
        # lesson 08's prediction, measured: with the lesson's own import, then with the check's
        (
            "def predicted_autocast_bytes(tokens, width, hidden):\n"
            "    block = DeepMLP(width, hidden)\n"
            "    with record_saved(block) as log, torch.autocast('cpu', dtype=torch.bfloat16):\n"
            "        block(torch.randn(tokens, width, requires_grad=True))\n"
            "    return log.total_bytes\n",
            "uses the course's own measurement (record_saved)",
        ),
        (
            "from effitrain_lessons.mixed_precision.measure import saved_bytes\n\n"
            "def predicted_autocast_bytes(tokens, width, hidden):\n"
            "    x = torch.randn(tokens, width)\n"
            "    return saved_bytes(DeepMLP(width, hidden), x, torch.bfloat16).total_bytes\n",
            "uses the course's own measurement (saved_bytes)",
        ),
    ],
)
def test_an_answer_computed_by_the_course_is_flagged(source, flag):
    assert flagged(source, flag), flags(source)


@pytest.mark.parametrize(
    "source",
    [
        "import effitrain_lessons\n",  # a module alone computes nothing
        "from effitrain_lessons.shared.i18n import say\nsay('ready')\n",  # prints, does not measure
        # its own function of the same name
        "def sweep_segments(n):\n    return list(range(1, n + 1))\n\nbest = sweep_segments(4)[-1]\n",
        "torch.manual_seed(0)\nx = torch.randn(3)\n",
        "class Block(nn.Module):\n    def forward(self, x):\n"
        "        return checkpoint(self.inner, x, use_reentrant=False)\n",
        "print(model.forward)\nwith torch.no_grad():\n    out = model.forward(x)\n",
        "state = {'forward': 1}\nstate['forward'] = 2\n",
    ],
)
def test_the_same_words_in_an_honest_answer_earn_no_flag(source):
    assert flags(source) == []


def test_a_question_that_calls_for_a_tool_allows_it_and_only_it():
    source = "with torch.autograd.graph.save_on_cpu():\n    loss = model(x).sum()\nloss.backward()\n"
    assert flags(source) == ["uses saved-tensor hooks (save_on_cpu)"]
    assert review.allowances(source) == {"save_on_cpu"}
    assert review.review_answer(source, allowed=review.allowances(source)) == []
    nested = "with torch.autograd.graph.saved_tensors_hooks(keep, keep):\n    loss = model(x).sum()\n"
    assert review.review_answer(nested, allowed=frozenset({"save_on_cpu"})) == [
        "uses saved-tensor hooks (saved_tensors_hooks)"
    ]
    measured = (
        "def predicted_saved_bytes(sequences, tokens):\n    return measure_step(model, batch).saved_bytes\n"
    )
    assert flags(measured) == []  # a solution measures with it (lesson 02): allowed unless told otherwise
    assert review.review_answer(measured, allowed=frozenset()) == [
        "uses the course's own measurement (measure_step)"
    ]


def master_answer_cells():
    for name in lesson_names():
        for cell in load_lesson(name).cells:
            if cell.answer_for:
                yield name, cell


def test_what_the_solutions_use_is_allowed_only_where_they_use_it():
    """`SOLUTIONS_USE` is what the solutions use (the default allowance); each question's own
    allowance lets its solution pass unflagged, and no other question's."""
    uses = {(name, cell.answer_for): review.allowances(cell.source) for name, cell in master_answer_cells()}
    assert frozenset().union(*uses.values()) == review.SOLUTIONS_USE
    assert {where: used for where, used in uses.items() if used} == {
        ("02_checkpointing_with_trainer", "q_memory_budget"): {"measure_step", "tiny_bert"},
        ("07_checkpoint_your_own_model", "q_choose_blocks"): {"measure_choice"},
    }
    for name, cell in master_answer_cells():
        used = uses[name, cell.answer_for]
        assert review.review_answer(cell.source, allowed=used) == [], (name, cell.id)
        unallowed = review.review_answer(cell.source, allowed=frozenset())
        assert {flag.rsplit("(", 1)[-1].rstrip(")") for flag in unallowed} == used, (name, cell.id)


def test_the_lessons_names_for_the_course_are_the_packages_functions():
    names = review.course_names()
    assert names["sweep_segments"] == "effitrain_lessons.first_principles.checkpointing.sweep_segments"
    assert names["measure_step"] == "effitrain_lessons.shared.memory.measure_step"
    assert "plain" not in names and "train" not in names  # lesson variables of the same names as functions


# ---------------------------------------------------------------------------------------------
# The review's own work is bounded (issue 45)


def test_a_long_cell_of_shell_assignments_is_read_in_linear_time(monkeypatch):
    """4,000 `a = !b` lines (28 KB) took IPython's transformer minutes, and no flag: each round here
    reads the cell once, and two rounds read it all."""
    from IPython.core import inputtransformer2

    def quadratic(*args):
        raise AssertionError("IPython's one-line-at-a-time transform ran")

    review.course_names()  # read the lessons first (once a session): only the cell is counted here
    readings = []
    tokens = inputtransformer2.make_tokens_by_line
    monkeypatch.setattr(inputtransformer2.TransformerManager, "do_one_token_transform", quadratic)
    monkeypatch.setattr(
        inputtransformer2, "make_tokens_by_line", lambda lines: readings.append(1) or tokens(lines)
    )
    source = "a = !b\n" * 4_000
    assert len(source) == 28_000
    assert flags(source) == ["runs shell commands (!)"]
    assert len(readings) == 2
    assert review.python_source(source).count("get_ipython().getoutput('b')") == 4_000


SPECIAL_CELLS = [
    "a = !b\n%time x = 1\n%%capture out\nfoo\n",
    "%%capture out\nimport os\n",
    "x?\nfoo??\n!ls\n",
    '!echo """\n!rm x\ny = 1\n',
    '!echo """\n' * 6 + "import os\n",
    "x = (1,\n!ls\n)\n",
    "!echo a \\\n b\n!ls",
    "    x = 1\n    !ls\n",
    ">>> x = 1\n>>> !ls\n",
    "%time?\n",
    "def f():\n    !ls\n    x = %pwd\n    return x\n",
    "s = '''\n!rm\n'''\n!ok\n",
    "/print a b\n,print a b\n;print a b\n",
    "x = 1 # !ls\n!!ls\n",
    "files = !ls -la \\\n  /tmp\nprint(files)\n",
    "if True:\n    %time y = 2\nelse:\n    !!ls\n",
]


@pytest.mark.parametrize("source", SPECIAL_CELLS + HONEST_ALIASES + HONEST_UNUSUAL)
def test_the_linear_reading_is_ipythons(source):
    from IPython.core.inputtransformer2 import TransformerManager

    assert review.python_source(source) == TransformerManager().transform_cell(source)


def test_a_review_out_of_time_says_so_and_keeps_what_it_found(monkeypatch):
    """The clock runs out as the walk over the syntax tree begins: what it read is kept."""
    walking = []
    run = review._Review.run
    monkeypatch.setattr(review._Review, "run", lambda self: walking.append(1) or run(self))
    monkeypatch.setattr(review, "time", SimpleNamespace(monotonic=lambda: 1e9 if walking else 0.0))
    found = flags("import os\n" + "x = 1\n" * 2_000 + "import ctypes\n")
    assert found == ["imports os", review.TOO_LONG]


def test_a_cell_that_cannot_be_read_in_time_is_flagged():
    """Each `!ls (` hides the rest of the cell from one reading (as it does from IPython's): one
    round a line, until the time runs out."""
    assert review.review_answer("!ls (\n" * 2_000, seconds=0.5) == [review.TOO_LONG]
    assert review.parse("!ls (\n" * 2_000, seconds=0.5) is None


def test_a_cell_too_long_to_read_is_flagged_unread():
    source = "x = 1\n" * (review.MAX_REVIEW_CHARS // 6 + 1)
    assert review.review_answer(source) == [review.TOO_LONG]
    assert review.parse(source) is None
    assert review.review_answer(source[: review.MAX_REVIEW_CHARS - review.MAX_REVIEW_CHARS % 6]) == []


@pytest.mark.parametrize("lines", [499, 500])
def test_the_grading_kernel_gives_up_on_a_cell_where_ipython_does(lines):
    """IPython turns at most 500 special lines of a cell into calls, one reading of the whole cell
    each, then raises; the grading kernel counts them in linear time and gives up at the same line."""
    from IPython.core.inputtransformer2 import TransformerManager

    source = "a = !b\n" * lines
    python, turned = review.ipython_cell(source)
    assert turned == lines
    if turned < review.IPYTHON_TRANSFORM_LIMIT:
        assert python == TransformerManager().transform_cell(source)
    else:
        with pytest.raises(RuntimeError, match="still changing after 500 iterations"):
            TransformerManager().transform_cell(source)


@pytest.mark.parametrize("source", SPECIAL_CELLS)
def test_the_count_of_special_lines_is_ipythons_count_of_transforms(source):
    from IPython.core.inputtransformer2 import TransformerManager

    manager, counted = TransformerManager(), []
    one = manager.do_one_token_transform

    def counting(lines):
        changed, lines = one(lines)
        counted.append(changed)
        return changed, lines

    manager.do_one_token_transform = counting
    assert review.ipython_cell(source) == (manager.transform_cell(source), sum(counted))
