"""Issue 33: the one table of altarr's deliberate differences from NumPy (``docs/lazy-arrays.md``,
"Differences from NumPy") is checked against the code: every row's example runs on NumPy and on altarr
and gives exactly what the row says for each, and every row is a difference (the two outcomes differ).

An example is Python code: statements separated by ``; `` and an expression last, whose value (its
``repr``) or exception (``raises NameOfError``) is the outcome; an exception of an earlier statement is
written before it (``raises OverflowError; then array(...)``). ``A(values, *chunks)`` is the array the
example works on (NumPy: the values; altarr: a lazy array over them, chunks of 2 unless given) and
``D(values, *chunks)`` the array an assignment writes into (NumPy: a copy; altarr: a Zarr v3 dataset).
"""

from __future__ import annotations

import pathlib
import re
import warnings

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy
from _numpy_differential import make_dataset

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "lazy-arrays.md"
SECTION = "## Differences from NumPy"


def table_rows() -> list[dict[str, str]]:
    """The rows of the table under :data:`SECTION`: ``what``, ``example``, ``numpy``, ``altarr``, ``why``."""
    text = DOCS.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.find("\n## ", 1)] if "\n## " in section[1:] else section
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")] if line.startswith("| ") else []
        if len(cells) == 5 and cells[1].startswith("`"):
            what, example, numpy, altarr, why = cells
            rows.append(
                {
                    "what": what,
                    "example": _code(example),
                    "numpy": _code(numpy),
                    "altarr": _code(altarr),
                    "why": why,
                }
            )
    return rows


def _code(cell: str) -> str:
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"a code cell of the differences table is one `...` span: {cell!r}"
    return match.group(1)


def outcome(example: str, side: str) -> str:
    """The outcome of ``example`` on ``side`` (``"numpy"`` or ``"altarr"``), as the table writes it."""

    def A(values, *chunks):  # the table's name
        a = np.asarray(values)
        return a if side == "numpy" else lazy(a, chunks or (2,) * a.ndim)[0]

    def D(values, *chunks):
        a = np.asarray(values)
        return a.copy() if side == "numpy" else make_dataset(a, chunks or (2,) * a.ndim, "zarr3")

    namespace = {"np": np, "aa": aa, "A": A, "D": D}
    *statements, last = example.split("; ")
    before = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for statement in statements:
            try:
                exec(statement, namespace)
            except Exception as e:  # the outcome names it
                before += f"raises {type(e).__name__}; then "
        try:
            return before + repr(eval(last, namespace))
        except Exception as e:
            return before + f"raises {type(e).__name__}"


ROWS = table_rows()


def test_the_table_has_the_differences_the_fuzz_leaves_out():
    whats = " ".join(r["what"] for r in ROWS)
    for topic in (
        "float16",
        "complex",
        "where",
        "integer",
        "order",
        "layout",
        "read-only",
        "view",
        "mean=",
        "checked",
        "elementwise",
        ".flat",
    ):
        assert topic in whats, f"no row of the differences table is about {topic!r}"


@pytest.mark.parametrize("row", ROWS, ids=[r["what"][:40] for r in ROWS])
def test_each_row_of_the_differences_table_is_what_the_code_does(row):
    assert outcome(row["example"], "numpy") == row["numpy"]
    assert outcome(row["example"], "altarr") == row["altarr"]
    assert row["numpy"] != row["altarr"]
