"""The runtime dependencies: each has its reason in docs/development.md, pandas is optional, and the crc32c
in use is google-crc32c (Apache-2.0), not the LGPL ``crc32c`` package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import altarr as aa

ROOT = Path(__file__).resolve().parents[1]


def _names(requirements: list[str]) -> list[str]:
    return [re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements]


def _section(doc: str, title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    assert match, f"no '## {title}' section"
    return match.group(1)


def test_every_dependency_has_its_reason_in_the_development_docs():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    section = _section((ROOT / "docs/development.md").read_text(), "Dependencies")
    rows = {
        m.group(1).lower(): m.group(2).strip()
        for m in re.finditer(r"^\| `([\w.-]+)` \| (.+?) \|$", section, re.M)
    }
    runtime = _names(meta["dependencies"])
    assert runtime and "pandas" not in runtime and "crc32c" not in runtime
    for name in runtime + ["pandas"]:
        assert rows.get(name), f"docs/development.md, Dependencies: no reason given for {name}"
    assert set(rows) <= set(runtime) | {"pandas"}, "a reason for a package that is not a dependency"


def test_plan_without_pandas_says_how_to_get_it(monkeypatch):
    x = aa.altarr((10, 7), (4, 3), lambda chunks: [np.zeros((4, 3))] * len(chunks))
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"altarr.plan .*pandas.*pip install 'altarr\[pandas\]'"):
        aa.plan(x, slice(3, 5), 1)


def test_altarr_works_without_pandas_and_loads_no_lgpl_crc32c(tmp_path):
    """In a process where pandas cannot be imported: datasets with checksummed chunks and shard indexes
    are written and read, lazily too; the crc32c module in use is google-crc32c's."""
    code = f"""
import sys
sys.modules["pandas"] = None
import numpy as np, altarr as aa
ds = aa.create_dataset({str(tmp_path / "a.zarr")!r}, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8),
                       checksum=True)
ds[...] = np.arange(64, dtype="u2").reshape(8, 8)
assert (aa.open({str(tmp_path / "a.zarr")!r})[2:5, 1] == np.arange(64).reshape(8, 8)[2:5, 1]).all()
assert "crc32c" not in sys.modules and "google_crc32c" in sys.modules
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
