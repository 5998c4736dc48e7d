"""pyproject.toml, constraints.txt, environment.yml and binder/ must describe the same environment."""

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CONDA_TO_PYPI = {"pytorch-cpu": "torch"}
NOT_PACKAGES = {"python", "pip"}


def pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + project["optional-dependencies"]["test"]
    return {canonicalize_name(r.name): r for r in map(Requirement, listed)}


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
    for name, requirement in pyproject_requirements().items():
        assert name in pins, f"{name} is a dependency but constraints.txt does not pin it"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} breaks {requirement}"


def test_torch_is_the_cpu_build_on_disk():
    assert constraints()["torch"] == Version("2.13.0")


def test_conda_environment_names_the_same_packages_with_the_same_bounds():
    ours = pyproject_requirements()
    conda = conda_requirements()
    assert set(conda) == set(ours)
    for name, bound in conda.items():
        assert bound == str(ours[name].specifier), f"environment.yml has {name}{bound}, pyproject {ours[name]}"


def test_binder_names_the_same_packages_and_uses_the_constraints():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert "-c ../constraints.txt" in text
    assert "download.pytorch.org/whl/cpu" in text  # the CPU-only wheel index
    names = {canonicalize_name(Requirement(line).name) for line in requirement_lines(ROOT / "binder" / "requirements.txt")}
    assert names == set(pyproject_requirements())
    assert "pip install --no-deps -e ." in (ROOT / "binder" / "postBuild").read_text()
