# Two entry points: `make site` and `make test`. Each does its own set-up on a fresh machine:
# a virtualenv with the CPU build of torch pinned, KaTeX from the npm registry (npm ci), and for
# the browser tests Debian's chromium (apt-get, as root). Playwright never downloads a browser.
# The machine's own Python 3.10+ when it has one, else python3 from the PATH: Debian's build is compiled with
# optimisations that pyenv's default build leaves out (a Python loop 25% faster, the suite's tests 6-10% less CPU).
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null && echo /usr/bin/python3 || echo python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.package-lock.json
CHROMIUM := /usr/bin/chromium
export NO_MKDOCS_2_WARNING := 1

.PHONY: site serve test setup clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,thirdparty]'
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null

setup: $(STAMP) $(NODE_STAMP)

site: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/mkdocs build --strict
	@echo "Site built in $(CURDIR)/site. Serve it with: make serve (http://127.0.0.1:8000/)"

serve: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The atlas package compiled to bytecode first: the suite starts about thirty Python processes that import it, and
# where PYTHONDONTWRITEBYTECODE is set (as on this project's machines) each compiled it again (0.45 s apiece).
# Only the package: the model files the tests write and edit keep being compiled from their source.
test: $(STAMP) $(NODE_STAMP) $(CHROMIUM)
	$(PY) -m compileall -q atlas
	$(PY) -m pytest -n 2 --dist loadgroup

clean:
	rm -rf site .pytest_cache test-artifacts
