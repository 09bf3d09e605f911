# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# multinode.horovod — developer entry points. `make help` lists them.
# Everything a fresh Debian machine lacks is installed by these targets themselves.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
VENV_CACHE ?= /var/cache/multinode-horovod/venvs
BIN := $(abspath $(VENV))/bin
CACHE := $(abspath .cache)
# Scenarios in the order `make molecule` starts them (longest first: two run side by side, below).
# SCENARIO=name runs one. Each scenario builds or reuses the images it needs itself (the dependency
# step in its molecule.yml; tools/images.py lets one run at a time touch the image cache).
SCENARIOS ?= horovod_launch storage default docker_horovod nfs
SCENARIO ?=
# How many scenarios run side by side (tools/scenarios.py --jobs): on two cores one scenario leaves the
# CPU idle a quarter to two fifths of its time (Docker, image loads, training runs); they share no
# instance, network or host directory. make test-all runs one at a time: its fault tests count on timeouts
# (a stall, a lost worker) that a shared CPU would stretch.
MOLECULE_JOBS ?= 2
# make lab EXAMPLE=horovod [HOROVOD_EXAMPLES=/path/to/a/clone/of/horovod]
EXAMPLE ?=
HOROVOD_EXAMPLES ?=

# make test runs each scenario's CI set; make test-all (MNH_TESTS=all) adds the long fault and
# operations tests the scenarios mark as such, and runs every scenario on Debian 13 too (CONTRIBUTING.md).
MNH_TESTS ?=
export MNH_TESTS
# The Debian release of the test hosts (images, lab machines, UML instances): bookworm or trixie.
MNH_DEBIAN ?=
export MNH_DEBIAN

# Only the virtualenv is added: everything else the tools read (collections path, CA bundle, colours
# in logs) they settle themselves, so the commands run the same typed by hand with the venv active.
export PATH := $(BIN):$(PATH)

.PHONY: help prepare venv images image-gpu image-torch lint unit ansible-test docs molecule test test-all matrix lab lab-scale-out lab-old-horovod lab-torchrun lab-guide-imagenet lab-tensorboard lab-bench-slow-node lab-elastic lab-down bench bench-controller clean

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

prepare: ## Install the host packages the test beds need and start dockerd when none answers
	$(PYTHON) tools/prepare_host.py

# The toolchain is built once per content of requirements.txt and Python version under VENV_CACHE
# (like the images, cached by what goes into it), and $(VENV) links there: a fresh clone on the
# same machine reuses it in a second. VENV_CACHE= (empty) builds it in $(VENV) itself.
# $(call build_venv,DIR): a virtualenv in DIR with requirements.txt installed.
# pip's own lines, and a heartbeat while it installs (tools/progress.py): a fresh build takes minutes.
pip_progress = $(PYTHON) tools/progress.py run pip -- $(1)/bin/pip install --progress-bar off --disable-pip-version-check
build_venv = { $(PYTHON) -m venv $(1) && $(call pip_progress,$(1)) --upgrade pip && $(call pip_progress,$(1)) -r requirements.txt; }
$(VENV)/.stamp: requirements.txt
	@if [ -z "$(VENV_CACHE)" ]; then \
	  if [ -L $(VENV) ]; then rm -f $(VENV); fi; \
	  $(call build_venv,$(VENV)) || exit 1; \
	else \
	  key=$$(cat requirements.txt <($(PYTHON) -VV) | sha256sum | cut -c1-16); dir=$(VENV_CACHE)/$$key; \
	  if [ ! -f $$dir/.stamp ]; then \
	    echo "building the Python toolchain in $$dir"; rm -rf $$dir; mkdir -p $(VENV_CACHE); \
	    $(call build_venv,$$dir) || exit 1; \
	    touch $$dir/.stamp; \
	  else echo "reusing the Python toolchain in $$dir"; fi; \
	  rm -rf $(VENV); ln -sfn $$dir $(VENV); \
	fi
	touch $@

$(CACHE)/collections/ansible_collections/multinode/horovod:
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

venv: $(VENV)/.stamp $(CACHE)/collections/ansible_collections/multinode/horovod ## Python toolchain + link this checkout as multinode.horovod

