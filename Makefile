# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch must come first and pinned: 2.13.0 is the CPU build on this disk; anything looser pulls CUDA.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,embed,es,bench,hf,scale]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m shoparena.demo

lint: $(STAMP)
	$(BIN)/ruff check shoparena tests bench
	$(BIN)/ruff format --check shoparena tests bench

test: $(STAMP) lint
	$(BIN)/python -m pytest -n 2 -q

# Every benchmark with its defaults (the 2.7M search run alone takes ~15 min on 2 cores).
bench: $(STAMP)
	$(BIN)/python bench/search_bench.py
	$(BIN)/python bench/harness_bench.py --catalog /tmp/shoparena-bench/cat-2700000
	$(BIN)/python bench/score_bench.py --catalog /tmp/shoparena-bench/cat-2700000
	$(BIN)/python bench/eval_bench.py
	$(BIN)/python bench/store_bench.py --pg postgresql://postgres@127.0.0.1:5432/postgres
	$(BIN)/python bench/corpus_bench.py --n 100000 --profile full
	$(BIN)/python bench/corpus_bench.py --n 1000000 --profile compact
	$(BIN)/python bench/admission_bench.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
