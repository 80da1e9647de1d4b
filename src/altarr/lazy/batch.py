"""``with altarr.batch(): ...``: reads of lazy arrays collected inside the block and fetched together when
it exits, one fetch call per array (docs/lazy-arrays.md, "Many reads at once").
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import AltarrError
from .many import read_plans

__all__ = ["batch", "Batch", "BatchResult", "BatchError", "current"]

_current: contextvars.ContextVar[Batch | None] = contextvars.ContextVar("altarr_batch", default=None)

_PENDING = object()


class BatchError(AltarrError):
    """A :class:`BatchResult` asked for before its batch was fetched, or of a batch that failed."""


class BatchResult:
    """The value of one read made inside :func:`batch`: available once the batch has exited."""

    __slots__ = ("_value", "_error")

    def __init__(self) -> None:
        self._value: Any = _PENDING
        self._error: BaseException | None = None

    def done(self) -> bool:
        """Whether the value (or the batch's error) is here."""
        return self._value is not _PENDING or self._error is not None

    def result(self) -> Any:
        """The read's value (NumPy data, as the read outside a batch would give)."""
        if self._error is not None:
            raise BatchError(f"the batch this read belongs to failed: {self._error!r}") from self._error
        if self._value is _PENDING:
            raise BatchError("the batch this read belongs to has not been fetched yet (leave its with-block)")
        return self._value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = np.asarray(self.result())
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        if self._error is not None:
            return "BatchResult(<failed>)"
        return "BatchResult(<pending>)" if self._value is _PENDING else f"BatchResult({self._value!r})"


class Batch:
    """The reads collected by one :func:`batch` block. ``len(b)``: how many."""

    def __init__(self) -> None:
        self._reads: dict[int, tuple[Any, list[Any], list[BatchResult]]] = {}

    def __len__(self) -> int:
        return sum(len(plans) for _, plans, _ in self._reads.values())

    def add(self, x: Any, plan: Any) -> BatchResult:
        """Defer the read of ``plan`` (an :class:`altarr.selection.SelectionPlan` of lazy array ``x``)."""
        out = BatchResult()
        entry = self._reads.setdefault(id(x), (x, [], []))
        entry[1].append(plan)
        entry[2].append(out)
        return out

    def fetch(self) -> None:
        """Fetch every collected read, one fetch call per array, and fill the placeholders."""
        reads, self._reads = self._reads, {}
        error: BaseException | None = None
        for x, plans, outs in reads.values():
            if error is None:
                try:
                    for out, value in zip(outs, read_plans(x, plans), strict=True):
                        out._value = value
                    continue
                except BaseException as e:  # the remaining placeholders fail with it
                    error = e
            for out in outs:
                out._error = error
        if error is not None:
            raise error

    def cancel(self, error: BaseException) -> None:
        """Drop the collected reads unfetched; their placeholders raise with ``error``."""
        reads, self._reads = self._reads, {}
        for _, _, outs in reads.values():
            for out in outs:
                out._error = error


def current() -> Batch | None:
    """The innermost open batch of this thread or task, or ``None``."""
    return _current.get()


@contextmanager
def batch() -> Iterator[Batch]:
    """Collect the reads of lazy arrays made inside the block; fetch them together when it exits.

    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((8,), 4, lambda c: [np.arange(4) + 4 * i for (i,) in c], dtype="i8")
    >>> with aa.batch():
    ...     tiles = [x[i : i + 2] for i in range(0, 8, 2)]
    >>> np.concatenate([t.result() for t in tiles]).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> aa.stats(x)["fetch_calls"]
    1
    """
    b = Batch()
    token = _current.set(b)
    try:
        yield b
    except BaseException as e:
        _current.reset(token)
        b.cancel(e)
        raise
    _current.reset(token)
    b.fetch()
