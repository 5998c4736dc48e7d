"""Print a pip constraints file that pins every direct dependency to its lower bound.

Reads pyproject.toml's dependencies and every extra, turns each `name>=X` into `name==X` and, where a
package is listed more than once (ipywidgets in the runtime and in the lab extra), keeps the higher
bound: that is what installing every extra together can get. torch is the one exception: it stays at
the tested version, constraints.txt's (install_torch.tested_version): any other version would mean a
multi-GB CUDA download where no CPU wheel is at hand, so torch's own lower bound is only checked for
being met, never installed. `make test-lowest` installs the project with
these constraints and runs the tests, so the lower bounds in pyproject.toml and the check of them
cannot drift apart.

Usage: python tools/lowest_constraints.py [path/to/pyproject.toml] > constraints-lowest.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from install_torch import tested_version  # this folder's: the script runs as tools/lowest_constraints.py

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


# name, optional [extras], then the specifiers up to an optional environment marker (PEP 508, no URLs)
REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*?)\s*(?:;.*)?$")
LOWER = re.compile(r"(>=|==|~=)\s*([0-9][0-9A-Za-z.+!-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def release(version: str) -> tuple[int, ...]:
    """The release part of a version (6.1.2 -> (6, 1, 2)), enough to compare lower bounds."""
    match = re.match(r"(?:\d+!)?(\d+(?:\.\d+)*)", version)
    if not match:
        raise ValueError(f"cannot read the version {version!r}")
    parts = [int(part) for part in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def lower_bound(requirement: str) -> tuple[str, str, str]:
    """(canonical name, name as written, lower bound) of one requirement string."""
    match = REQUIREMENT.match(requirement)
    if not match:
        raise ValueError(f"cannot read the requirement {requirement!r}")
    name, specifiers = match.groups()
    bounds = LOWER.findall(specifiers)
    if not bounds:
        raise ValueError(f"{requirement!r} has no lower bound (>=, == or ~=): make test-lowest needs one")
    version = max((version for _, version in bounds), key=release)
    return canonical(name), name, version


def requirements(pyproject: Path) -> list[tuple[str, str]]:
    """(where, requirement) for the dependencies and every extra, in the file's order."""
    project = tomllib.loads(pyproject.read_text())["project"]
    found = [("dependencies", r) for r in project.get("dependencies", [])]
    for extra, listed in project.get("optional-dependencies", {}).items():
        found += [(f"extra {extra}", r) for r in listed]
    return found


def constraints(pyproject: Path) -> list[str]:
    pins: dict[str, tuple[str, str, list[str]]] = {}
    for where, requirement in requirements(pyproject):
        key, name, version = lower_bound(requirement)
        if key in pins:
            _, known, sources = pins[key]
            sources.append(f"{where}: {requirement}")
            if release(version) > release(known):
                pins[key] = (name, version, sources)
        else:
            pins[key] = (name, version, [f"{where}: {requirement}"])

    lines = [f"# The lowest versions {pyproject.name} allows, written by tools/lowest_constraints.py."]
    for key, (name, version, sources) in pins.items():
        if key == "torch":
            tested = tested_version(pyproject.parent / "constraints.txt")
            if release(tested) < release(version):
                raise ValueError(f"constraints.txt's torch=={tested} is below pyproject's torch>={version}")
            lines.append(
                f"# torch: pyproject allows {version}, but torch stays at the tested {tested} "
                "(constraints.txt), the"
            )
            lines.append(
                "# CPU build tools/install_torch.py installs; another "
                "version would download a multi-GB CUDA build."
            )
            version = tested
        elif len(sources) > 1:
            lines.append(f"# {name}: the highest of {'; '.join(sources)}")
        lines.append(f"{name}=={version}")
    return lines


def main(argv: list[str]) -> int:
    pyproject = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        print("\n".join(constraints(pyproject)))
    except ValueError as error:
        print(f"lowest_constraints: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
