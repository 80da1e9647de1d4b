"""Every public name is exercised by a test.

The public surface is ``altarr.__all__`` and the public methods and properties of ``Dataset``, ``Group``
and ``LazyArray`` (those defined by altarr's own classes, not inherited from ``object``). A name counts as
exercised when a test file under ``tests/`` (other than this one) refers to it: as an attribute
(``ds.read_chunks``), a name (``from altarr import verify``), or a string (``getattr(x, "sum")``,
``@pytest.mark.parametrize("func", ["sum", ...])``). A new public name with no test referring to it
fails :func:`test_every_public_name_is_referenced_by_a_test`, naming it; its own test file makes it pass,
whoever adds it.

The check can fail: :func:`test_the_check_reports_an_unreferenced_name` feeds it a name no test uses.
"""

from __future__ import annotations

import ast
from pathlib import Path

import altarr as aa

TESTS = Path(__file__).resolve().parent


def referenced_names(files) -> set[str]:
    """Attribute names, names, imported names and string constants used in ``files``."""
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add(node.name.rpartition(".")[2])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
    return names


def public_members(cls: type) -> list[str]:
    """Public methods and properties that altarr's own classes in ``cls``'s MRO define."""
    own = [k for k in cls.__mro__ if k.__module__.startswith("altarr")]
    return sorted({n for k in own for n in vars(k) if not n.startswith("_")})


def public_surface() -> dict[str, list[str]]:
    return {
        # ``open`` is public but kept out of ``__all__`` so that ``from altarr import *`` cannot shadow
        # the builtin ``open``
        "altarr": sorted({*aa.__all__, "open"}),
        "Dataset": public_members(aa.Dataset),
        "Group": public_members(aa.Group),
        "LazyArray": public_members(aa.LazyArray),
    }


def unreferenced(surface: dict[str, list[str]], names: set[str]) -> dict[str, list[str]]:
    missing = {owner: [n for n in members if n not in names] for owner, members in surface.items()}
    return {owner: m for owner, m in missing.items() if m}


def test_every_public_name_is_referenced_by_a_test():
    files = [p for p in TESTS.rglob("test_*.py") if p.name != Path(__file__).name]
    missing = unreferenced(public_surface(), referenced_names(files))
    assert not missing, f"public names no test refers to (add a test that uses them): {missing}"


def test_the_check_reports_an_unreferenced_name():
    surface = public_surface()
    names = referenced_names([p for p in TESTS.rglob("test_*.py") if p.name != Path(__file__).name])
    surface["Dataset"] = [*surface["Dataset"], "a_method_nobody_tests"]
    assert unreferenced(surface, names) == {"Dataset": ["a_method_nobody_tests"]}
    # and the surface really is what it claims: a few known members of each
    assert {"read_chunks", "write_chunks", "visit_chunks"} <= set(surface["Dataset"])
    assert {"keys", "arrays", "groups", "require_group", "create_dataset"} <= set(surface["Group"])
    assert {"shape", "dtype", "oindex", "vindex"} <= set(surface["LazyArray"])
    assert {"open", "open_dataset", "Group", "set_options"} <= set(surface["altarr"])
