"""The learner who never clones the repository, tried as that learner would (`make test-outside`).

Everything here runs from the wheel `pip wheel .` builds, installed into new virtual environments in
a temporary folder, far from the checkout:

- a learner's environment (`pip install "effitrain-lessons[lab]"`): `effitrain lab` puts the lessons
  in a folder of theirs and serves them; lessons 00 and 01 run there offline, their checks working;
  the instructor's commands say they need the course checkout;
- a simulated Colab: an environment with Colab's kind of packages, older ones among them
  (transformers 4, ipywidgets 7), whose kernel has `google.colab` imported; the lessons' setup cell
  installs the package from a local folder (`PIP_FIND_LINKS`, standing in for PyPI), and the lessons
  run with their checks, from a working folder that holds no notebook, as on Colab.

torch is the tested build (tools/install_torch.py), so these need no GPU and no CUDA download.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ["00_start_here", "01_checkpointing_first_principles"]
SOLUTION_TAG = "otter_assign_solution_cell"
COLAB_PREINSTALLED = [
    "ipywidgets==7.7.1",
    "transformers==4.57.6",
    "ipykernel",
    "nbclient",
    "nbformat",
    "matplotlib",
    "numpy",
]
NEVER_ON_COLAB = ["jupyterlab", "otter-grader", "nbval", "pytest", "playwright", "sphinx", "scikit-learn"]

# Runs one notebook in a kernel of the environment it is started with; writes the executed notebook.
EXECUTE = textwrap.dedent(
    """
    import sys
    import nbformat
    from nbclient import NotebookClient

    source, folder, result = sys.argv[1:4]
    notebook = nbformat.read(source, as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": folder}}
    ).execute()
    nbformat.write(notebook, result)
    """
)


def run(*command, timeout=900, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    """Run a command to success; by default in the temporary folder, never in the checkout (`python -c`
    puts its working folder first on sys.path)."""
    cwd = cwd or tempfile.gettempdir()
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout, cwd=cwd, **kwargs
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def isolated_env(home: Path, **extra) -> dict[str, str]:
    """An environment with nothing of the checkout in it: own home, Jupyter and IPython folders, no hub."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "IPYTHON", "EFFITRAIN"))
    }
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "jupyter-config"),
        JUPYTER_DATA_DIR=str(home / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"),
        IPYTHONDIR=str(home / "ipython"),
        HF_HUB_OFFLINE="1",
        MPLBACKEND="Agg",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        **extra,
    )
    # pip's own cache: downloads made once
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


def new_venv(folder: Path, env: dict) -> Path:
    run(sys.executable, "-m", "venv", folder, env=env)
    python = folder / "bin" / "python"
    run(python, ROOT / "tools" / "install_torch.py", "cpu", env=env)  # the tested CPU build
    return python


def pip_list(python: Path, env: dict) -> dict[str, str]:
    done = run(python, "-m", "pip", "list", "--format", "json", env=env)
    return {item["name"].lower(): item["version"] for item in json.loads(done.stdout)}


def execute(python: Path, notebook: Path, folder: Path, env: dict) -> dict:
    result = notebook.parent / f"{notebook.stem}.executed.json"
    run(python, "-c", EXECUTE, notebook, folder, result, env=env, cwd=folder)
    return json.loads(result.read_text(encoding="utf-8"))


