"""What an answer cell reaches for, read from its source before it runs (flags for the instructor).

An exercise's answer is a few lines of PyTorch; none of them needs the operating system, the
interpreter's internals or the grader. `review_answer(source)` lists what a cell reaches for beyond
that, one short phrase each ("imports ctypes", "assigns torch.testing.assert_close", "defines __eq__
on a class"), at most `MAX_FLAGS` and then one "and N more". The grader reports these as flags for
review; they never change a score by themselves. The worker adds what an audit hook sees at run time.

What it catches, wherever the names come from (an alias, an assignment, `getattr` with a literal
name, `sys.modules[...]`, a function's parameter the cell passes a module to):
- imports of system and grading modules, of torch's overrides, kernels library and private parts;
  `sys`, `os`, `gc`, `inspect`, `builtins` ... reached as an attribute of another module
  (`logging.sys`); the call stack (`_getframe`, `currentframe`), trace and profile functions,
  garbage collector walks, the import machinery (`meta_path`, classes with `find_spec`);
- interpreter internals (`__globals__`, `__closure__`, `f_back`, `co_consts`, `__wrapped__`, ...)
  as attributes, as literal names given to `getattr` and the like, or inside any string;
- attribute names built at run time (`getattr(x, "f_" + "back")`, `vars(x)[name]`, `getattr` passed
  around as a value);
- writes to an imported module's or a library class's attributes (`assigns torch.isclose`,
  `deletes ...`), classes and functions built at run time (`type(name, bases, namespace)`,
  `types.FunctionType`), torch function and dispatch modes, functions relabelled through
  `__module__`, `__qualname__` or `functools.wraps`, the IPython shell's own objects;
- `eval`, `exec`, `compile`, `__import__`, `setattr`, `open`, shell escapes and magics, classes that
  redefine comparison or `__torch_function__`, redefined built-ins, paths such as `/proc`;
- tools no answer of this course needs unless its question calls for them, each a way to hide work
  from the course's measuring hooks and modes or to replay it unseen: saved-tensor hooks
  (`saved_tensors_hooks`, `save_on_cpu`), threads and processes, the random generator's state saved
  or restored (`fork_rng`), tensor and module hooks, a model's `forward` replaced, and the course's
  own functions (`optimizer_steps_on_one_process`, `sweep_segments`: what computes a reference).
  `allowances(instructor_cell)` says which of them a question's own answer uses; passed as
  `allowed`, they are not flagged for that question.

The review's own work is bounded: IPython's `%`/`!` syntax is read in linear time, a cell over
`MAX_REVIEW_CHARS` is not read, and the whole review stops after `REVIEW_SECONDS`; either way the
flag "is too long to review in time" says so, after the flags found until then.

An alias is judged by what it names: `import torch as tt` and `tt.randn(...)` are as ordinary as
`torch.randn(...)`; `import os as o` is "imports os".

What a static review cannot see: what exists only at run time. It follows a module through imports,
assignments, default values, `getattr` with a literal name, `sys.modules[...]` and the cell's own
function calls; not through what a library call returns, a container, a lambda's parameter or a
name another cell bound. A name assembled at run time is flagged as computed, never resolved. Code
a library runs on the answer's behalf (a hook, a callback, a string it evaluates) shows only as the
call that hands it over. So the flags make a suspicious answer visible to the instructor; they do
not prove an unflagged answer honest, and no score may rest on them.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import time
from pathlib import Path

MAX_FLAGS = 50
MAX_FLAG_CHARS = 120
TOO_DEEP = "is nested too deeply to read"
TOO_LONG = "is too long to review in time"
COMPUTED_READ = "reads an attribute by a computed name"
COMPUTED_WRITE = "sets an attribute by a computed name"
BUILDS_CLASS = "builds a class at run time"
BUILDS_FUNCTION = "builds a function at run time"
RELABELS = "relabels a function"

SYSTEM_MODULES = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "ctypes",
        "gc",
        "inspect",
        "builtins",
        "importlib",
        "threading",
        "_thread",
        "multiprocessing",
        "signal",
        "socket",
        "shutil",
        "pathlib",
        "io",
        "pickle",
        "marshal",
        "types",
        "atexit",
        "code",
        "codeop",
        "doctest",
        "unittest",
        "otter",
        "IPython",
        "ipykernel",
        "json",
        "pty",
        "resource",
        "mmap",
        "sysconfig",
        "site",
        "runpy",
        "tempfile",
        "glob",
        "fcntl",
        "posix",
        "_posixsubprocess",
        "faulthandler",
        "tracemalloc",
        "dis",
        "pdb",
        "bdb",
        "traceback",
        "weakref",
        "asyncio",
        "select",
        "urllib",
        "http",
        "requests",
        "pkgutil",
        "pydoc",
        "zipimport",
        "__main__",
        "pytest",  # `pytest.approx(..., abs=1e9)` equals anything
        "_pytest",
        "mock",
    }
)
GRADER_MODULES = ("effitrain_lessons.course",)
# Names an answer may use without importing them (the lesson's cells import them): what they name.
KNOWN_NAMES = {
    **{name: name for name in SYSTEM_MODULES},
    **{
        name: name
        for name in (
            "torch",
            "numpy",
            "transformers",
            "accelerate",
            "effitrain_lessons",
            "functools",
            "math",
            "operator",
            "itertools",
            "collections",
            "logging",
            "warnings",
        )
    },
    "np": "numpy",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "get_ipython": "IPython.get_ipython",
}
# Modules whose name, as an attribute of another module, is a way to reach them unseen (also with a
# leading underscore: `collections._sys`).
REACHED_THROUGH = frozenset(
    {
        "sys",
        "os",
        "gc",
        "inspect",
        "builtins",
        "ctypes",
        "subprocess",
        "importlib",
        "threading",
        "_thread",
        "marshal",
        "pickle",
        "posix",
        "traceback",
    }
)
RISKY_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "globals",
        "vars",
        "setattr",
        "delattr",
        "open",
        "breakpoint",
        "get_ipython",
        "input",
        "memoryview",
        "locals",
    }
)
INTERNALS = frozenset(
    {
        "__globals__",
        "__code__",
        "__closure__",
        "__dict__",
        "__class__",
        "__subclasses__",
        "__base__",
        "__bases__",
        "__mro__",
        "mro",
        "__builtins__",
        "__import__",
        "__self__",
        "__func__",
        "__wrapped__",
        "__get__",
        "__objclass__",
        "__defaults__",
        "__kwdefaults__",
        "__loader__",
        "__spec__",
        "cell_contents",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "__traceback__",
        "co_code",
        "co_consts",
        "co_names",
        "co_varnames",
        "co_freevars",
        "co_cellvars",
        "co_filename",
        "co_name",
        "co_qualname",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__init_subclass__",
        "__set_name__",
        "__array_interface__",
        "__array_struct__",
        "__cuda_array_interface__",
    }
)
# Attribute names, each a way into what the tests run on, and the phrase that names it.
STACK = frozenset(
    {
        "_getframe",
        "_getframemodulename",
        "_current_frames",
        "_current_exceptions",
        "currentframe",
        "getouterframes",
        "getinnerframes",
        "walk_stack",
        "walk_tb",
    }
)
TRACING = frozenset(
    {
        "settrace",
        "setprofile",
        "settrace_all_threads",
        "setprofile_all_threads",
        "call_tracing",
        "addaudithook",
    }
)
GC_WALKS = frozenset({"get_objects", "get_referrers", "get_referents"})
IMPORT_MACHINERY = frozenset(
    {"meta_path", "path_hooks", "path_importer_cache", "MetaPathFinder", "PathEntryFinder", "SourceLoader"}
)
FINDER_METHODS = frozenset({"find_spec", "find_module", "exec_module", "create_module", "load_module"})
TORCH_MODES = frozenset({"TorchFunctionMode", "TorchDispatchMode", "BaseTorchFunctionMode"})
TORCH_OVERRIDES = TORCH_MODES | frozenset(
    {
        "__torch_function__",
        "__torch_dispatch__",
        "_push_on_torch_function_stack",
        "_pop_torch_function_stack",
        "_push_on_torch_dispatch_stack",
        "_pop_torch_dispatch_stack",
        "_set_torch_function_mode",
        "enable_torch_function_mode",
        "push_torch_function_mode",
        "handle_torch_function",
        "has_torch_function",
        "DisableTorchFunction",
        "DisableTorchFunctionSubclass",
        "_disabled_torch_function_impl",
        "_DisableTorchDispatch",
        "_EnableTorchFunction",
        "_python_dispatch",
        "py_impl",
    }
)
GLOBAL_HOOKS = frozenset(
    {
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_module_backward_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
        "register_module_buffer_registration_hook",
        "register_module_module_registration_hook",
        "register_module_parameter_registration_hook",
        "excepthook",
        "displayhook",
        "breakpointhook",
        "unraisablehook",
    }
)
LABELS = frozenset({"__module__", "__qualname__", "__name__"})
CONTEXT_BY_HAND = frozenset({"__enter__", "__exit__"})
# Functions that take an attribute's name: where the name sits among their arguments.
NAME_TAKERS = {
    "builtins.getattr": (1,),
    "builtins.setattr": (1,),
    "builtins.delattr": (1,),
    "inspect.getattr_static": (1,),
    "operator.attrgetter": None,  # every argument
    "operator.methodcaller": (0,),
}
SETTERS = frozenset({"builtins.setattr", "builtins.delattr"})
CLASS_BUILDERS = frozenset(
    {
        "builtins.type",
        "types.new_class",
        "types.prepare_class",
        "builtins.type.__new__",
        "builtins.type.__call__",
    }
)
FUNCTION_BUILDERS = frozenset(
    {"types.FunctionType", "types.LambdaType", "types.CodeType", "types.MethodType"}
)
IMPORTERS = frozenset({"builtins.__import__", "importlib.import_module", "importlib.__import__"})
# Methods a class may define that the tests would call unseen: comparisons and what a tolerance check
# computes (`abs(a - b)`), conversions, copies, finalizers, torch and NumPy protocols.
COMPARISON_DUNDERS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__len__",
        "__contains__",
        "__instancecheck__",
        "__subclasscheck__",
        "__class__",
        "__getattr__",
        "__getattribute__",
        "__index__",
        "__int__",
        "__float__",
        "__torch_function__",
        "__torch_dispatch__",
        "__array__",
        "__array_function__",
        "__array_interface__",
        "__array_ufunc__",
        "__array_wrap__",
        "__array_finalize__",
        "__sub__",
        "__rsub__",
        "__abs__",
        "__neg__",
        "__round__",
        "__del__",
        "__init_subclass__",
        "__set_name__",
        "__copy__",
        "__deepcopy__",
        "__reduce__",
        "__reduce_ex__",
    }
)
SHELL_MAGICS = frozenset({"system", "getoutput", "run_line_magic", "run_cell_magic"})
BENIGN_MAGICS = frozenset({"time", "timeit", "matplotlib", "pinfo", "who", "whos"})
CODE_MAGICS = frozenset({"time", "timeit", "capture"})  # they run the Python they are given: read it too
BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("_"))
PATH_MARKERS = ("/proc", "/sys/", "/etc/", "/root", "/home", "/work", "/dev/", "/usr/", "../", "~/")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SHELL = "IPython.shell"  # what `get_ipython()` returns
# Built-ins that stand for themselves even where the cell binds their name (an attack would shadow
# them to pass unseen); the other risky ones only where the cell does not (`input` as a parameter).
ALWAYS_BUILTINS = frozenset(
    {"getattr", "setattr", "delattr", "eval", "exec", "__import__", "type", "vars", "globals", "locals"}
)

# What no answer of this course needs unless its question calls for it (the flag names the tool, and
# `allowed` takes that name): each is a way to hide work from, or replay it past, the course's
# measuring hooks and modes (they count in the thread that entered them; an inner saved-tensor hook
# takes precedence over the outer, counting one).
SAVED_TENSOR_HOOKS = frozenset(
    {
        "saved_tensors_hooks",
        "save_on_cpu",
        "disable_saved_tensors_hooks",
        "allow_mutation_on_saved_tensors",
        "register_hooks",  # on a grad_fn's saved tensor
        "_push_saved_tensors_default_hooks",
        "_pop_saved_tensors_default_hooks",
    }
)
RNG_STATE = frozenset(
    {
        "fork_rng",
        "get_rng_state",
        "set_rng_state",
        "get_rng_state_all",
        "set_rng_state_all",
        "graphsafe_get_state",
        "graphsafe_set_state",
        "get_state",
        "set_state",
        "getstate",
        "setstate",
    }
)
HOOKS = frozenset(
    {
        "register_hook",
        "register_prehook",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
        "register_post_accumulate_grad_hook",
        "register_multi_grad_hook",
        "register_comm_hook",
        "register_step_pre_hook",
        "register_step_post_hook",
        "_forward_hooks",
        "_forward_pre_hooks",
        "_backward_hooks",
        "_backward_pre_hooks",
        "_post_accumulate_grad_hooks",
    }
)
FORWARD = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})  # replaced on a model
THREADS = (
    "threading",
    "_thread",
    "concurrent",
    "multiprocessing",
    "asyncio",
    "torch.multiprocessing",
    "torch.jit.fork",
    "torch.jit._fork",
)
THREAD_NAMES = frozenset(
    {"ThreadPoolExecutor", "ProcessPoolExecutor", "start_new_thread", "run_in_executor", "to_thread"}
)
COURSE = "effitrain_lessons"
# The course's modules that only print, translate, draw or ask (no answer is computed by them).
COURSE_PRESENTATION = ("shared.i18n", "shared.quiz", "shared.tables", "shared.device", "figures")
COURSE_PACKAGE = Path(__file__).resolve().parents[1]
# What the solutions use among the above (`allowances` of every lesson's answer cell; a test keeps it
# so): what `review_answer` allows when the grader does not say what the question allows.
SOLUTIONS_USE = frozenset({"measure_step", "tiny_bert", "measure_choice"})
REVIEW_SECONDS = 10.0
# Past this a cell is not read at all (one reading of it would outlast the budget); the grader runs no
# answer over 200,000 characters anyway.
MAX_REVIEW_CHARS = 250_000


def python_source(source: str, deadline: float | None = None) -> str:
    """The cell's code as Python, with IPython's `%magic` and `!shell` lines turned into calls.

    IPython's own transforms, driven in linear time: its `TransformerManager` reads the whole cell
    again after each line it turns into a call (4,000 `a = !b` lines took minutes, and past 500 it
    gives up). Here one round reads the cell once and turns every special line it finds; the next
    round reads the result, for a line that an earlier one's raw text hid (a `!echo` that opens a
    string). Past `deadline` (a `time.monotonic()` value) it raises `OutOfTime`.
    """
    return ipython_cell(source, deadline)[0]


# IPython turns at most this many special lines of a cell into calls, then gives up on the cell
# (`inputtransformer2.TRANSFORM_LOOP_LIMIT`); the grading kernel gives up the same way, at once.
IPYTHON_TRANSFORM_LIMIT = 500


def ipython_cell(source: str, deadline: float | None = None) -> tuple[str, int]:
    """`python_source`, and how many special lines it turned into calls (IPython runs a cell only
    when that is under `IPYTHON_TRANSFORM_LIMIT`). A cell IPython cannot read is returned as it is,
    with 0."""
    try:
        from IPython.core import inputtransformer2 as ipython
    except ImportError:
        return source, 0
    manager = ipython.TransformerManager()
    lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
    turned = 0
    try:
        for transform in manager.cleanup_transforms + manager.line_transforms:
            lines = transform(lines)
        while True:
            _in_time(deadline)
            count, lines = _transform_round(ipython, manager.token_transformers, lines)
            if not count:
                return "".join(lines), turned
            turned += count
    except OutOfTime:
        raise
    except Exception:  # noqa: BLE001 - a cell IPython cannot read is read as it is
        return source, 0


def _transform_round(ipython, transformers, lines: list[str]) -> tuple[int, list[str]]:
    """Every special line of one reading of `lines`, each turned into a call as IPython turns it, and
    how many there were."""
    replaced: list[tuple[int, int, list[str]]] = []  # (first line, last line, what replaces them)
    for tokens in ipython.make_tokens_by_line(lines):
        # IPython's choice among the transforms that match a line: the earliest, then by priority
        found = sorted(
            (match for kind in transformers if (match := kind.find([tokens]))),
            key=ipython.TokenTransformBase.sortby,
        )
        for match in found:
            start = match.start_line
            end = max(ipython.find_end_of_continued_line(lines, start), getattr(match, "q_line", start))
            if replaced and start <= replaced[-1][1]:
                break  # overlaps the line before: the next round reads it
            match.start_line = 0  # the transform reads only its own lines
            if hasattr(match, "q_line"):
                match.q_line -= start
            try:
                replaced.append((start, end, match.transform(lines[start : end + 1])))
            except SyntaxError:  # as IPython, the next transform that matches the line
                continue
            break
    if not replaced:
        return 0, lines
    result, done = [], 0
    for start, end, new in replaced:
        result += lines[done:start] + new
        done = end + 1
    return len(replaced), result + lines[done:]


class OutOfTime(Exception):
    """The review's time ran out."""


