"""The repository stays ruff clean (lint and format) and mypy clean (``[tool.mypy]`` in pyproject.toml, over
src/altarr), as the README promises, judged by the versions pinned in pyproject.toml (a newer release's new
rules must not turn main red without a change here)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    ruff = shutil.which("ruff")
    return [ruff] if ruff else [sys.executable, "-m", "ruff"]


def test_installed_ruff_is_the_pinned_one():
    pinned = re.search(r'"ruff==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned, "pyproject.toml's test extra must pin ruff (ruff==X.Y.Z)"
    out = subprocess.run([*_ruff(), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["ruff", pinned.group(1)], (
        f"installed {out.stdout.strip()!r}, pinned {pinned.group(1)}: pip install -e '.[test]'"
    )


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    out = subprocess.run([*_ruff(), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_installed_mypy_is_the_pinned_one():
    pinned = re.search(r'"mypy==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned, "pyproject.toml's test extra must pin mypy (mypy==X.Y.Z)"
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split()[:2] == ["mypy", pinned.group(1)], (
        f"installed {out.stdout.strip()!r}, pinned {pinned.group(1)}: pip install -e '.[test]'"
    )


def test_mypy():
    """The type check .ci/run makes; here too, so that the README's test command finds a type error before
    CI does. Its cache (.mypy_cache) makes a repeated run take about a second; a cold one about 15 s of one
    worker, after which .ci/run's own run finds the cache warm."""
    out = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("Success: no issues found"), out.stdout
