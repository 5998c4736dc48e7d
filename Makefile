# Quick start: `make lab` opens the lessons, `make test` runs every test.
# Both create .venv on first use; later runs reuse it (the stamp changes only
# when pyproject.toml or constraints.txt does).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.effitrain-setup
PORT ?= 8888
NO_BROWSER ?=
PYTEST_ARGS ?=

.PHONY: setup lab test notebooks clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[test]"
	touch $(STAMP)

lab: setup
	$(BIN)/effitrain lab --port $(PORT) $(if $(NO_BROWSER),--no-browser)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

notebooks: setup
	$(BIN)/effitrain build

clean:
	rm -rf $(VENV) build *.egg-info
