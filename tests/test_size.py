"""Small modules and short functions (README, "Small modules"): every module of ``src/altarr`` has at most
600 lines and every function at most 80, split by concern.

The allowlists name the offenders that remain, each with the helper who owns its split; they only shrink.
An entry whose module or function has come within the limit fails the test too, so it is removed when its
split lands, and a new offender is not added to them: it is split instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "altarr"

MODULE_LINES = 600
FUNCTION_LINES = 80

# module (relative to src/altarr) -> owner of its split
LONG_MODULES: dict[str, str] = {}

# "module:qualified name" -> owner of its split
LONG_FUNCTIONS: dict[str, str] = {}


def module_lines(source: str) -> int:
    return len(source.splitlines())


def long_functions(source: str, limit: int = FUNCTION_LINES) -> dict[str, int]:
    """The functions (nested ones and methods too, by qualified name) longer than ``limit`` lines, from
    ``def`` to their last line, with their lengths.

    >>> long_functions("def f():\\n    return 1\\n", limit=1)
    {'f': 2}
    """
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > limit:
                        found[name] = length
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _sources() -> dict[str, str]:
    return {p.relative_to(SRC).as_posix(): p.read_text() for p in sorted(SRC.rglob("*.py"))}


def test_modules_within_600_lines():
    sizes = {name: module_lines(text) for name, text in _sources().items()}
    over = {name: n for name, n in sizes.items() if n > MODULE_LINES}
    new = {name: n for name, n in over.items() if name not in LONG_MODULES}
    assert not new, f"modules over {MODULE_LINES} lines (split them by concern): {new}"
    done = sorted(name for name in LONG_MODULES if sizes.get(name, 0) <= MODULE_LINES)
    assert not done, (
        f"within {MODULE_LINES} lines now: remove from LONG_MODULES in tests/test_size.py: {done}"
    )


def test_functions_within_80_lines():
    over = {
        f"{module}:{name}": n
        for module, text in _sources().items()
        for name, n in long_functions(text).items()
    }
    new = {name: n for name, n in over.items() if name not in LONG_FUNCTIONS}
    assert not new, f"functions over {FUNCTION_LINES} lines (split them by concern): {new}"
    done = sorted(name for name in LONG_FUNCTIONS if name not in over)
    assert not done, (
        f"within {FUNCTION_LINES} lines now: remove from LONG_FUNCTIONS in tests/test_size.py: {done}"
    )


def test_the_scan_sees_nested_functions_and_methods():
    def body(indent: str) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(FUNCTION_LINES))

    source = (
        "class A:\n    def m(self):\n" + body(" " * 8) + "\n"
        "def f():\n    def g():\n" + body(" " * 8) + "    return g\n\n"
        "def short():\n    return 1\n"
    )
    found = long_functions(source)
    assert found == {"A.m": FUNCTION_LINES + 1, "f": FUNCTION_LINES + 3, "f.g": FUNCTION_LINES + 1}, found
