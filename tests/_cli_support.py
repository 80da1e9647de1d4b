"""Running the real ``altarr`` console script in a subprocess, and comparing trees of files byte for byte."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["altarr_command", "run_cli", "tree_bytes"]


def altarr_command() -> list[str]:
    """The installed ``altarr`` console script of this interpreter (it honours PYTHONPATH)."""
    beside = Path(sys.executable).parent / "altarr"
    found = str(beside) if beside.exists() else shutil.which("altarr")
    assert found, "the altarr console script is not installed: pip install -e ."
    return [found]


def run_cli(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*altarr_command(), *map(str, args)], capture_output=True, text=True, timeout=timeout, **kwargs
    )


def tree_bytes(root: str | Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, with its bytes."""
    root = Path(root)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
