# scopegate: `make demo` runs the worked example, `make test` runs every test layer.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CACHE  := $(CURDIR)/.cache

.PHONY: demo test install install-dev lint typecheck bench clean opensearch-node

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/scopegate demo

# Builds and starts what the tests need (OpenSearch node, Redis), runs pytest, stops them.
test: install-dev
	bash scripts/run-tests.sh

lint: install-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: install-dev
	$(BIN)/python bench/bench_embedded.py

clean:
	rm -rf $(VENV) $(CACHE) build dist src/*.egg-info
