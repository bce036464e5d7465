# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: demo test lint bench clean sandbox-deps browser-deps

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch must come first and pinned: 2.13.0 is the CPU build on this disk; anything looser pulls CUDA.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,embed,es,bench,hf,scale,s3,train,chain,verifiers,report,renderers]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

demo: $(STAMP) sandbox-deps
	$(BIN)/python -m shoparena.demo

lint: $(STAMP)
	$(BIN)/ruff check shoparena shoparena_verifiers tests bench
	$(BIN)/ruff format --check shoparena shoparena_verifiers tests bench

test: $(STAMP) lint sandbox-deps browser-deps
	$(BIN)/python -m pytest -n 2 --dist loadscope -q

# The sandbox (shoparena.sandbox) runs untrusted agents under bubblewrap: install it when it is missing
# and we may (root with apt-get), and say loudly when it is still missing — the sandbox tests then FAIL,
# unless SHOPARENA_SANDBOX_UNAVAILABLE=<reason> declares that this machine cannot sandbox.
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap for the sandbox (apt-get install -y bubblewrap)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap >/dev/null 2>&1 || \
	    { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap; }; \
	  fi; }
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "********************************************************************************" >&2; \
	  echo "* bubblewrap (bwrap) is NOT installed and could not be installed here.          *" >&2; \
	  echo "* The sandbox cannot run: its tests will FAIL. Install it (apt-get install -y   *" >&2; \
	  echo "* bubblewrap) or set SHOPARENA_SANDBOX_UNAVAILABLE=<reason> on a machine that    *" >&2; \
	  echo "* cannot sandbox.                                                                *" >&2; \
	  echo "********************************************************************************" >&2; }

# The leaderboard page is tested in a real headless browser (Debian chromium): install it when it is
# missing and we may (root with apt-get), and say loudly when it is still missing — the browser tests
# then SKIP with that reason (and FAIL where CI=true).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the browser tests (apt-get install -y chromium chromium-driver)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; }; \
	  fi; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "********************************************************************************" >&2; \
	  echo "* chromium is NOT installed and could not be installed here.                    *" >&2; \
	  echo "* The leaderboard's browser tests will SKIP (and FAIL where CI=true). Install   *" >&2; \
	  echo "* it: apt-get install -y chromium chromium-driver                               *" >&2; \
	  echo "********************************************************************************" >&2; }

# Every benchmark with its defaults (the 2.7M search run alone takes ~15 min on 2 cores).
bench: $(STAMP)
	$(BIN)/python bench/search_bench.py
	$(BIN)/python bench/harness_bench.py --catalog /tmp/shoparena-bench/cat-2700000
	$(BIN)/python bench/score_bench.py --catalog /tmp/shoparena-bench/cat-2700000
	$(BIN)/python bench/eval_bench.py
	$(BIN)/python bench/tool_server_bench.py
	$(BIN)/python bench/store_bench.py --pg postgresql://postgres@127.0.0.1:5432/postgres
	$(BIN)/python bench/corpus_bench.py --n 100000 --profile full
	$(BIN)/python bench/corpus_bench.py --n 1000000 --profile compact
	$(BIN)/python bench/judge_bench.py --n 2000
	$(BIN)/python bench/rewrite_bench.py --n 5000 --workers 2
	$(BIN)/python bench/sandbox_bench.py
	$(BIN)/python bench/arena_bench.py --redis redis://127.0.0.1:6379/0 --pg postgresql://postgres@127.0.0.1:5432/postgres
	$(BIN)/python bench/admission_bench.py
	$(BIN)/python bench/train_bench.py
	$(BIN)/python bench/model_server_bench.py
	$(BIN)/python bench/loop_bench.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
