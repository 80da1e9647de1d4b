"""The code blocks of docs/lazy-arrays.md run, in order, in one module namespace (so that the classes
they define pickle by reference like a user's module-level code)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import altarr as aa

DOC = Path(__file__).resolve().parents[2] / "docs" / "lazy-arrays.md"


def test_lazy_arrays_guide_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 10
    module = types.ModuleType("altarr_lazy_docs_example")
    sys.modules[module.__name__] = module
    try:
        for i, code in enumerate(blocks):
            exec(compile(code, f"{DOC.name}[block {i}]", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    out = capsys.readouterr().out
    assert "<altarr.LazyArray shape=(10, 7)" in out and "refusing to materialize" in out
    assert aa.get_options()["max_materialize"] is None
