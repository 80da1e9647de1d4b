"""The streamed reductions as methods of a lazy array, with NumPy's signatures."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import reduce

__all__ = ["ReductionMethods"]


class ReductionMethods:
    """The reductions of :class:`~altarr.lazy.array.LazyArray`: each streams (``batch_chunks`` chunks per
    fetch call, nothing cached)."""

    def sum(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = np._NoValue,
        where: Any = True,
    ) -> Any:
        """Streamed sum (NumPy signature): ``batch_chunks`` chunks per fetch call, nothing cached.

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c))
            >>> float(x.sum()), x.sum(axis=0).tolist()
            (16.0, [4.0, 4.0, 4.0, 4.0])
        """
        return reduce.ufunc_reduce(self, np.add, axis, dtype, out, keepdims, initial, where)

    def prod(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = np._NoValue,
        where: Any = True,
    ) -> Any:
        """Streamed product (NumPy signature)."""
        return reduce.ufunc_reduce(self, np.multiply, axis, dtype, out, keepdims, initial, where)

    def min(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = np._NoValue,
        where: Any = True,
    ) -> Any:
        """Streamed minimum (NumPy signature)."""
        return reduce.ufunc_reduce(self, np.minimum, axis, None, out, keepdims, initial, where)

    def max(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = np._NoValue,
        where: Any = True,
    ) -> Any:
        """Streamed maximum (NumPy signature)."""
        return reduce.ufunc_reduce(self, np.maximum, axis, None, out, keepdims, initial, where)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:
        """Streamed ``any``; stops at the first batch that decides it.

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr(100, 10, lambda c: [np.ones(10)] * len(c))
            >>> with aa.set_options(batch_chunks=2):
            ...     bool(x.any())
            True
            >>> aa.stats(x)["chunks_fetched"]  # the first batch decided it
            2
        """
        return reduce.any_all(self, "any", axis, out, keepdims, where)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:
        """Streamed ``all``; stops at the first batch that decides it."""
        return reduce.any_all(self, "all", axis, out, keepdims, where)

    def mean(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        *,
        where: Any = True,
    ) -> Any:
        """Streamed mean (NumPy signature)."""
        return reduce.mean(self, axis, dtype, out, keepdims, where, nan=False)

    def var(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        where: Any = True,
        mean: Any = np._NoValue,
        correction: Any = np._NoValue,
    ) -> Any:
        """Streamed variance (Chan et al. pairwise merge; NumPy signature).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr(4, 2, lambda c: [np.array([1.0, 3.0])] * len(c))
            >>> float(x.var()), float(x.var(ddof=1))
            (1.0, 1.3333333333333333)
        """
        return reduce.var(
            self, axis, dtype, out, ddof, keepdims, where, mean, correction, nan=False, sqrt=False
        )

    def std(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        where: Any = True,
        mean: Any = np._NoValue,
        correction: Any = np._NoValue,
    ) -> Any:
        """Streamed standard deviation (NumPy signature)."""
        return reduce.var(
            self, axis, dtype, out, ddof, keepdims, where, mean, correction, nan=False, sqrt=True
        )

    def count_nonzero(self, axis: Any = None, *, keepdims: bool = False) -> Any:
        """Streamed count of non-zero values."""
        return reduce.count_nonzero(self, axis, keepdims)

    def nonzero(self) -> tuple[np.ndarray, ...]:
        """Indices of the non-zero values, streamed (C order, like NumPy)."""
        return reduce.nonzero(self)

    def argmin(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        """Streamed index of the minimum (NumPy's rules: first occurrence, a NaN wins).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((3, 4), 2, lambda c: [np.array([[5.0, 1.0], [0.0, 7.0]])[: 3 - 2 * i] for i, j in c])
            >>> int(x.argmin()), x.argmin(axis=0).tolist()
            (4, [1, 0, 1, 0])
        """
        return reduce.arg_reduce(self, "argmin", axis, out, keepdims)

    def argmax(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        """Streamed index of the maximum (NumPy's rules: first occurrence, a NaN wins)."""
        return reduce.arg_reduce(self, "argmax", axis, out, keepdims)