images: prepare venv ## Build every image recipe under images/ but horovod-gpu and torch-cpu (cached by recipe hash; the CPU Horovod image takes minutes)
	$(PYTHON) tools/images.py --save

image-gpu: prepare venv ## Build the GPU Horovod image (NCCL, CUDA 12.1 PyTorch, Hopper included); never in images, test or CI
	$(PYTHON) tools/images.py horovod-gpu

image-torch: prepare venv ## Build the torchrun lab image (PyPI's torch 2.5.1 with CUDA 12.4 and NCCL, no Horovod; several GB); make lab-torchrun (in test-all) builds it too, never images, test or CI
	$(PYTHON) tools/images.py torch-cpu

lint: venv ## yamllint, ansible-lint (production profile), ruff check and format, changelog lint
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/antsibull-changelog lint

# tests/unit/plugins is make ansible-test's (ansible-test units), so CI runs each test once; of it make unit
# runs only the tests that skip under ansible-test (marked needs_controller, tests/unit/checkout.py).
# Every unit test with pytest alone: pytest -n auto tests/unit.
unit: venv ## Unit tests of the tools, roles and site (tests/unit but plugins/, which ansible-test runs); all: pytest tests/unit
	$(BIN)/pytest -q -n auto tests/unit --ignore=tests/unit/plugins
	$(BIN)/pytest -q -n auto tests/unit/plugins -m needs_controller

# ansible-test wants the collection at ansible_collections/multinode/horovod: the script tests a copy
# there (tests/sanity/ignore-*.txt lists the few findings kept, each with its reason).
ansible-test: venv ## ansible-test sanity (every test but pslint) and units (tests/unit/plugins), as Ansible's own collections
	$(PYTHON) tools/progress.py run ansible-test -- $(BIN)/python tools/run_ansible_test.py sanity
	$(PYTHON) tools/progress.py run ansible-test -- $(BIN)/python tools/run_ansible_test.py units

# antsibull-docs writes the reStructuredText of every role, module and filter from what ansible-doc
# reads; it and Sphinx (-W) fail on any documentation error, so a broken doc fails `make test`.
DOCS := $(CACHE)/docs
docs: venv ## HTML documentation of every role, module and filter (antsibull-docs + Sphinx) in .cache/docs/html
	rm -rf $(DOCS)
	mkdir -p -m 700 $(DOCS)/rst
	$(BIN)/antsibull-docs --config-file tools/docsite/antsibull-docs.cfg collection --use-current \
	  --fail-on-error --cleanup everything --dest-dir $(DOCS)/rst multinode.horovod
	cp tools/docsite/index.rst $(DOCS)/rst/
	$(BIN)/sphinx-build -q -W --keep-going -b html -c tools/docsite $(DOCS)/rst $(DOCS)/html
	@echo "documentation: $(DOCS)/html/index.html"

molecule: prepare venv ## Every Molecule scenario, two side by side (MOLECULE_JOBS), or SCENARIO=name for one (logs in .cache/logs)
	$(PYTHON) tools/scenarios.py --jobs $(MOLECULE_JOBS) $(or $(SCENARIO),$(SCENARIOS))

test: lint unit ansible-test docs molecule ## Everything CI runs: lint + unit + ansible-test + docs + every Molecule scenario
	@echo "make test finished; make test-all adds the long fault and operations tests (MNH_TESTS=all)"

# Both tested Debian releases of the hosts: Debian 12 with the long tests, then Debian 13 (trixie) with
# every scenario's CI set (tools/images.py and tools/umlbed/ build its hosts; CONTRIBUTING.md).
test-all: lint unit ansible-test docs ## make test, the long fault and operations tests, the lab's scale-out, Horovod 0.18.2, torchrun (torch 1.13 and 2.5.1), TensorBoard and the slow node, the controller matrix, and every scenario on Debian 13
	@rc=0; \
	MNH_TESTS=all MOLECULE_JOBS=1 $(MAKE) --no-print-directory molecule || rc=1; \
	$(MAKE) --no-print-directory lab-scale-out || rc=1; \
	$(MAKE) --no-print-directory lab-old-horovod || rc=1; \
	$(MAKE) --no-print-directory lab-torchrun || rc=1; \
	$(MAKE) --no-print-directory lab-guide-imagenet || rc=1; \
	$(MAKE) --no-print-directory lab-tensorboard || rc=1; \
	$(MAKE) --no-print-directory lab-bench-slow-node || rc=1; \
	$(MAKE) --no-print-directory matrix || rc=1; \
	MNH_DEBIAN=trixie MNH_TESTS= MOLECULE_JOBS=1 $(MAKE) --no-print-directory molecule || rc=1; \
	exit $$rc