def _in_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime


def parse(source: str, seconds: float = REVIEW_SECONDS) -> ast.Module | None:
    """The cell's syntax tree, or None when it is not Python or takes longer than `seconds` to read."""
    if len(source) > MAX_REVIEW_CHARS:
        return None
    try:
        return ast.parse(python_source(source, time.monotonic() + seconds))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OutOfTime):
        return None


def review_answer(
    source: str, allowed: frozenset[str] | None = None, *, seconds: float = REVIEW_SECONDS
) -> list[str]:
    """What the answer cell reaches for, beyond a plain answer (empty for an ordinary answer).

    `allowed` names what the question calls for among the tools an answer does not otherwise need
    (`allowances` reads them from the instructor's answer cell); by default, what any solution
    uses. A cell that is not Python gets no flag (it fails to run, in the worker as here); one too
    deeply nested to read gets one, and so does one the review could not finish in `seconds`
    (with the flags found until then).
    """
    found: list[str] = []

    def note(what: str) -> None:
        what = _printable(what)
        if what not in found:
            found.append(what)

    _review(source, note, SOLUTIONS_USE if allowed is None else allowed, time.monotonic() + seconds)
    if len(found) > MAX_FLAGS:
        found[MAX_FLAGS:] = [f"and {len(found) - MAX_FLAGS} more"]
    return found


