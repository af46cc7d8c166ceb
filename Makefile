# Entry points of the VPNaaS bundle. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV36 := .venv36
export PYTHONPATH := $(CURDIR)/scripts:$(CURDIR)/charms
BASE ?= ubuntu@18.04
NS ?= eps_wg
IMPL ?=
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: help venv deps charms charms-local packages validate test unit unit36 lint shellcheck typecheck pycompat \
        wireguard-go hookclient pq-psk pq-psk-realdevice boringtun demo bench lifecycle deploy deploy-tools onboard undeploy measure-remote clean \
        osm-conformance juju-conformance hooktool-conformance oai-conformance lcm-conformance

help: ## list the targets
	@grep -hE '^[a-z][a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

$(VENV)/.done: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.done ## create the project's virtualenv (.venv) with the pinned tooling

# Python 3.6 is the interpreter of OSM's Ubuntu 18.04 proxy machine: the pure core and the
# hostile-value corpus run on it too (the last pytest for 3.6 is 7.0).
# The charm's own runtime pins (charms/requirements.txt, hash-checked; pip 21.3, the last for 3.6,
# knows their manylinux2014 wheels) let the Harness tests run on it too.
$(VENV36)/.done: charms/requirements.txt
	py36=$$(bash scripts/find-python36.sh) && "$$py36" -m venv $(VENV36)
	$(VENV36)/bin/pip install -q "pip==21.3.1"
	$(VENV36)/bin/pip install -q "pytest==7.0.1" "pytest-timeout==2.1.0"
	$(VENV36)/bin/pip install -q -r charms/requirements.txt
	touch $@

deps: ## install the system packages the tests and the demo use (Debian/Ubuntu, as root)
	bash scripts/install-deps.sh

wireguard-go: venv ## build the newest wireguard-go (static) into build/tools: the charms ship it (else the VNF's own is used)
	bash scripts/build-wireguard-go.sh

hookclient: ## build the emulated VCA's compiled hook-tool client into build/tools (Go; else the Python client is used)
	bash scripts/build-hookclient.sh

pq-psk: ## build the pq-psk daemon (pqpsk/, Go: ML-KEM-768 preshared keys; wgctrl from the Go module proxy) into build/tools: the charms ship it
	bash scripts/build-pq-psk.sh

pq-psk-realdevice: ## build pq-psk's real-device tests (Go, build tag realdevice) into build/tools/pq-psk-realdevice.test: tests/e2e/test_pq_psk_device.py runs it
	bash scripts/build-pq-psk-devtest.sh

boringtun: ## build boringtun-cli (crates.io; cargo-zigbuild for glibc 2.17, from PyPI) into build/tools: the charms ship it
	bash scripts/build-boringtun.sh

charms: venv wireguard-go pq-psk boringtun ## build every charm for BASE (default ubuntu@18.04, Python 3.6) into build/charms, with the userspace WireGuard programs
	$(PY) -m bundle.build_charms --base $(BASE)

charms-local: venv wireguard-go pq-psk boringtun ## build every charm for this machine's Python into build/charms-local (tests, testbed)
	$(PY) -m bundle.build_charms --base local

packages: charms ## build every VNF/NS/NST package into build/packages
	$(PY) -m bundle.packages

validate: venv ## validate every descriptor, params file and cross-reference
	$(PY) -m bundle.validate

lint: venv shellcheck typecheck ## ruff over all Python, shellcheck over every shipped shell script, mypy, gofmt + go vet
	$(VENV)/bin/ruff check charms scripts tests
	@if command -v go >/dev/null 2>&1; then \
	  out=$$(gofmt -l scripts/testbed/hookclient-go scripts/bundle/osm_conformance/juju_parse.go pqpsk); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi; \
	  (cd scripts/testbed/hookclient-go && go vet ./...) && (cd pqpsk && go vet ./... && go vet -tags realdevice ./...); \
	else echo "no Go toolchain: gofmt/go vet of the hook-tool client and pq-psk not run"; fi

typecheck: venv ## mypy over everything a charm ships (the shared package; each src/charm.py is the build's one call into it), all of it annotated
	$(VENV)/bin/mypy