lab: prepare venv ## The local lab (3 machines), the site on it, a training run; EXAMPLE=horovod: the guide's example; LAUNCHER=torchrun: then the bundled DDP example under torchrun, on the lab's image and on torch 2.5.1
	$(PYTHON) tools/lab.py up
	$(PYTHON) tools/lab.py site $(if $(EXAMPLE),--example $(EXAMPLE)) $(if $(HOROVOD_EXAMPLES),--examples $(HOROVOD_EXAMPLES))
	$(if $(filter torchrun,$(LAUNCHER)),$(PYTHON) tools/lab.py torchrun)

lab-scale-out: prepare venv ## A fourth lab machine joins under a running job (--limit), then leaves (in make test-all)
	$(PYTHON) tools/lab.py up
	ansible-playbook site.yml -i inventories/lab
	$(PYTHON) tools/lab.py scale-out

lab-old-horovod: prepare venv ## The guide's Horovod 0.18.2 on the three lab machines through the site, then the lab's image again (in make test-all)
	$(PYTHON) tools/lab.py up
	$(PYTHON) tools/lab.py old-runner

lab-torchrun: prepare venv ## The bundled DDP example and the benchmark under torchrun on the three lab machines, on the lab's image (torch 1.13) and on the torch-cpu image (torch 2.5.1), then the lab's image again (in make test-all)
	$(PYTHON) tools/lab.py up
	$(PYTHON) tools/lab.py torchrun

lab-guide-imagenet: prepare venv ## The guide's workload on the lab: ImageNet-shaped data, checkpoints, TensorBoard, resume; HOROVOD_EXAMPLES=clone for Horovod's own script (in make test-all)
	$(PYTHON) tools/lab.py up
	$(PYTHON) tools/lab.py guide-imagenet $(if $(HOROVOD_EXAMPLES),--examples $(HOROVOD_EXAMPLES))

lab-tensorboard: prepare venv ## playbooks/tensorboard.yml on a lab run's event files: the tunnel, the scalars' data, a headless Chromium screenshot (in make test-all)
	$(PYTHON) tools/lab.py up
	ansible-playbook site.yml -i inventories/lab
	$(PYTHON) tools/lab.py tensorboard

lab-bench-slow-node: prepare venv ## The benchmark names a lab machine whose link is shaped to a tenth (tc), then one held to a fifth of a CPU (in make test-all)
	$(PYTHON) tools/lab.py up
	ansible-playbook site.yml -i inventories/lab
	$(PYTHON) tools/lab.py bench-slow-node

lab-elastic: venv ## An elastic run on the lab (make lab first): a worker's container stopped mid-run and started again
	ansible-playbook -i inventories/lab molecule/horovod_launch/elastic.yml

matrix: prepare venv ## The lowest and newest ansible-core declared (2.18, 2.21): ansible-test, then the site twice and a launch on the lab (in make test-all)
	$(PYTHON) tools/controller_matrix.py

bench: venv ## The benchmark playbook on the lab (make lab first): link, allreduce, scaling; prints the report
	$(PYTHON) tools/lab.py bench

bench-controller: venv ## Time the site's controller-side work (gate, host lists, ssh pin set) on 1 to 64 generated nodes (no host is contacted)
	$(BIN)/python tools/bench_controller.py

lab-down: ## Remove everything `make lab` created (machines, volumes, network, lab key and share)
	$(PYTHON) tools/lab.py down

clean: ## Remove the virtualenv and local caches (images stay in Docker)
	rm -rf $(VENV) .cache