def allowances(source: str, *, seconds: float = REVIEW_SECONDS) -> frozenset[str]:
    """What an instructor's answer cell (solution included) uses that an answer is flagged for
    elsewhere: the course's functions it calls, the hooks it registers (`measure_step`,
    `save_on_cpu`). Passed as `allowed`, it lets the question's own answers use them."""
    used: set[str] = set()
    _review(source, lambda what: None, frozenset(), time.monotonic() + seconds, used)
    return frozenset(used)


def _review(source: str, note, allowed: frozenset[str], deadline: float, used: set | None = None) -> None:
    """Note what `source` reaches for; the review's own limits become flags too."""
    if len(source) > MAX_REVIEW_CHARS:
        note(TOO_LONG)
        return
    try:
        tree = ast.parse(python_source(source, deadline))
    except (SyntaxError, ValueError):
        return
    except (RecursionError, MemoryError):
        note(TOO_DEEP)
        return
    except OutOfTime:
        note(TOO_LONG)
        return
    review = _Review(tree, note, allowed, deadline, set() if used is None else used)
    try:
        review.run()
    except (RecursionError, MemoryError):
        note(TOO_DEEP)
    except OutOfTime:
        note(TOO_LONG)


class _Names:
    """What each name of a cell stands for, and so what an expression names (`path`)."""

    def __init__(self, nodes: list[ast.AST], bound: set[str], deadline: float | None = None):
        self.nodes, self.bound, self.deadline = nodes, bound, deadline
        builtin = ALWAYS_BUILTINS | (RISKY_CALLS - bound - {"get_ipython"})
        self.names = {**{name: f"builtins.{name}" for name in builtin}, **KNOWN_NAMES}
        self.names["__builtins__"] = "builtins"
        self._learn_names()

    def _learn_names(self) -> None:
        """Imports, then assignments, defaults and calls of the cell's own functions, to a fixed point."""
        self._learn_imports()
        functions = {
            node.name: node
            for node in self.nodes
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for _ in range(5):
            _in_time(self.deadline)
            before = dict(self.names)
            for node in self.nodes:
                self._learn_from(node, functions)
            if self.names == before:
                break

    def _learn_imports(self) -> None:
        """What the cell's imports bind (over any name known before: an import is what the cell means)."""
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def _learn_from(self, node: ast.AST, functions: dict) -> None:
        """What one node binds names to: an assignment, a loop over literals, defaults, a call."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self._bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)):
                for element in node.iter.elts:
                    self._bind(node.target, element)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            self._learn_defaults(node.args)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
            self._learn_arguments(functions[node.func.id].args, node)

    def _learn_defaults(self, arguments: ast.arguments) -> None:
        positional = [*arguments.posonlyargs, *arguments.args]
        for arg, default in zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults):
            self._bind_name(arg.arg, default)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
            if default is not None:
                self._bind_name(arg.arg, default)

    def _learn_arguments(self, arguments: ast.arguments, call: ast.Call) -> None:
        """A call of the cell's own function binds its parameters to what the call passes."""
        positional = [*arguments.posonlyargs, *arguments.args]
        for arg, value in zip(positional, call.args):
            self._bind_name(arg.arg, value)
        by_name = {arg.arg for arg in [*positional, *arguments.kwonlyargs]}
        for keyword in call.keywords:
            if keyword.arg in by_name:
                self._bind_name(keyword.arg, keyword.value)

    def _bind(self, target, value) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            for element, item in zip(target.elts, value.elts):
                self._bind(element, item)
        elif isinstance(target, ast.Name):
            self._bind_name(target.id, value)

    def _bind_name(self, name: str, value) -> None:
        path = self.path(value)
        if path is not None and name not in self.names:
            self.names[name] = path

    def path(self, node) -> str | None:
        """The dotted name an expression stands for (`tt.testing` -> "torch.testing"), if it is known."""
        suffix: list[str] = []
        while True:
            if isinstance(node, ast.Attribute):
                suffix.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Name):
                base = self.names.get(node.id)
                break
            elif isinstance(node, ast.Subscript):
                key = _literal(node.slice)
                inner = self.path(node.value)
                if key is None or inner is None:
                    return None
                if inner == "sys.modules":
                    base = key
                elif inner.endswith(".__dict__"):
                    base = f"{inner.removesuffix('.__dict__')}.{key}"
                else:
                    return None
                break
            elif isinstance(node, ast.Call):
                function = self.path(node.func)
                first = _literal(node.args[0]) if node.args else None
                if function == "builtins.getattr" and len(node.args) >= 2 and _literal(node.args[1]):
                    suffix.append(_literal(node.args[1]))
                    node = node.args[0]
                elif function == "builtins.vars" and len(node.args) == 1:
                    suffix.append("__dict__")
                    node = node.args[0]
                elif function in IMPORTERS and first:
                    base = first.split(".")[0] if function.endswith("__import__") else first
                    break
                elif function == "IPython.get_ipython":
                    base = SHELL
                    break
                else:
                    return None
            else:
                return None
        if base is None:
            return None
        return ".".join([base, *reversed(suffix)])


