#!/usr/bin/env bash
# Line coverage of the default suite with subprocesses included (coverage's `patch = ["subprocess"]` in
# pyproject.toml: the CLI tests' `python -m altarr.cli` runs and pytest-xdist's workers are measured too).
# Usage: tools/coverage.sh [pytest args]   e.g. tools/coverage.sh tests/cli/test_cli.py
# Needs the quality extra (pip install -e ".[quality]"). Prints the per-file report and the total.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
rm -f .coverage .coverage.*
status=0
python -m coverage run -m pytest -n 2 -q -p no:randomly "$@" || status=$?
python -m coverage combine -q
python -m coverage report --sort=cover
exit $status
