# Entry points of the VPNaaS bundle. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYTHONPATH := $(CURDIR)/scripts:$(CURDIR)/charms
BASE ?= ubuntu@18.04
NS ?= eps_wg
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: help venv deps charms charms-local packages validate test lint pycompat wireguard-go boringtun \
        demo bench deploy deploy-tools onboard undeploy measure-remote clean

help: ## list the targets
	@grep -hE '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

$(VENV)/.done: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.done ## create the project's virtualenv (.venv) with the pinned tooling

deps: ## install the system packages the tests and the demo use (Debian/Ubuntu, as root)
	bash scripts/install-deps.sh

wireguard-go: venv ## build the newest wireguard-go into build/tools (falls back to the distribution's)
	bash scripts/build-wireguard-go.sh

boringtun: ## build boringtun-cli (crates.io, cargo) into build/tools; the bench measures it beside wireguard-go
	bash scripts/build-boringtun.sh

charms: venv ## build every charm for BASE (default ubuntu@18.04, Python 3.6) into build/charms
	$(PY) -m bundle.build_charms --base $(BASE)

charms-local: venv ## build every charm for this machine's Python into build/charms-local (tests, testbed)
	$(PY) -m bundle.build_charms --base local

packages: charms ## build every VNF/NS/NST package into build/packages
	$(PY) -m bundle.packages

validate: venv ## validate every descriptor, params file and cross-reference
	$(PY) -m bundle.validate

lint: venv ## ruff over all Python
	$(VENV)/bin/ruff check charms scripts tests

pycompat: venv ## prove the charm runtime code runs on Python 3.6
	$(VENV)/bin/vermin -q --no-tips --violations -t=3.6- $$(find charms -name '*.py')

test: deps venv lint pycompat ## everything CI runs: lint, 3.6 check, unit, charm, descriptor, package and end-to-end tests
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) tests

demo: deps venv charms-local wireguard-go ## bring up the WireGuard EPS locally in network namespaces and measure it (root)
	$(PY) -m testbed.demo --ns $(NS)

bench: deps venv charms-local wireguard-go boringtun ## repeated data-plane and convergence measurements (root)
	$(PY) -m testbed.bench $(BENCH_ARGS)

deploy-tools: venv ## install the openstack CLI (python-openstackclient) into .venv for make deploy
	$(VENV)/bin/pip install -q -r requirements-deploy.txt

deploy: venv deploy-tools packages ## prepare MicroStack, onboard and instantiate NS=$(NS) with OSM, wait until tunnels are up
	$(PY) -m deploy deploy --ns $(NS)

onboard: venv packages ## onboard every package into OSM (updates existing ones)
	$(PY) -m deploy onboard

undeploy: venv ## delete the NS/NSI and what deploy created
	$(PY) -m deploy undeploy --ns $(NS)

measure-remote: venv ## measure every interface of a deployed NS with and without WireGuard
	$(PY) -m deploy measure --ns $(NS)

clean: ## remove build outputs
	rm -rf build
