# Quick start: `make lab` opens the lessons, `make test` runs every test (`make test-fast` while you edit).
# Both create .venv on first use; later runs reuse it (the stamp changes only
# when pyproject.toml or constraints.txt does). `make test` also installs Debian's
# Chromium (browser tests) and bubblewrap (the grading sandbox) when they are
# missing (apt-get, as root or via sudo).

PYTHON ?= python3
# PyTorch's build: cuda (PyPI's, CUDA on Linux) where nvidia-smi sees a GPU, else cpu (a CPU-only
# build; on Linux from PyTorch's CPU index unless pip already finds one). `make setup TORCH=cuda`
# or `TORCH=cpu` chooses; tools/install_torch.py says how.
TORCH ?= $(if $(shell nvidia-smi -L 2>/dev/null),cuda,cpu)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.effitrain-setup
PORT ?= 8888
NO_BROWSER ?=
EDITION ?= en
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` and `make test-fast` (tests/conftest.py says how they share the work);
# 0 runs every test in this one process.
WORKERS ?= 2
# What `make test-fast` leaves out: the tiers that need Chromium, bubblewrap or a whole lesson run.
SLOW_TIERS := not browser and not sandbox and not notebooks
LOWEST ?= .venv-lowest
LOWEST_STAMP := $(LOWEST)/.effitrain-setup
LOWEST_CONSTRAINTS := $(LOWEST)/constraints-lowest.txt
# test-lowest leaves out what needs Chromium or bubblewrap, or takes long.
LOWEST_LEFT_OUT := tests/test_browser.py tests/test_benchmarks.py tests/test_grading.py tests/test_sandbox.py
LOWEST_NOTEBOOKS := notebooks/00_start_here.ipynb notebooks/01_checkpointing_first_principles.ipynb \
	notebooks/02_checkpointing_with_trainer.ipynb
BENCH_ARGS ?=
CHROMIUM ?= /usr/bin/chromium
BWRAP ?= /usr/bin/bwrap
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
comma := ,

# $(call apt_install,PACKAGE,MESSAGE): install a Debian package, or say MESSAGE where there is no apt-get.
define apt_install
	@if command -v apt-get >/dev/null; then \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(1) >/dev/null; \
	else \
		echo "$(2)"; \
	fi
endef

.PHONY: setup browser sandbox lab lint format test test-fast test-lowest test-outside bench gpu-check notebooks catalogs clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt tools/install_torch.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/install_torch.py $(TORCH)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[lab,instructor,test]"
	touch $(STAMP)

# The browser tests drive the system Chromium; no browser is downloaded by Playwright.
browser: $(CHROMIUM)

$(CHROMIUM):
	$(call apt_install,chromium,No apt-get here: install Chromium yourself and set EFFITRAIN_CHROMIUM$(comma) or the browser tests are skipped.)

# `effitrain grade` runs every submission in a bubblewrap sandbox.
sandbox: $(BWRAP)

$(BWRAP):
	$(call apt_install,bubblewrap,No apt-get here: install bubblewrap yourself$(comma) or effitrain grade refuses to run.)

lab: setup
	$(BIN)/effitrain lab --lang $(EDITION) --port $(PORT) $(if $(NO_BROWSER),--no-browser)

# ruff (configured in pyproject.toml; lessons/ruff.toml for the masters' code cells): `make lint` checks,
# `make format` rewrites what the formatter owns and applies ruff's safe fixes.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Every test: the lint, then the whole suite on $(WORKERS) workers (about 10 min on 2 cores, setup apart).
test: lint browser sandbox
	EFFITRAIN_CHROMIUM=$(CHROMIUM) EFFITRAIN_REQUIRE_SANDBOX=1 $(BIN)/python -m pytest -n $(WORKERS) $(PYTEST_ARGS)

# The edit loop (under 3 min): the lint and every test that needs no browser, no sandbox and no whole
# lesson run. `make test` before you push: it is what CI runs.
test-fast: lint
	$(BIN)/python -m pytest -n $(WORKERS) -m "$(SLOW_TIERS)" $(PYTEST_ARGS)

# The lower bounds in pyproject.toml, tested: .venv-lowest holds every direct dependency at its lower
# bound (tools/lowest_constraints.py writes the constraints from pyproject.toml; torch stays at the
# tested version, installed as for `make setup`), then the unit tests and lessons 00-02 run offline,
# without the Hub. A fresh .venv-lowest whenever pyproject.toml, constraints.txt or the tools change
# (about 2 min to install with pip's cache warm), reused otherwise; the tests take 2 to 5 min on 2 cores.
$(LOWEST_STAMP): pyproject.toml constraints.txt tools/lowest_constraints.py tools/install_torch.py
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python tools/install_torch.py $(TORCH)
	$(LOWEST)/bin/python tools/lowest_constraints.py > $(LOWEST_CONSTRAINTS)
	$(LOWEST)/bin/python -m pip install --disable-pip-version-check -q -c $(LOWEST_CONSTRAINTS) -e ".[lab,instructor,test]"
	touch $(LOWEST_STAMP)

test-lowest: $(LOWEST_STAMP)
	HF_HUB_OFFLINE=1 $(LOWEST)/bin/python -m pytest -p no:cacheprovider $(addprefix --ignore=,$(LOWEST_LEFT_OUT)) \
		tests $(LOWEST_NOTEBOOKS) $(PYTEST_ARGS)

# Benchmarks (about 40 min): writes benchmarks/RESULTS.md and RESULTS.json, compared with the
# committed ones. BENCH_ARGS="--repeats 1" for a quicker look.
bench: setup sandbox
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# Lesson 6's planner against a real GPU, then lesson 7's solution edition run on it (about 6 min):
# benchmarks/GPU_CHECK.md and gpu_check.json; none without CUDA.
gpu-check: setup
	$(BIN)/python tools/gpu_check.py

notebooks: setup
	$(BIN)/effitrain build

# The translation catalogs (lessons/tr/*.po and the package's), brought in step with the English:
# translate what it lists, then `make notebooks`.
catalogs: setup
	$(BIN)/effitrain extract

clean:
	rm -rf $(VENV) $(LOWEST) build *.egg-info

# The learner outside the checkout (about 5 min): the wheel installed into new environments in a
# temporary folder, `effitrain lab` and lessons 00-01 there, and a simulated Colab.
test-outside: setup
	$(BIN)/python -m pytest tests_outside -p no:cacheprovider $(PYTEST_ARGS)