shellcheck: ## shellcheck (Debian's package) over the VNF-side scripts and the project's own
	shellcheck -x -s bash $$(find charms -name '*.sh' | sort)
	shellcheck scripts/*.sh

OAI_SRC ?=
oai-conformance: venv ## check the OAI charms against OAI's sources at the pinned refs (OAI_SRC=<dir>, see scripts/oai_conformance)
	$(PY) -m oai_conformance $(if $(OAI_SRC),--src "$(OAI_SRC)") $(if $(YAML_CPP),--yaml-cpp "$(YAML_CPP)")

pycompat: venv ## prove the charm runtime code runs on Python 3.6
	$(VENV)/bin/vermin -q --no-tips --violations -t=3.6- $$(find charms -name '*.py')

# The unit tier: every test but tests/e2e, two workers per core (pytest-xdist): about half of a
# worker's time is spent waiting on the subprocesses, sockets and timeouts the tests start, so one
# worker per core left the cores half idle (docs/figures.md). --dist loadgroup keeps the modules
# that share a costly fixture on one worker (an xdist group) and hands the groups out first, the
# largest first (pytest-xdist's default reordering, which starts the longest modules: grammar
# cost, registry extension, CLI corpus), then the other tests in the order tests/conftest.py gives: the
# longest first by the last run's times (build/test-durations.json), so that the tests that mostly wait
# start early, beside the others' CPU, and none is left to start alone at the end. What the
# system lacks of what it needs is unpacked into build/sysroot first (no root; scripts/unpack-deps.sh).
# Python's bytecode and pytest's rewritten test modules are kept in build/pycache (never beside the
# sources) for the next run, also where the shell sets PYTHONDONTWRITEBYTECODE: else every worker
# and every Python a test starts compiles every module again, in every run. What is kept there for
# other paths than this checkout's (the tests' temporary copies) is removed when a run starts.
UNIT_WORKERS ?= $(shell echo $$((2 * $$(nproc))))
PYCACHE := $(CURDIR)/build/pycache
UNIT_TIER = bash scripts/unpack-deps.sh && eval "$$(bash scripts/unpack-deps.sh --env)" && \
	bash scripts/check-unit-deps.sh && \
	mkdir -p "$(PYCACHE)" && find "$(PYCACHE)" -type f ! -path "$(PYCACHE)$(CURDIR)/*" -delete && \
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$(PYCACHE)" \
	$(PY) -m pytest -q -p no:cacheprovider -n $(UNIT_WORKERS) --dist loadgroup $(PYTEST_ARGS) tests --ignore=tests/e2e

# The end-to-end tier: each testbed in namespaces of its own, so two modules run at once (one per
# worker: a module's testbed is its fixture; the longest first, tests/e2e/conftest.py FIRST), then
# the tests that measure (ALONE there) one at a time.
E2E_TIER = $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder --durations=25 \
	-m "not alone" $(PYTEST_ARGS) \
	tests/e2e && $(PY) -m pytest -q -p no:cacheprovider --durations=10 -m alone $(PYTEST_ARGS) tests/e2e

# The system packages first; then what needs them, as many at a time as make -j allows (.ci/run:
# -j2, so that the boringtun build, the longest, starts first and runs beside the venvs, the lint
# and the 3.6 tier).
test: deps ## everything CI runs: lint, 3.6 checks, the unit tier on every core, then the end-to-end tier
	@$(MAKE) --no-print-directory boringtun venv hookclient wireguard-go pq-psk pq-psk-realdevice lint pycompat unit36
	@$(UNIT_TIER) --durations=15
	$(E2E_TIER)

unit: venv hookclient wireguard-go pq-psk boringtun ## every test that needs no root, on every core (pytest-xdist): the everyday loop (under a minute)
	@$(UNIT_TIER)

unit36: $(VENV36)/.done ## the pure core, the hostile-value corpus, the OAI steps and the charms under Harness on Python 3.6 (the shipped charms' Python)
	$(VENV36)/bin/python -m pytest -q -p no:cacheprovider tests/unit/test_hostile_values.py \
	  tests/unit/test_validation.py tests/unit/test_plan.py tests/unit/test_relation_data.py tests/unit/test_relation_mirror.py \
	  tests/unit/test_vnfscript.py tests/unit/test_remote.py tests/unit/test_report_protocol.py tests/unit/test_hookgate.py tests/unit/test_hookgate_config.py tests/unit/test_published_peers.py tests/unit/test_peer_trust.py \
	  tests/unit/test_relation_cache.py tests/unit/test_relation_memory.py tests/unit/test_relation_lookup.py tests/unit/test_admission.py tests/unit/test_rotation_protocol.py tests/unit/test_metrics.py tests/unit/test_exporter_server.py tests/unit/test_instance.py \
	  tests/unit/test_osm_params.py tests/unit/test_grammar_cost.py tests/unit/test_slice_qos.py \
	  tests/unit/test_dataplane.py tests/unit/test_charm_startup.py tests/unit/test_ssh_close.py tests/harness \
	  tests/charms/test_oai_scripts.py tests/charms/test_oai_validation.py tests/charms/test_oai_ue.py tests/charms/test_ue_report.py \
	  tests/charms/test_hostile_options.py \
	  tests/charms/test_oai_charms.py tests/charms/test_cn5g_limits.py

demo: deps venv wireguard-go pq-psk boringtun charms-local hookclient ## bring up NS=$(NS) locally in network namespaces and measure it; IMPL=signalling=boringtun etc.: the data plane per interface (root)
	$(PY) -m testbed.demo --ns $(NS) $(if $(IMPL),--implementation "$(IMPL)")

bench: deps venv charms-local wireguard-go hookclient boringtun ## repeated data-plane and convergence measurements (root)
	$(PY) -m testbed.bench $(BENCH_ARGS)

LIFECYCLE_ARGS ?=
lifecycle: deps venv charms-local wireguard-go hookclient ## the testbed EPS through upgrade, rotation, faults, heal and terminate, with probes (root)
	$(PY) -m testbed.lifecycle $(LIFECYCLE_ARGS)

deploy-tools: venv ## install the openstack CLI (python-openstackclient) into .venv for make deploy
	$(VENV)/bin/pip install -q -r requirements-deploy.txt

deploy: venv deploy-tools packages ## prepare MicroStack, onboard and instantiate NS=$(NS) with OSM, wait until tunnels are up, attach and measure the UE (UE=0 skips)
	$(PY) -m deploy deploy --ns $(NS)

onboard: venv packages ## onboard every package into OSM (updates existing ones)
	$(PY) -m deploy onboard

undeploy: venv ## delete the NS/NSI and what deploy created
	$(PY) -m deploy undeploy --ns $(NS)

measure-remote: venv ## measure every interface of a deployed NS with and without WireGuard
	$(PY) -m deploy measure --ns $(NS)

osm-conformance: venv packages ## load every package and params file through OSM's own NBI/IM/osmclient (OSM_SRC=<dir>; JUJU_SRC="<juju tree> ..." adds Juju's parser)
	$(PY) -m bundle.osm_conformance --osm-src "$(OSM_SRC)" $(foreach d,$(JUJU_SRC),--juju-src "$(d)")

juju-conformance: venv packages ## every `juju` command line of the deploy tool through Juju's own parser (JUJU_SRC="<juju tree> ...", see docs/bundle.md)
	$(PY) -m bundle.osm_conformance --part juju $(foreach d,$(JUJU_SRC),--juju-src "$(d)")

hooktool-conformance: venv ## every hook-tool line the hook gate runs through Juju's own jujuc commands, and Juju's answers through the gate (JUJU_SRC="<juju tree> ...", see docs/bundle.md)
	$(PY) -m bundle.osm_conformance.hooktool $(foreach d,$(JUJU_SRC),--juju-src "$(d)")

lcm-conformance: venv ## LCM 19's own functions: what the emulated LCM reads from the VNFDs, and the charms' reader of the <OSM> LCM writes (LCM_SRC=<dir holding osm_lcm/>)
	$(PY) -m testbed.lcm_conformance --lcm-src "$(LCM_SRC)"
	$(PY) scripts/bundle/lcm_osm_params.py "$(LCM_SRC)"

clean: ## remove build outputs
	rm -rf build
