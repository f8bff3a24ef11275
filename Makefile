# The two commands of the README. Each creates .venv if missing and installs
# the project into it, so a fresh machine needs only Python >= 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-floor bench setup clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,examples]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# each ends with its counts: pytest's "N passed", lit's "Passed: N"
test: $(STAMP)
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

BENCHES := eager_overhead trace_latency elementwise row_ops control_flow mlp_step lbfgs_autoencoder dynamic_shapes

# every benchmark (a few minutes); peers' rows where torch / tensorflow / jax are installed
bench: $(STAMP)
	for b in $(BENCHES); do $(PY) bench/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
