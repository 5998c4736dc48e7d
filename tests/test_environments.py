"""pyproject.toml, constraints.txt, environment.yml and binder/ must describe the same environments.

pyproject.toml is the source: the runtime (all a lesson's kernel needs, and all Colab installs) and
the extras `lab`, `instructor` and `test`. constraints.txt pins every one of them (the tested set);
environment.yml (conda) and binder/ are the learner's set: the runtime and `lab`.
"""

import re
from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CONDA_TO_PYPI = {"pytorch-cpu": "torch", "matplotlib-base": "matplotlib", "playwright-python": "playwright"}
NOT_PACKAGES = {"python", "pip"}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LEARNER = ("lab",)  # the extras of the learner's set
EXTRAS = ("lab", "instructor", "test")


def pyproject_requirements(extras=EXTRAS) -> dict[str, list[Requirement]]:
    """Every requirement of the runtime and `extras`, by package (a package may appear in several)."""
    found = {}
    for line in PROJECT["dependencies"] + [
        r for extra in extras for r in PROJECT["optional-dependencies"][extra]
    ]:
        requirement = Requirement(line)
        found.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    return found


def lower_bound(requirements: list[Requirement]) -> Version:
    """The highest of the `>=` bounds: what installing them together asks for at least."""
    bounds = [Version(spec.version) for r in requirements for spec in r.specifier if spec.operator == ">="]
    assert len(bounds) == len(requirements), f"every requirement has one >= bound: {requirements}"
    return max(bounds)


def test_every_package_has_exactly_a_lower_bound():
    for requirements in pyproject_requirements().values():
        for requirement in requirements:
            assert [spec.operator for spec in requirement.specifier] == [">="], requirement
            assert not requirement.extras and not requirement.marker, requirement


def test_the_runtime_is_what_a_lesson_needs_and_no_tooling():
    runtime = set(pyproject_requirements(extras=()))
    assert {"torch", "transformers", "accelerate", "datasets", "matplotlib", "ipywidgets"} <= runtime
    assert not runtime & {"jupyterlab", "otter-grader", "nbval", "pytest", "playwright", "nbclient"}


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def constraints() -> dict[str, Version]:
    pins = {}
    for line in requirement_lines(ROOT / "constraints.txt"):
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"constraints.txt must pin exactly: {line}"
        pins[canonicalize_name(requirement.name)] = Version(spec.version)
    return pins


def conda_requirements() -> dict[str, str]:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    found = {}
    for entry in environment["dependencies"]:
        for item in entry["pip"] if isinstance(entry, dict) else [entry]:
            if item.startswith("-e"):
                continue
            name, bound = re.fullmatch(r"([\w.-]+)\s*(.*)", item).groups()
            name = CONDA_TO_PYPI.get(name, name)
            if name not in NOT_PACKAGES:
                found[canonicalize_name(name)] = bound
    return found


def test_every_dependency_is_pinned_within_its_lower_bound():
    pins = constraints()
    for name, requirements in pyproject_requirements().items():
        assert name in pins, f"{name} is a dependency but constraints.txt does not pin it"
        for requirement in requirements:
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"{name}=={pins[name]} breaks {requirement}"
            )


def test_torch_is_the_cpu_build_on_disk():
    assert constraints()["torch"] == Version("2.13.0")


def test_conda_environment_is_the_learners_set_with_the_same_bounds():
    ours = pyproject_requirements(extras=LEARNER)
    conda = conda_requirements()
    assert set(conda) == set(ours)
    for name, bound in conda.items():
        assert bound == f">={lower_bound(ours[name])}", (
            f"environment.yml has {name}{bound}, pyproject {ours[name]}"
        )
    text = (ROOT / "environment.yml").read_text()
    assert "matplotlib-base" in text and "Binder does not read this file" in text


def test_binder_is_the_learners_set_and_uses_the_constraints():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert "-c ../constraints.txt" in text and "ignores the root environment.yml" in text
    assert "download.pytorch.org/whl/cpu" in text  # the CPU-only wheel index
    names = {
        canonicalize_name(Requirement(line).name)
        for line in requirement_lines(ROOT / "binder" / "requirements.txt")
    }
    assert names == set(pyproject_requirements(extras=LEARNER))
    assert "pip install --no-deps -e ." in (ROOT / "binder" / "postBuild").read_text()


def test_make_setup_takes_a_cpu_torch_unless_asked_for_cuda():
    import importlib.util

    spec = importlib.util.spec_from_file_location("install_torch", ROOT / "tools" / "install_torch.py")
    install_torch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install_torch)
    assert install_torch.tested_version() == str(constraints()["torch"])
    cpu_index = ["install", "torch==2.13.0+cpu", "--extra-index-url", install_torch.CPU_INDEX]
    # Linux: PyPI's build is CUDA, so the CPU index, unless pip already finds a CPU build (a local wheel).
    assert install_torch.pip_arguments("cpu", "2.13.0", "2.13.0", "linux") == cpu_index
    assert install_torch.pip_arguments("cpu", "2.13.0", None, "linux") == cpu_index
    assert install_torch.pip_arguments("cpu", "2.13.0", "2.13.0+cpu", "linux") == ["install", "torch==2.13.0"]
    # macOS and Windows: PyPI's build is the CPU one; cuda: PyPI's build, as asked.
    assert install_torch.pip_arguments("cpu", "2.13.0", None, "darwin") == ["install", "torch==2.13.0"]
    assert install_torch.pip_arguments("cuda", "2.13.0", "2.13.0+cpu", "linux") == [
        "install",
        "torch==2.13.0",
    ]
    assert install_torch.CPU_INDEX == "https://download.pytorch.org/whl/cpu"
