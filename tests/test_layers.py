"""The package layers, enforced (stores, codecs -> formats -> dataset -> lazy -> cli/integrations):
import-linter's contracts in pyproject.toml run here; a missing import-linter fails the first test.

The second test proves the contract can fail: a copy of the package with one upward import (a codec
importing the dataset layer) must break it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "altarr"


def lint_imports(src_parent: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(src_parent))
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; c()",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=src_parent,
    )


def test_layer_contracts_kept() -> None:
    run = lint_imports(SRC.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "src" / "altarr"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    victim = copy / "codecs" / "crc32c.py"
    victim.write_text(victim.read_text() + "\n\ndef _upward():\n    from ..dataset import grid  # noqa\n")
    run = lint_imports(copy.parent)
    assert run.returncode != 0
    assert "altarr.codecs.crc32c -> altarr.dataset.grid" in run.stdout
