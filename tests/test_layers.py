"""Two layers, one direction: the learner's runtime never imports the instructor's tooling.

`effitrain_lessons.course` (building editions, grading, its sandbox and reports) may import the
runtime; nothing a lesson's kernel imports may import `course`. Only the command line (`cli`)
reaches into it, and only when an instructor's subcommand runs.
"""

import ast
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


def test_importing_the_whole_runtime_loads_none_of_the_tooling():
    names = [f"effitrain_lessons.{p.stem}" for p in runtime_modules() if p.stem != "__init__"]
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m.startswith('effitrain_lessons.course')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_no_edition_imports_the_course_tooling():
    root = PACKAGE.parent
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            assert "effitrain_lessons.course" not in "".join(cell["source"]), (path.name, cell["id"])
