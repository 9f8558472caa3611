#!/usr/bin/env bash
# The cross-library suite's environment: .venv-libraries with the versions of bench/library_requirements.txt
# and this checkout installed editable. Then: .venv-libraries/bin/python bench/library_suite.py
set -euo pipefail
cd "$(dirname "$0")/.."
test -x .venv-libraries/bin/python || python3 -m venv .venv-libraries
.venv-libraries/bin/pip install --quiet --disable-pip-version-check -r bench/library_requirements.txt
.venv-libraries/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
