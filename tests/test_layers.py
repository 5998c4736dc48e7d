"""Two layers, one direction: the learner's runtime never imports the instructor's tooling; and a
lesson's code in one place.

`effitrain_lessons.course` (building editions, grading, its sandbox and reports) may import the
runtime; nothing a lesson's kernel imports may import `course`. Only the command line (`cli`)
reaches into it, and only when an instructor's subcommand runs.

Within the runtime, every module is one lesson's (in the package the manifest,
`effitrain_lessons.lessons`, names for it: its measuring, figures, quiz and `# @save` code) or
shared by the lessons (`effitrain_lessons.shared`, and the manifest); a lesson's module imports only
shared modules and its own lesson's, a shared module only shared ones; no module imports another's
private names; and no two modules import each other, directly or around a loop, anywhere in their
code. At most eight modules stay at the top of the package.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

from effitrain_lessons.lessons import LESSONS

PACKAGE = Path(__file__).resolve().parents[1] / "effitrain_lessons"
DISPATCHERS = {"cli.py", "__main__.py"}


def runtime_modules() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if p.name not in DISPATCHERS and "course" not in p.relative_to(PACKAGE).parts[:1]
    )


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
    names = [
        ".".join(["effitrain_lessons", *p.relative_to(PACKAGE).with_suffix("").parts])
        for p in runtime_modules()
        if p.stem != "__init__"
    ]
    assert loaded_after_importing(names, "effitrain_lessons.course") == []


def test_no_edition_imports_the_course_tooling():
    root = PACKAGE.parent
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            assert "effitrain_lessons.course" not in "".join(cell["source"]), (path.name, cell["id"])


# ---------------------------------------------------------------------------------------------
# A lesson's code in one place: every module is one lesson's (in the package the manifest names for
# it) or shared by the lessons (effitrain_lessons.shared, and the manifest itself)

SHARED = "shared"  # any lesson may import it; it imports only shared modules
COMMAND_LINE = "command line"  # the dispatcher: it may reach into any module
ROOT_PACKAGE = "effitrain_lessons"
TOP_LEVEL_AT_MOST = 8
# folders of the package that hold no lesson's code: the shared code, the instructor's tooling, data
NOT_LESSONS = {"shared", "course", "course_data", "locale", "__pycache__"}


def layer_of(name: str, lessons=LESSONS):
    """A runtime module's layer: a lesson's number, SHARED or COMMAND_LINE; None for a module that is
    in no lesson package the manifest names and not shared."""
    if name in (ROOT_PACKAGE, f"{ROOT_PACKAGE}.lessons") or name.startswith(f"{ROOT_PACKAGE}.shared"):
        return SHARED
    if name in (f"{ROOT_PACKAGE}.cli", f"{ROOT_PACKAGE}.__main__"):
        return COMMAND_LINE
    for lesson in lessons:
        if name == lesson.package or name.startswith(lesson.package + "."):
            return lesson.number
    return None


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
    """A module's name within the package: "local_sgd.runs", "__init__"."""
    return name.removeprefix(ROOT_PACKAGE + ".") if name != ROOT_PACKAGE else "__init__"


def is_runtime(name: str) -> bool:
    return name == ROOT_PACKAGE or not short(name).startswith("course")


def imported(name: str) -> list[tuple[str, list[str]]]:
    """What module `name` imports from the package: (module, the names taken from it), for every `import` and
    `from ... import` anywhere in it (inside functions too; relative imports resolved)."""
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
    return found


def unplaced(modules, lessons=LESSONS) -> list[str]:
    """The runtime modules that are in no lesson package of the manifest and not shared."""
    return sorted(short(name) for name in modules if is_runtime(name) and layer_of(name, lessons) is None)


def test_every_runtime_module_belongs_to_a_lesson_or_is_shared():
    assert unplaced(MODULES) == [], (
        "each module lives in a lesson's package (named in effitrain_lessons/lessons.py) or in shared/"
    )


def lesson_folders(package: Path = PACKAGE) -> list[str]:
    return sorted(p.name for p in package.iterdir() if p.is_dir() and p.name not in NOT_LESSONS)


def test_every_lesson_has_its_package_and_every_package_its_lesson():
    assert lesson_folders() == sorted(lesson.slug for lesson in LESSONS), (
        "a folder of effitrain_lessons/ that is not shared/ or course/ is a lesson's package: "
        "each is named in effitrain_lessons/lessons.py, and each lesson there has one"
    )
    for lesson in LESSONS:
        assert (PACKAGE / lesson.slug / "__init__.py").is_file(), lesson.package
        assert (PACKAGE / lesson.slug / "quiz.py").is_file(), f"{lesson.package} has no quiz module"


def test_at_most_eight_modules_stay_at_the_top_of_the_package():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_AT_MOST, top


def crossings(modules, lessons=LESSONS) -> list[str]:
    """Every import from one lesson's package into another's, or from a shared module into a lesson's."""
    crossing = []
    for name in modules:
        layer = layer_of(name, lessons)
        if not is_runtime(name) or layer == COMMAND_LINE:
            continue
        for target, _names in imported(name):
            if target == name or not is_runtime(target):
                continue
            other = layer_of(target, lessons)
            if other != SHARED and other != layer:
                crossing.append(f"{short(name)} ({layer}) imports {short(target)} ({other})")
    return sorted(set(crossing))


def test_a_lesson_module_imports_only_shared_modules_and_its_own_lessons():
    assert crossings(MODULES) == []


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
    """Figures live in each lesson's `figures` module, so a worker process (or a launcher's) never
    loads matplotlib."""
    kernel_only = ("plotting", "quiz", "checks")  # the widgets and the checker run in the kernel
    measuring = [
        name
        for name in MODULES
        if is_runtime(name)
        and layer_of(name) not in (None, COMMAND_LINE)
        and name.rpartition(".")[2] not in ("figures", *kernel_only)
    ]
    assert loaded_after_importing(measuring, "matplotlib") == []
