# The two commands of the README. Each creates .venv if missing and installs
# the project into it, so a fresh machine needs only Python >= 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-floor bench setup sysdeps clean gpu-check

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,examples]'
	touch $(STAMP)

setup: $(STAMP)

# System packages: Graphviz's dot (the compile report's graph) and Chromium (its browser
# test). Installed with apt-get where we are root and they are missing; elsewhere the
# tests that need them skip, naming the package.
sysdeps:
	@if command -v dot >/dev/null && command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null) \
		|| echo "sysdeps: apt-get could not install graphviz/chromium; the report's tests will skip"; \
	else echo "sysdeps: graphviz and chromium missing and not root; the report's tests will skip"; fi

demo: $(STAMP) sysdeps
	$(PY) examples/demo.py

# each ends with its counts: pytest's "N passed", lit's "Passed: N"
test: $(STAMP) sysdeps
	$(PY) -m pytest -q tests/
	$(VENV)/bin/lit -sv filecheck/

# the oldest versions pyproject.toml allows (tests/test_floor.py --pins), in a second
# venv inside .venv, running the tests that depend on numpy's behaviour (CI runs it)
FLOOR := $(VENV)/floor
FLOOR_TESTS := tests/test_floor.py tests/test_dtypes.py tests/test_tensor.py tests/test_gradients.py \
	tests/test_fusion.py tests/test_numpy_backend.py tests/test_examples.py
test-floor: $(STAMP)
	test -x $(FLOOR)/bin/python || $(PYTHON) -m venv $(FLOOR)
	$(FLOOR)/bin/python -m pip install -q $$($(PY) tests/test_floor.py --pins) pytest hypothesis
	PYTHONPATH=$(CURDIR) $(FLOOR)/bin/python -m pytest -q -p no:cacheprovider $(FLOOR_TESTS) \
		-k "not autoencoder and not mlp"

BENCHES := eager_overhead trace_latency elementwise row_ops control_flow mlp_step lbfgs_autoencoder dynamic_shapes allreduce transformer cnn quantize data_pipeline matmul_forms

# every benchmark (a few minutes); peers' rows where torch / tensorflow / jax are installed;
# then one plot per table into docs/images/ (bench/plots.py), shown in docs/benchmarks.md
bench: $(STAMP)
	rm -f docs/images/bench-results.jsonl
	for b in $(BENCHES); do TFC_BENCH_RESULTS=docs/images/bench-results.jsonl $(PY) bench/$$b.py || exit 1; done
	$(PY) bench/plots.py docs/images/bench-results.jsonl --out docs/images

# The GPU check (docs/gpu-runtime.md), on a machine with an NVIDIA GPU and a Python
# with numpy and pytest (torch for the peers of bench/gpu.py), no network needed:
# installs the kit of tools/gpu_kit.sh (.whl/: xdsl, pycuda, their dependencies) into
# GPU_SITE, then runs every test marked gpu, the GPU tests (tests/test_cuda*.py,
# tests/test_*gpu*.py, tests/test_ptx*.py) with TFC_CUDA_DRIVER unset (the real
# driver), bench/gpu.py, and with GPU_SANITIZE the gpu tests under compute-sanitizer.
# Every step runs and prints; the target fails if one did.
# Not `make test`'s venv: GPU_PYTHON is the machine's own Python.
GPU_PYTHON ?= python3
GPU_SITE ?= /tmp/tfc-gpu-site
GPU_TESTS = $(wildcard tests/test_cuda*.py tests/test_*gpu*.py tests/test_ptx*.py)
GPU_BENCH_ARGS ?=
# GPU_SANITIZE="memcheck racecheck": the gpu tests again under compute-sanitizer (slow)
GPU_SANITIZE ?=
GPU_SANITIZE_TESTS ?= tests/
GPU_ENV = env -u TFC_CUDA_DRIVER PYTHONPATH=$(GPU_SITE):$(CURDIR) PYTHONUNBUFFERED=1
gpu-check:
	@ls .whl/*.whl >/dev/null 2>&1 || { echo "gpu-check: no .whl/ here: run tools/gpu_kit.sh first (on a machine with internet)"; exit 1; }
	$(GPU_PYTHON) -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $(GPU_SITE) .whl/*.whl
	@nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
	@rc=0; \
	echo "== pytest -m gpu tests/"; \
	$(GPU_ENV) $(GPU_PYTHON) -m pytest -q -p no:cacheprovider -rs -m gpu tests/ || rc=1; \
	echo "== pytest $(GPU_TESTS)"; \
	$(GPU_ENV) $(GPU_PYTHON) -m pytest -q -p no:cacheprovider -rs $(GPU_TESTS) || rc=1; \
	echo "== python bench/gpu.py $(GPU_BENCH_ARGS)"; \
	$(GPU_ENV) $(GPU_PYTHON) bench/gpu.py $(GPU_BENCH_ARGS) || rc=1; \
	for tool in $(GPU_SANITIZE); do \
		echo "== compute-sanitizer --tool $$tool: pytest -m gpu $(GPU_SANITIZE_TESTS)"; \
		$(GPU_ENV) compute-sanitizer --tool $$tool --report-api-errors no --error-exitcode 99 \
			$(GPU_PYTHON) -m pytest -q -p no:cacheprovider -m gpu $(GPU_SANITIZE_TESTS) || rc=1; \
	done; \
	if [ $$rc = 0 ]; then echo "gpu-check: every step passed"; else echo "gpu-check: a step FAILED (above)"; fi; \
	exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
