"""Two layers, one direction: the learner's runtime never imports the instructor's tooling; and a
lesson's code in one place.

`effitrain_lessons.course` (building editions, grading, its sandbox and reports) may import the
runtime; nothing a lesson's kernel imports may import `course`. Only the command line (`cli`)
reaches into it, and only when an instructor's subcommand runs.

Within the runtime, every module is one lesson's (its measuring module, its figures beside it) or
shared by the lessons (`LAYERS`); a lesson's module imports only shared modules and its own
lesson's, a shared module only shared ones; no module imports another's private names; and no
two modules import each other, directly or around a loop, anywhere in their code.
"""

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "effitrain_lessons"
DISPATCHERS = {"cli.py", "__main__.py"}


def runtime_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.glob("*.py") if p.name not in DISPATCHERS)


def imports_course(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("effitrain_lessons.course")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level and (module == "course" or module.startswith("course.")):
                found.append("." * node.level + module)
            elif module.startswith("effitrain_lessons.course"):
                found.append(module)
            elif module == "effitrain_lessons" and any(a.name == "course" for a in node.names):
                found.append("effitrain_lessons.course")
    return found


def test_no_runtime_module_imports_the_course_tooling():
    assert runtime_modules(), "no runtime modules found"
    offenders = {p.name: imports_course(p) for p in runtime_modules() if imports_course(p)}
    assert offenders == {}


def loaded_after_importing(names: list[str], prefix: str) -> list[str]:
    """The modules whose names start with `prefix` that a fresh Python holds after importing `names`."""
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({prefix!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return ast.literal_eval(done.stdout.strip())


def test_importing_the_whole_runtime_loads_none_of_the_tooling():
    names = [f"effitrain_lessons.{p.stem}" for p in runtime_modules() if p.stem != "__init__"]
    assert loaded_after_importing(names, "effitrain_lessons.course") == []


def test_no_edition_imports_the_course_tooling():
    root = PACKAGE.parent
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            assert "effitrain_lessons.course" not in "".join(cell["source"]), (path.name, cell["id"])


# ---------------------------------------------------------------------------------------------
# A lesson's code in one place: every module belongs to one lesson, or is shared by the lessons

SHARED = "shared"  # any lesson may import it; it imports only shared modules
# kept for learners' notebooks (effitrain_lessons.moved); nothing in the package imports it
OLD_PLACE = "old place"
COMMAND_LINE = "command line"  # the dispatcher: it may reach into any module

LAYERS = {
    "__init__": SHARED,
    "arguments": SHARED,
    "tables": SHARED,
    "i18n": SHARED,
    "moved": SHARED,
    "device": SHARED,
    "memory": SHARED,
    "tracing": SHARED,
    "data": SHARED,
    "models": SHARED,
    "metrics": SHARED,
    "hub": SHARED,
    "checks": SHARED,
    "judging": SHARED,
    "quiz": SHARED,
    "quizzes": SHARED,
    "colab": SHARED,
    "finetuning": SHARED,
    "plotting": SHARED,
    "processes": SHARED,
    "distributed_runs": SHARED,
    "lesson_code": SHARED,
    "checkpointing": 1,
    "checkpointing_figures": 1,
    "trainer": 2,
    "trainer_figures": 2,
    "train_loop": 3,
    "train_loop_figures": 3,
    "lesson_code.lesson_03": 3,
    "local_sgd": 4,
    "launched": 4,
    "local_sgd_figures": 4,
    "lesson_code.lesson_04": 4,
    "diloco": 5,
    "diloco_figures": 5,
    "lesson_code.lesson_05": 5,
    "plan": 6,
    "recompute": 6,
    "plan_figures": 6,
    "own_model": 7,
    "own_model_figures": 7,
    "viz": OLD_PLACE,
    "cli": COMMAND_LINE,
    "__main__": COMMAND_LINE,
}
ROOT_PACKAGE = "effitrain_lessons"


def package_modules() -> dict[str, Path]:
    """Every module of the package, the tooling included, by its dotted name."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [ROOT_PACKAGE, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = package_modules()


def short(name: str) -> str:
    """A runtime module's name in LAYERS: "checkpointing", "lesson_code.lesson_04", "__init__"."""
    return name.removeprefix(ROOT_PACKAGE + ".") if name != ROOT_PACKAGE else "__init__"


def is_runtime(name: str) -> bool:
    return name == ROOT_PACKAGE or not short(name).startswith("course")


def imported(name: str) -> list[tuple[str, list[str]]]:
    """What module `name` imports from the package: (module, the names taken from it), for every `import` and
    `from ... import` anywhere in it (inside functions too; relative imports resolved), and for every entry of
    its table of moved names (imported when a learner asks for one: effitrain_lessons.moved)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in MODULES:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target:
                    found.append((target, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base not in MODULES:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule, []) if submodule in MODULES else (base, [alias.name]))
    if any(
        isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MOVED" for t in node.targets)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
    ):
        places = importlib.import_module(name).MOVED
        found += [(place, [moved]) for moved, place in places.items() if place in MODULES]
    return found


def test_every_runtime_module_belongs_to_a_lesson_or_is_shared():
    runtime = {short(name) for name in MODULES if is_runtime(name)}
    assert sorted(runtime - set(LAYERS)) == [], (
        "classify the new module in LAYERS: its lesson's number, or SHARED"
    )
    assert sorted(set(LAYERS) - runtime) == [], "LAYERS names modules that are not in the package"


def test_a_lesson_module_imports_only_shared_modules_and_its_own_lessons():
    crossing = []
    for name in MODULES:
        if not is_runtime(name) or LAYERS.get(short(name)) in (OLD_PLACE, COMMAND_LINE):
            continue
        layer = LAYERS.get(short(name))
        for target, _names in imported(name):
            if target == name or not is_runtime(target):
                continue
            other = LAYERS.get(short(target))
            if other == OLD_PLACE or (other != SHARED and other != layer):
                crossing.append(f"{short(name)} ({layer}) imports {short(target)} ({other})")
    assert sorted(set(crossing)) == []


def test_no_import_cycle_among_the_package_modules():
    graph = {
        name: sorted({target for target, _names in imported(name) if target != name}) for name in MODULES
    }
    cycles, done, path = [], set(), []

    def visit(name: str) -> None:
        if name in path:
            cycles.append(" -> ".join([*path[path.index(name) :], name]))
            return
        if name in done:
            return
        path.append(name)
        for target in graph[name]:
            visit(target)
        path.pop()
        done.add(name)

    for name in graph:
        visit(name)
    assert cycles == []


def test_no_private_name_is_imported_from_another_package_module():
    def private(name: str) -> bool:  # `_` is the translation function, `__version__` a public dunder
        return name.startswith("_") and name != "_" and not (name.startswith("__") and name.endswith("__"))

    taken = []
    for name in MODULES:
        taken += [
            f"{short(name)} imports {short(target)}.{each}"
            for target, names in imported(name)
            if target != name
            for each in names
            if private(each)
        ]
        # local names bound to package modules:
        # `from effitrain_lessons import data`, `import x as y`
        modules = {}
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and f"{node.module}" in MODULES and not node.level:
                modules.update(
                    {
                        a.asname or a.name: f"{node.module}.{a.name}"
                        for a in node.names
                        if f"{node.module}.{a.name}" in MODULES
                    }
                )
            elif isinstance(node, ast.Import):
                modules.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
        taken += [
            f"{short(name)} uses {short(modules[node.value.id])}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and private(node.attr)
            and modules[node.value.id] != name
        ]
    assert taken == []


def test_the_measuring_modules_that_workers_import_load_no_matplotlib():
    """Figures live in *_figures modules, so a worker process (or a launcher's) never loads matplotlib."""
    measuring = [
        f"{ROOT_PACKAGE}.{name}"
        for name, layer in LAYERS.items()
        if layer not in (OLD_PLACE, COMMAND_LINE)
        and name != "__init__"
        and not name.endswith("figures")
        and name not in ("plotting", "quiz", "checks")  # the widgets and the checker run in the kernel
    ]
    assert loaded_after_importing(measuring, "matplotlib") == []
