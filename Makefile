# Developer and CI entry points.
#
#   make setup   Debian packages, .venv with gpuop[dev], control-plane binaries and helm (cached;
#                the first build takes ~20 min on 2 cores)
#   make test    ruff check, ruff format --check, mypy, lint-imports, pytest (unit + fuzz + e2e)
#   make unit    the unit tests without the fuzz runs (no cluster, no build; 2-3 minutes)
#   make fuzz    the fuzz runs alone (HYPOTHESIS_PROFILE=deep for a long hunt)
#   make image   the operator image (OCI layout, an archive for docker load / ctr images import,
#                an SPDX SBOM) in dist/image/, from Debian packages and the wheel; no daemon
#
# `make -k test` runs every check even after one fails (CI does).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEBIAN_PACKAGES := $(shell sed -e 's/\#.*//' scripts/debian-packages.txt)

.PHONY: setup system-packages venv binaries containerd2 test unit fuzz lint format-check typecheck imports pytest lab image

setup: system-packages venv binaries containerd2

system-packages:
	$(SUDO) apt-get update
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)

venv:
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[dev]'

# The control plane and helm; reuses ~/.cache/gpuop/bin (or $$GPUOP_CACHE_DIR) when it is there.
binaries:
	$(BIN)/python -m gpuop cluster build

# containerd 2.x for the toolkit's real-containerd tests (cached like the control plane).
containerd2:
	scripts/build-containerd.sh

# Sets up first (cached after the first run), so it works on a fresh machine on its own.
test: setup
	$(MAKE) lint format-check typecheck imports pytest

# No setup: the unit tests need neither the control plane nor containerd.
unit:
	$(BIN)/pytest tests/unit -m "not fuzz" -n auto $(PYTEST_ARGS)

fuzz:
	$(BIN)/pytest tests/unit -m fuzz $(PYTEST_ARGS)

lint:
	$(BIN)/ruff check .

format-check:
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

imports:
	$(BIN)/lint-imports

# pytest's exit code 5 means it collected no tests: that is a failure, and says so. A bare
# `pytest` leaves the end-to-end tests out; here they run (setup has made the binaries).
pytest:
	rc=0; GPUOP_REQUIRE_CONTAINERD=1 $(BIN)/pytest --with-e2e $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; fi; \
	exit $$rc

# The main job: the three-node lab on a local cluster (builds the control plane once).
lab: system-packages venv binaries
	$(BIN)/gpuop lab

# The operator image (needs root or user namespaces, mmdebstrap from system-packages); the
# Debian packages and wheels it downloads are cached in ~/.cache/gpuop/image.
image: system-packages venv
	$(BIN)/python image/build_image.py build --out dist/image
