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


def lint_imports_with(tmp_path: Path, module: str, added: str) -> subprocess.CompletedProcess[str]:
    """lint-imports over a copy of altarr whose ``module`` (a path below src/altarr) has ``added`` at its end."""
    copy = tmp_path / "src" / "altarr"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    victim = copy / module
    victim.write_text(victim.read_text() + added)
    return lint_imports(copy.parent)


def test_layer_contracts_kept() -> None:
    run = lint_imports(SRC.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    run = lint_imports_with(
        tmp_path, "codecs/crc32c.py", "\n\ndef _upward():\n    from ..dataset import grid  # noqa\n"
    )
    assert run.returncode != 0
    assert "altarr.codecs.crc32c -> altarr.dataset.grid" in run.stdout


def test_an_engine_module_imported_from_above_breaks_the_contract(tmp_path: Path) -> None:
    """The lazy layer may import ``altarr.dataset`` (its public names), not one of its modules: an import
    of ``altarr.dataset.access``, even inside a function, must break the contract."""
    run = lint_imports_with(
        tmp_path, "lazy/views.py", "\n\ndef _inside():\n    from ..dataset.access import Merge  # noqa\n"
    )
    assert run.returncode != 0
    assert "altarr.lazy.views -> altarr.dataset.access" in run.stdout, run.stdout


#: The modules above the engine (the first contract's layers over ``altarr.dataset``).
ABOVE_ENGINE = ["lazy", "cli", "integrations", "multiscale", "transfer.py", "verifying.py", "copying.py"]


def _engine_private_attributes() -> set[str]:
    """The private attributes and methods of the engine's classes (``self._x = ...``, ``def _x``)."""
    import ast

    names: set[str] = set()
    for path in (SRC / "dataset").glob("*.py"):
        for cls in [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]:
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    if isinstance(node.value, ast.Name) and node.value.id == "self":
                        names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_layer_above_the_engine_reads_a_private_attribute_of_its_classes() -> None:
    """What import-linter cannot see: ``ds._access`` from the lazy layer. Above the engine, no attribute
    named like a private one of an engine class is read off anything but ``self``/``cls`` (the engine's
    public properties, e.g. ``Dataset.access``, are the way in)."""
    import ast

    private = _engine_private_attributes()
    assert {"_access", "_format", "_write_selection"} <= private  # the engine was read
    files = [
        p
        for name in ABOVE_ENGINE
        for p in ([SRC / name] if name.endswith(".py") else (SRC / name).rglob("*.py"))
    ]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} .{node.attr}")
    assert found == []


def test_a_cycle_hidden_in_a_function_breaks_the_contract(tmp_path: Path) -> None:
    """formats/base.py imports formats/_common.py at load time; an import back, even inside a function
    (where Python would not notice the cycle), must break the acyclic contract."""
    run = lint_imports_with(
        tmp_path, "formats/_common.py", "\n\ndef _back():\n    from .base import Format  # noqa\n"
    )
    assert run.returncode != 0
    assert "No cycles are allowed in altarr.formats" in run.stdout, run.stdout


def test_every_module_of_altarr_is_in_a_layer() -> None:
    """Each top-level module and package of altarr is named in the first contract's layers (a new one
    outside them could import anything)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    named = {m.strip() for layer in config["layers"] for m in layer.split("|")}
    found = {
        f"altarr.{p.stem}"
        for p in SRC.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert found - named == set(), "add these to [tool.importlinter] layers in pyproject.toml"
    assert "altarr.dataset" in found and "altarr.errors" in found  # the folder was read


def _lazy_imports() -> tuple[dict[str, set[str]], list[str]]:
    """The lazy layer's module-level imports of its own modules, and every import of an altarr module
    made inside a function there (how an import cycle hides)."""
    import ast

    graph: dict[str, set[str]] = {}
    hidden: list[str] = []
    for path in sorted((SRC / "lazy").glob("*.py")):
        name = path.stem
        tree = ast.parse(path.read_text())
        graph[name] = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                graph[name] |= {node.module} if node.module else {a.name for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                hidden += [
                    f"{name}.py:{sub.lineno}"
                    for sub in ast.walk(node)
                    if isinstance(sub, ast.ImportFrom)
                    and (sub.level or (sub.module or "").startswith("altarr"))
                ]
    return graph, hidden


def test_the_lazy_layer_has_no_import_cycle_hidden_in_a_function() -> None:
    """LazyArray's helpers (reductions, views, elementwise, NumPy protocol, recipes) build results with the
    operand's own class and are imported by the array module at load time; none imports it back."""
    graph, hidden = _lazy_imports()
    assert hidden == []
    graph.pop("__init__")
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in graph.get(n, ()):
            assert state.get(m) != 1, f"import cycle: {' -> '.join([*path, m])}"
            if m in graph and m not in state:
                visit(m, [*path, m])
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n, [n])
    assert "array" in graph["functions"] and "reduction_methods" in graph["array"]  # the graph was read