def text_of(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(
            output.get("text", "") if isinstance(output.get("text", ""), str) else "".join(output["text"])
        )
        plain = output.get("data", {}).get("text/plain", "")
        parts.append(plain if isinstance(plain, str) else "".join(plain))
    return "".join(parts)


def source_of(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def checks_shown(notebook: dict) -> dict[str, str]:
    return {
        source_of(c).strip(): text_of(c)
        for c in notebook["cells"]
        if c["cell_type"] == "code" and source_of(c).strip().startswith("grader.check(")
    }


def with_solutions(learner: Path, lesson: str, destination: Path) -> Path:
    """The learner edition with the solution edition's answers in its answer cells (matched by id)."""
    solution = json.loads((ROOT / "notebooks" / "solutions" / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    answers = {
        c["id"]: c["source"]
        for c in solution["cells"]
        if SOLUTION_TAG in c.get("metadata", {}).get("tags", [])
    }
    notebook = json.loads(learner.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell.get("id") in answers:
            cell["source"] = answers[cell["id"]]
    destination.write_text(json.dumps(notebook), encoding="utf-8")
    return destination


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", folder, ROOT)
    (path,) = folder.glob("effitrain_lessons-*.whl")
    return path


# --- a learner's own machine ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def learner(tmp_path_factory, wheel):
    home = tmp_path_factory.mktemp("learner")
    env = isolated_env(home)
    python = new_venv(home / "venv", env)
    run(python, "-m", "pip", "install", "-q", "-c", ROOT / "constraints.txt", f"{wheel}[lab]", env=env)
    return python, env, home


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_lab_puts_the_lessons_in_the_learners_folder_and_serves_them(learner):
    python, env, home = learner
    effitrain = python.parent / "effitrain"
    port = free_port()
    server = subprocess.Popen(
        [effitrain, "lab", "--no-browser", "--port", str(port)],
        cwd=home,
        env={**env, "JUPYTER_TOKEN": "t"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/contents?token=t", timeout=5
                ) as response:
                    listing = json.load(response)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        "effitrain lab did not serve: "
                        f"{server.stdout.read()[-2000:] if server.poll() is not None else ''}"
                    )
                time.sleep(0.5)
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    folder = home / "effitrain-lessons"
    assert f"Your lessons are in {folder}" in output
    served = sorted(item["name"] for item in listing["content"])
    copied = sorted(p.name for p in folder.glob("*.ipynb"))
    assert served == copied and len(copied) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    for name in copied:
        assert (folder / name).read_bytes() == (ROOT / "notebooks" / name).read_bytes()

    # A second run leaves the learner's work alone, and the installed copy is intact.
    mine = folder / copied[0]
    mine.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', encoding="utf-8")
    again = subprocess.Popen(
        [effitrain, "lab", "--no-browser", "--port", str(free_port())],
        cwd=home,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        said = []
        for line in again.stdout:  # what it did to the folder, printed before JupyterLab starts
            said.append(line)
            if line.startswith("Your lessons are in"):
                break
    finally:
        again.terminate()
        again.communicate(timeout=30)
    # the learner's work is theirs: nothing to say or ask
    assert said == [f"Your lessons are in {folder}.\n"], said
    assert mine.read_text(encoding="utf-8").startswith('{"cells": []')
    installed = run(
        python,
        "-c",
        "from effitrain_lessons.shared.checks import installed_lessons; print(installed_lessons())",
        env=env,
        cwd=home,
    ).stdout.strip()
    assert Path(installed).parent.parent.name == "site-packages"
    assert (Path(installed) / copied[0]).read_bytes() == (ROOT / "notebooks" / copied[0]).read_bytes()


@pytest.mark.parametrize("lesson", LESSONS)
def test_lessons_run_offline_with_working_checks(learner, lesson):
    python, env, home = learner
    folder = home / "effitrain-lessons"
    folder.mkdir(exist_ok=True)
    learner_edition = folder / f"{lesson}.ipynb"
    learner_edition.write_bytes((ROOT / "notebooks" / f"{lesson}.ipynb").read_bytes())  # a clean copy
    unanswered = checks_shown(execute(python, learner_edition, folder, env))
    assert unanswered and all("public tests failed" in shown for shown in unanswered.values()), unanswered
    answered = with_solutions(learner_edition, lesson, folder / f"{lesson}.answered.ipynb")
    shown = checks_shown(execute(python, answered, folder, env))
    assert shown.keys() == unanswered.keys()
    assert all("All public tests passed" in text for text in shown.values()), shown


@pytest.mark.parametrize("command", [["build"], ["grade", "x.ipynb", "--out", "results"]])
def test_instructor_commands_say_they_need_the_checkout(learner, command):
    python, env, home = learner
    done = subprocess.run(
        [python.parent / "effitrain", *command],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs the course checkout" in done.stderr and len(done.stderr.strip().splitlines()) == 1, (
        done.stderr
    )


# --- a simulated Colab ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def colab(tmp_path_factory, wheel):
    home = tmp_path_factory.mktemp("colab")
    fake = home / "colab-modules" / "google" / "colab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('"""Stands in for Colab\'s own module."""\n', encoding="utf-8")
    startup = home / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    # Colab's kernels import it
    (startup / "00-colab.py").write_text("import google.colab\n", encoding="utf-8")
    env = isolated_env(home, PYTHONPATH=str(home / "colab-modules"))
    python = new_venv(home / "venv", env)
    run(python, "-m", "pip", "install", "-q", *COLAB_PREINSTALLED, env=env)
    before = pip_list(python, env)
    env["PIP_FIND_LINKS"] = str(wheel.parent)  # the kernel's pip finds the package there, as on PyPI
    content = home / "content"  # Colab's working folder: no notebook in it
    content.mkdir()
    results = {}
    for lesson in LESSONS:
        notebook = home / f"{lesson}.ipynb"
        notebook.write_bytes((ROOT / "notebooks" / f"{lesson}.ipynb").read_bytes())
        results[lesson] = execute(python, notebook, content, env)
    return before, pip_list(python, env), results, content


def test_colab_installs_this_version_and_the_runtime_only(colab):
    before, after, results, content = colab
    from effitrain_lessons import __version__

    assert "effitrain-lessons" not in before and after["effitrain-lessons"] == __version__
    assert after["torch"] == before["torch"]  # Colab's torch is never touched
    # nor its widgets, which satisfy the runtime
    assert after["ipywidgets"] == before["ipywidgets"] == "7.7.1"
    assert before["transformers"].startswith("4.") and int(after["transformers"].split(".")[1]) >= 23
    changed = {name: version for name, version in after.items() if before.get(name) != version}
    assert not [name for name in NEVER_ON_COLAB if name in changed], changed  # no tooling added or upgraded
    setup = text_of(results[LESSONS[0]]["cells"][0])
    assert f"Installed effitrain-lessons {__version__}." in setup
    assert f"transformers {after['transformers']}" in setup  # what pip added or upgraded, said
    assert f"torch {after['torch']}" in setup and "ipywidgets 7.7.1" in setup and "Using cpu" in setup
    print("added or upgraded:", " ".join(f"{name}=={version}" for name, version in sorted(changed.items())))
    print("the set:", " ".join(f"{name}=={version}" for name, version in sorted(after.items())))
    # checks need no notebook on disk
    assert sorted(p.name for p in content.iterdir() if p.suffix == ".ipynb") == []


def test_on_colab_the_lessons_run_and_check_answers(colab):
    before, after, results, content = colab
    for lesson, notebook in results.items():
        shown = checks_shown(notebook)
        assert shown and all("public tests failed" in text for text in shown.values()), (lesson, shown)
        assert "Installed" in text_of(notebook["cells"][0]) or "already installed" in text_of(
            notebook["cells"][0]
        )