class _Review(_Names):
    """One pass over a cell's syntax tree, after learning what each name of the cell stands for."""

    def __init__(
        self,
        tree: ast.Module,
        note,
        allowed: frozenset[str] = frozenset(),
        deadline: float | None = None,
        used: set[str] | None = None,
    ):
        self.tree, self.note, self.allowed = tree, note, allowed
        self.used = set() if used is None else used  # the allowances this cell would need
        nodes = list(ast.walk(tree))
        self.called = {id(node.func) for node in nodes if isinstance(node, ast.Call)}
        super().__init__(nodes, _bound_names(nodes), deadline)

    def run(self) -> None:
        for index, node in enumerate(self.nodes):
            if index % 512 == 511:
                _in_time(self.deadline)  # what was noted so far stays noted
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._import(alias.name)
            elif isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Name):
                self._name(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Subscript):
                self._subscript(node)
            elif isinstance(node, ast.ClassDef):
                self._class(node)
            elif isinstance(node, ast.Dict):
                for key in node.keys:
                    if _literal(key) in LABELS:
                        self.note(RELABELS)
            elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                self._string(node.value)
        for name in sorted(_top_level_bindings(self.tree) & BUILTIN_NAMES):
            self.note(f"redefines the built-in {name}")

    def _import(self, module: str) -> None:
        top = module.split(".")[0]
        if module.startswith(GRADER_MODULES):
            self.note(f"imports the grader ({module})")
        elif top in SYSTEM_MODULES:
            self.note(f"imports {top}")
        self._dotted_path(module)

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._import(module)
        for alias in node.names:
            if alias.name == "*":
                self.note(f"imports * from {module}")
            else:
                self._attribute_name(alias.name)
                self._tool_name(alias.name)
                if module and not node.level:
                    full = f"{module}.{alias.name}"
                    if module.startswith(GRADER_MODULES):
                        self._dotted_path(full)  # the grader is named once, by its module
                    else:
                        self._import(full)  # `from effitrain_lessons import course`

    def _dotted_path(self, path: str) -> None:
        """What a dotted name reaches: another module's `sys`, torch's overrides or internals."""
        parts = path.split(".")
        for part in parts[1:]:
            self._reached_through(part)
        for module in THREADS:
            if path == module or path.startswith(module + "."):
                self._tool(module, "runs threads or processes")
        if parts[0] == COURSE:
            self._course(parts)
        if parts[0] != "torch":
            return
        if parts[1:2] == ["overrides"]:
            self.note("uses torch's override machinery (torch.overrides)")
        elif parts[1:2] == ["library"]:
            self.note("registers torch kernels (torch.library)")
        for index, part in enumerate(parts[1:], start=1):
            if part.startswith("_") and not part.startswith("__"):
                self.note(f"reaches torch internals ({'.'.join(parts[: index + 1])})")
                break

    def _tool(self, name: str, what: str) -> None:
        """A tool an answer does not need unless its question calls for it (`allowed` names those)."""
        if name not in self.allowed:
            self.used.add(name)
            self.note(f"{what} ({name})")

    def _tool_name(self, name: str, writes: bool = False) -> None:
        """The tools named by an attribute or an imported name (`.register_hook`, `save_on_cpu`)."""
        for names, what in (
            (SAVED_TENSOR_HOOKS, "uses saved-tensor hooks"),
            (RNG_STATE, "saves or restores the random generator's state"),
            (HOOKS, "registers a hook"),
            (THREAD_NAMES, "runs threads or processes"),
        ):
            if name in names:
                self._tool(name, what)
        if writes and name in FORWARD:
            self._tool(name, "replaces a method on a model")

    def _course(self, parts: list[str]) -> None:
        """What an answer takes from the course's own package: a function that computes a reference
        (`effitrain_lessons.with_accelerator.train_loop.optimizer_steps_on_one_process`), flagged by
        its name; a module alone, or one that only prints, draws or asks, is not."""
        if ".".join(parts).startswith(GRADER_MODULES):
            return
        module = len(parts)
        while module > 1 and not _course_module(tuple(parts[1:module])):
            module -= 1
        inside = ".".join(parts[1:module])
        if module == len(parts) or any(
            inside == shown or inside.endswith("." + shown) for shown in COURSE_PRESENTATION
        ):
            return
        self._tool(parts[module], "uses the course's own measurement")

    def _reached_through(self, name: str) -> None:
        module = name if name in REACHED_THROUGH else name.lstrip("_")
        if module in REACHED_THROUGH:
            self.note(f"reaches {module} through another module")

    def _attribute_name(self, name: str, writes: bool = False) -> None:
        """Checks on an attribute's name alone, however it is reached (`.name`, `getattr(x, "name")`)."""
        if name in INTERNALS:
            self.note(f"reaches into {name}")
        for names, what in (
            (STACK, "reads the call stack"),
            (TRACING, "sets a trace function"),
            (GC_WALKS, "walks the garbage collector"),
            (IMPORT_MACHINERY, "reaches the import machinery"),
            (TORCH_OVERRIDES, "uses torch's override machinery"),
            (GLOBAL_HOOKS, "registers a global hook"),
        ):
            if name in names:
                self.note(f"{what} ({name})")
        if writes and name in LABELS:
            self.note(RELABELS)

    def _attribute(self, node: ast.Attribute) -> None:
        writes = isinstance(node.ctx, (ast.Store, ast.Del))
        self._attribute_name(node.attr, writes)
        self._tool_name(node.attr, writes)
        self._reached_through(node.attr)
        if node.attr in CONTEXT_BY_HAND:
            self.note(f"calls {node.attr} by hand")
        owner = self.path(node.value)
        if owner is not None:
            self._dotted_path(f"{owner}.{node.attr}")
            if f"{owner}.{node.attr}".startswith(GRADER_MODULES) and not owner.startswith(GRADER_MODULES):
                self.note(f"reaches the grader ({GRADER_MODULES[0]})")
            if owner == SHELL and node.attr not in SHELL_MAGICS:
                self.note(f"uses the IPython shell ({node.attr})")
            if owner == "sys" and node.attr == "monitoring":
                self.note("sets a trace function (monitoring)")
        if writes:
            verb = "deletes" if isinstance(node.ctx, ast.Del) else "assigns"
            if owner is not None:
                self.note(f"{verb} {owner}.{node.attr}")
            elif self._library_class(node.value):
                self.note(f"{verb} {_dotted(node)}")

    def _library_class(self, node) -> bool:
        """A class the cell did not define, named by a capitalised global (`Accelerator`)."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id[:1].isupper() and root.id not in self.bound

    def _subscript(self, node: ast.Subscript) -> None:
        owner = self.path(node.value)
        namespace = (isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__") or (
            isinstance(node.value, ast.Call)
            and self.path(node.value.func) in ("builtins.vars", "builtins.globals", "builtins.locals")
        )
        if namespace or (owner is not None and owner.endswith(".__dict__")):
            key = _literal(node.slice)
            if key is None:
                self.note(COMPUTED_WRITE if isinstance(node.ctx, ast.Store) else COMPUTED_READ)
            else:
                self._attribute_name(key, isinstance(node.ctx, ast.Store))
                self._tool_name(key, isinstance(node.ctx, ast.Store))
        if isinstance(node.ctx, (ast.Store, ast.Del)) and owner is not None:
            # A module itself has no items: `signal[0] = x` is a learner's array named `signal`.
            if not isinstance(node.value, ast.Name) or owner.endswith(".__dict__") or owner == "sys.modules":
                self.note(f"{'deletes' if isinstance(node.ctx, ast.Del) else 'assigns'} {owner}[...]")

    def _name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__import__"):
            self.note(f"uses {node.id}")
        if node.id in TORCH_OVERRIDES:
            self.note(f"uses torch's override machinery ({node.id})")
        meaning = self.names.get(node.id)
        if isinstance(node.ctx, ast.Load) and node.id not in self.bound:
            # a name a lesson's cell imported (`sweep_segments`, `save_on_cpu`): what it stands for
            self._tool_name(node.id)
            if node.id in course_names():
                self._course(course_names()[node.id].split("."))
        if isinstance(node.ctx, ast.Load) and id(node) not in self.called:
            if meaning in NAME_TAKERS and meaning.startswith("builtins."):
                self.note(COMPUTED_READ)  # `reduce(getattr, names, frame)`: names given elsewhere
            elif meaning in ("builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__"):
                self.note(f"uses {node.id}")
            elif meaning in ("IPython.get_ipython", SHELL):
                self.note("uses the IPython shell")

    def _call(self, node: ast.Call) -> None:
        function = self.path(node.func)
        if isinstance(node.func, ast.Name) and node.func.id in RISKY_CALLS and node.func.id != "get_ipython":
            self.note(f"calls {node.func.id}()")
        elif function and function.startswith("builtins.") and function[9:] in RISKY_CALLS:
            self.note(f"calls {function[9:]}()")  # under another name
        if isinstance(node.func, ast.Attribute) and node.func.attr in SHELL_MAGICS:
            magic = _literal(node.args[0]) if node.args else None
            if node.func.attr in ("system", "getoutput"):
                self.note("runs shell commands (!)")
            elif magic not in BENIGN_MAGICS:
                self.note(f"runs the magic %{magic}" if magic is not None else "runs a magic")
            if magic in CODE_MAGICS:
                for argument in node.args[1:]:
                    code = _magic_code(_literal(argument) or "")
                    if code:
                        _review(code, self.note, self.allowed, self.deadline, self.used)
        if function in NAME_TAKERS:
            self._name_taker(node, function)
        spread = node.keywords or any(isinstance(a, ast.Starred) for a in node.args)
        if function in CLASS_BUILDERS and (function != "builtins.type" or len(node.args) != 1 or spread):
            self.note(BUILDS_CLASS)
        elif function in FUNCTION_BUILDERS:
            self.note(BUILDS_FUNCTION)
        elif (
            len(node.args) == 3
            and isinstance(node.args[1], ast.Tuple)
            and (
                isinstance(node.args[2], ast.Dict)
                or (isinstance(node.args[2], ast.Call) and _dotted(node.args[2].func) == "dict")
            )
        ):
            self.note(BUILDS_CLASS)  # a metaclass called as `Meta(name, bases, namespace)`
        if function in ("functools.wraps", "functools.update_wrapper"):
            wrapped = node.args[-1] if node.args else None
            if wrapped is not None and self.path(wrapped) is not None:
                self.note(RELABELS)  # dresses a function as the library's own

    def _name_taker(self, node: ast.Call, function: str) -> None:
        positions = NAME_TAKERS[function]
        names = (
            list(node.args) if positions is None else [node.args[i] for i in positions if i < len(node.args)]
        )
        names += [k.value for k in node.keywords if k.arg == "name"]
        setter = function in SETTERS
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            self.note(COMPUTED_WRITE if setter else COMPUTED_READ)
        for argument in names:
            name = _literal(argument)
            if name is None:
                self.note(COMPUTED_WRITE if setter else COMPUTED_READ)
                continue
            for part in name.split(".") if function == "operator.attrgetter" else [name]:
                self._attribute_name(part, writes=setter)
                self._tool_name(part, writes=setter)
                self._reached_through(part)
        if setter and len(node.args) >= 2 and _literal(node.args[1]) is not None:
            owner = self.path(node.args[0])
            verb = "deletes" if function == "builtins.delattr" else "assigns"
            if owner is not None:
                self.note(f"{verb} {owner}.{_literal(node.args[1])}")
            elif self._library_class(node.args[0]):
                self.note(f"{verb} {_dotted(node.args[0])}.{_literal(node.args[1])}")
        if function == "builtins.getattr" and node.args:
            owner = self.path(node.args[0])
            name = _literal(node.args[1]) if len(node.args) > 1 else None
            if owner is not None and name is not None:
                self._dotted_path(f"{owner}.{name}")

    def _class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            base_path = self.path(base) or _dotted(base)
            if base_path.rsplit(".", 1)[-1] in TORCH_MODES:
                self.note("defines a torch function mode")
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [item.name]
            elif isinstance(item, ast.Assign):
                names = [leaf.id for t in item.targets for leaf in _leaves(t) if isinstance(leaf, ast.Name)]
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names = [item.target.id]
            else:
                continue
            for name in names:
                if name in COMPARISON_DUNDERS:
                    self.note(f"defines {name} on a class")
                if name in FINDER_METHODS:
                    self.note("defines an import finder")
                if name in LABELS:
                    self.note("relabels a class")
        if node.keywords:
            self.note("defines a class with a metaclass")

    def _string(self, value: str | bytes) -> None:
        text = value if isinstance(value, str) else value.decode("latin-1")
        for marker in PATH_MARKERS:
            if marker in text:
                self.note(f"names the path {marker}")
        if GRADER_MODULES[0] in text:
            self.note(f"names the grader ({GRADER_MODULES[0]})")
        if "_" in text or any(word in text for word in ("mro", "TorchFunctionMode", "TorchDispatchMode")):
            for word in set(WORD.findall(text)):
                self._attribute_name(word)


@functools.cache
def _course_module(parts: tuple[str, ...]) -> bool:
    """Whether `effitrain_lessons.<parts>` is a module or a package of the course (read on disk: the
    review imports nothing an answer names)."""
    place = COURSE_PACKAGE.joinpath(*parts)
    return (place / "__init__.py").is_file() or place.with_suffix(".py").is_file()


@functools.cache
def course_names() -> dict[str, str]:
    """The course's functions that the lessons' own cells import, so that an answer may call them
    without an import: name -> dotted path. Names a lesson also binds otherwise are left out."""
    from effitrain_lessons.course.lessons import CourseError, lesson_names, load_lesson

    try:
        cells = [cell for name in lesson_names() for cell in load_lesson(name).cells if not cell.answer_for]
    except (CourseError, OSError, ValueError):
        return {}
    imported, bound = {}, set()
    for cell in cells:
        tree = parse(cell.source)
        if tree is None:
            continue
        imports = {
            (a.asname or a.name).split(".")[0]
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for a in node.names
        }
        bound |= _top_level_bindings(tree) - imports
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and not node.level
                and (node.module or "").split(".")[0] == COURSE
            ):
                for alias in node.names:
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return {name: path for name, path in imported.items() if name not in bound}


def _magic_code(line: str) -> str | None:
    """The Python in a magic's line or cell (`-n 1 -r 1 x = f()` -> `x = f()`), or None."""
    for _ in range(12):
        try:
            ast.parse(line)
            return line
        except SyntaxError:
            _option, _, line = line.strip().partition(" ")
            if not line:
                return None
        except (ValueError, RecursionError, MemoryError):
            return line  # the review says what it makes of it
    return None


