# Two entry points: `make site` and `make test`. Each does its own set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export NO_MKDOCS_2_WARNING := 1

.PHONY: site serve test setup clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $@

setup: $(STAMP)

site: $(STAMP)
	$(VENV)/bin/mkdocs build --strict
	@echo "Site built in $(CURDIR)/site. Serve it with: make serve (http://127.0.0.1:8000/)"

serve: $(STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf site .pytest_cache
