# Quick start: `make lab` opens the lessons, `make test` runs every test.
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
PYTEST_ARGS ?=
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

.PHONY: setup browser sandbox lab test test-outside bench notebooks clean

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
	$(BIN)/effitrain lab --port $(PORT) $(if $(NO_BROWSER),--no-browser)

test: setup browser sandbox
	EFFITRAIN_CHROMIUM=$(CHROMIUM) EFFITRAIN_REQUIRE_SANDBOX=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

# Benchmarks (about 40 min): writes benchmarks/RESULTS.md and RESULTS.json, compared with the
# committed ones. BENCH_ARGS="--repeats 1" for a quicker look.
bench: setup sandbox
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

notebooks: setup
	$(BIN)/effitrain build

clean:
	rm -rf $(VENV) build *.egg-info

# The learner outside the checkout (about 6 min): the wheel installed into new environments in a
# temporary folder, `effitrain lab` and lessons 00-01 there, and a simulated Colab.
test-outside: setup
	$(BIN)/python -m pytest tests_outside -p no:cacheprovider $(PYTEST_ARGS)