def _literal(node) -> str | None:
    """The string a node spells out literally, or None when it is built at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _printable(text: str) -> str:
    """A flag as one short line: control characters escaped, long names cut."""
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text if len(text) <= MAX_FLAG_CHARS else text[: MAX_FLAG_CHARS - 3] + "..."


def _bound_names(nodes) -> set[str]:
    """Every name the cell binds anywhere: assignments, parameters, imports, functions, classes."""
    bound = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return bound


def _leaves(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _leaves(element)
    elif isinstance(target, ast.Starred):
        yield from _leaves(target.value)
    else:
        yield target


def _dotted(node) -> str:
    parts = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        parts.append(node.attr if isinstance(node, ast.Attribute) else "[...]")
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "(...)")
    return ".".join(reversed(parts)).replace(".[...]", "[...]")


def _top_level_bindings(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {leaf.id for leaf in _leaves(target) if isinstance(leaf, ast.Name)}
    return names


# ---------------------------------------------------------------------------------------------
# Names a cell defines and uses (for the cells an answer depends on)


def defined_and_used(source: str) -> tuple[set[str], set[str]]:
    """The global names a cell binds, and the names it reads that it did not bind itself first."""
    tree = parse(source)
    if tree is None:
        return set(), set()
    defined = _top_level_bindings(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            targets = (
                [node.target]
                if isinstance(node, (ast.For, ast.AsyncFor))
                else [item.optional_vars for item in node.items if item.optional_vars is not None]
            )
            for target in targets:
                defined |= {leaf.id for leaf in _leaves(target) if isinstance(leaf, ast.Name)}
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    local = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            for arg in [
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                arguments.vararg,
                arguments.kwarg,
            ]:
                if arg is not None:
                    local.add(arg.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.comprehension):
            local |= {leaf.id for leaf in _leaves(node.target) if isinstance(leaf, ast.Name)}
    used = {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return defined, used - local - BUILTIN_NAMES
