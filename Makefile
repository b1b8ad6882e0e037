# scopegate: `make demo` runs the worked example, `make test` runs every test layer.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CACHE  := $(CURDIR)/.cache

.PHONY: demo test unit-pythons install install-dev lint typecheck bench eval docs clean opensearch-node

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml or the C extension's source changes (the editable
# install compiles src/scopegate/search/_wordscan.c in place).
NATIVE := src/scopegate/search/_wordscan.c src/scopegate/search/_word_marks.h

# The demo runs an ADK agent and the MCP server: the two framework extras.
$(VENV)/.installed: pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/pip install -q -e ".[adk,mcp]"
	touch $@

# The dev extra plus the lab (lab/: test and benchmark machinery, never in the wheel), the lab as a plain
# path entry (compat mode: no import hook in every process).
$(VENV)/.installed-dev: pyproject.toml lab/pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"
	$(BIN)/pip install -q -e ./lab --config-settings editable_mode=compat
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/scopegate demo

# Builds and starts what the tests need (OpenSearch node, Redis), runs pytest, stops them.
test: install-dev
	bash scripts/run-tests.sh

# The unit layer on Python 3.12 and 3.13 (native and pure-Python snippets) and the pure path on 3.11 (CI runs it).
unit-pythons: install-dev
	bash scripts/unit-other-pythons.sh

lint: install-dev
	$(BIN)/ruff check src tests bench lab
	$(BIN)/mypy

bench: install-dev
	$(BIN)/python bench/bench_embedded.py

# Full offline agent evals (every shipped set, the 0.5B and 1.5B models, pass^3) -> bench/results/eval_*.md/.json.
# CPU-heavy: runs niced; SCOPEGATE_LLM_THREADS=2 on a quiet machine (default: 2 when idle, else 1).
eval: install-dev
	nice -n 10 $(BIN)/python bench/bench_eval.py

# The docs site into .cache/site (reference pages generated from the code); `mkdocs serve` to preview.
docs: install-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) $(CACHE) build dist src/*.egg-info
