"""What an answer cell reaches for, read from its source before it runs (flags for the instructor).

An exercise's answer is a few lines of PyTorch; none of them needs the operating system, the
interpreter's internals or the grader. `review_answer(source)` lists what a cell reaches for
beyond that, one short phrase each ("imports ctypes", "assigns torch.testing.assert_close",
"defines __eq__ on a class"). The grader reports these as flags for review; they never change a
score by themselves. Read statically, outside the sandbox, they cannot be hidden by the submission
(obfuscation such as `eval` or `__import__` is itself a flag). The worker adds what an audit hook
sees at run time.
"""

from __future__ import annotations

import ast
import builtins

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
    }
)
GRADER_MODULES = ("effitrain_lessons.course",)
MODULE_NAMES = (
    frozenset(
        {
            "torch",
            "np",
            "numpy",
            "transformers",
            "accelerate",
            "effitrain_lessons",
            "functools",
            "math",
            "operator",
            "itertools",
            "collections",
        }
    )
    | SYSTEM_MODULES
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
        "__bases__",
        "__mro__",
        "__builtins__",
        "__self__",
        "__func__",
        "__defaults__",
        "__kwdefaults__",
        "__loader__",
        "__spec__",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "tb_frame",
        "tb_next",
        "__traceback__",
        "co_code",
        "__getattribute__",
        "__setattr__",
        "__init_subclass__",
        "__set_name__",
    }
)
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
    }
)
SHELL_MAGICS = frozenset({"system", "getoutput", "run_line_magic", "run_cell_magic"})
BENIGN_MAGICS = frozenset({"time", "timeit", "matplotlib", "pinfo", "who", "whos"})
BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("_"))
PATH_MARKERS = ("/proc", "/sys/", "/etc/", "/root", "/home", "/work", "/dev/", "/usr/", "../", "~/")


def python_source(source: str) -> str:
    """The cell's code as Python, with IPython's `%magic` and `!shell` lines turned into calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - a cell IPython cannot read is read as it is
        return source


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(python_source(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def review_answer(source: str) -> list[str]:
    """What the answer cell reaches for, beyond a plain answer (empty for an ordinary answer)."""
    tree = parse(source)
    if tree is None:
        return []
    found: list[str] = []
    aliases: set[str] = set(MODULE_NAMES)

    def note(what: str) -> None:
        if what not in found:
            found.append(what)

    try:
        nodes = list(ast.walk(tree))
    except RecursionError:
        return ["is nested too deeply to read"]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                _note_import(alias.name, note)
                aliases.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            _note_import(node.module or "", note)
            for alias in node.names:
                if alias.name == "*":
                    note(f"imports * from {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RISKY_CALLS:
            if node.func.id == "get_ipython":
                continue  # judged with the magic it runs, below
            note(f"calls {node.func.id}()")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SHELL_MAGICS
        ):
            magic = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if node.func.attr in ("system", "getoutput"):
                note("runs shell commands (!)")
            elif magic not in BENIGN_MAGICS:
                note(f"runs the magic %{magic}" if isinstance(magic, str) else "runs a magic")
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__import__"):
            note(f"uses {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in INTERNALS:
            note(f"reaches into {node.attr}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign)):
                    names = (
                        [item.name]
                        if not isinstance(item, ast.Assign)
                        else [t.id for t in item.targets if isinstance(t, ast.Name)]
                    )
                    for name in names:
                        if name in COMPARISON_DUNDERS:
                            note(f"defines {name} on a class")
            if node.keywords:
                note("defines a class with a metaclass")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for leaf in _leaves(target):
                    root = _root(leaf)
                    if isinstance(leaf, (ast.Attribute, ast.Subscript)) and root in aliases:
                        note(f"{'deletes' if isinstance(node, ast.Delete) else 'assigns'} {_dotted(leaf)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            for marker in PATH_MARKERS:
                if marker in text:
                    note(f"names the path {marker}")
    for name in sorted(_top_level_bindings(tree) & BUILTIN_NAMES):
        note(f"redefines the built-in {name}")
    return found


def _note_import(module: str, note) -> None:
    top = module.split(".")[0]
    if module.startswith(GRADER_MODULES):
        note(f"imports the grader ({module})")
    elif top in SYSTEM_MODULES:
        note(f"imports {top}")


def _leaves(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _leaves(element)
    elif isinstance(target, ast.Starred):
        yield from _leaves(target.value)
    else:
        yield target


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node) -> str:
    parts = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        parts.append(node.attr if isinstance(node, ast.Attribute) else "[...]")
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
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
