"""``LazyArray``: a NumPy-compatible array whose chunks are fetched on demand (docs/lazy-arrays.md)."""

from __future__ import annotations

import copy as _copy
import operator
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ..errors import MaterializeError, ReadOnlyError, UnsupportedError
from ..selection import nchunks_of, normalize, plan
from . import batch as _batch
from . import options
from .cache import CACHE
from .elementwise import cast
from .fetching import FetchSource
from .geometry import check_dtype
from .many import read_many, read_plans
from .numpy_api import array_function, array_ufunc, power
from .reduction_methods import ReductionMethods
from .views import reshape, transpose

__all__ = ["LazyArray", "RECIPE_VERSION", "rebuild_lazy_array"]

_S = TypeVar("_S")

#: The recipe format a pickled lazy array is written in (docs/lazy-arrays.md, "Recipes"); every version up
#: to this one is read.
RECIPE_VERSION = 1

#: NumPy 2.4 converts only 0-d arrays to Python scalars (``float(x)``); altarr follows the installed NumPy.
_ONLY_0D_TO_SCALAR = np.lib.NumpyVersion(np.__version__) >= "2.4.0"


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


class _IndexerProxy:
    """``x.oindex``, ``x.vindex`` and ``x.flat``: objects whose ``[...]`` reads one indexing form."""

    __slots__ = ("_array", "_form")

    def __init__(self, array: LazyArray, form: str) -> None:
        self._array = array
        self._form = form

    def __getitem__(self, key: Any) -> Any:
        return self._array._read(self._form, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise ReadOnlyError("lazy arrays are read-only")


def _adapter(library: str, name: str) -> Callable[..., Any]:
    """The converter ``name`` of ``altarr.integrations.<library>`` (the layer above), imported when asked."""
    import importlib

    adapter: Callable[..., Any] = getattr(importlib.import_module(f"altarr.integrations.{library}"), name)
    return adapter


class LazyArray(ReductionMethods, NDArrayOperatorsMixin):
    """A read-only, NumPy-compatible array whose values are fetched chunk by chunk on demand.

    Build one with :func:`altarr` (any ``fetch`` function) or :func:`altarr.open` (a dataset). Attributes:
    ``shape``, ``dtype``, ``chunks`` (the chunk shape), ``ndim``, ``size``, ``nbytes``, ``dims``,
    ``coords``, ``nchunks`` (chunks along each dimension).

    Example:
        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr((6,), 4, lambda c: [np.arange(4.0 * i, min(4.0 * i + 4, 6)) for (i,) in c])
        >>> x[::-2]
        array([5., 3., 1.])
        >>> aa.is_altarr(x), aa.is_altarr(x[:2])
        (True, False)
    """

    _is_lazy_array = True

    def __init__(
        self,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        dtype: np.dtype,
        source: Any,
        dims: tuple[str, ...] | None = None,
        coords: dict[str, Any] | None = None,
    ) -> None:
        self._shape = tuple(shape)
        self._chunks = tuple(chunks)
        self._dtype = np.dtype(dtype)
        self._source = source
        self._dims = dims
        self._coords = coords

    # --- attributes ------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The array shape."""
        return self._shape

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape (edge chunks are clipped)."""
        return self._chunks

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes the whole array would take in memory."""
        return self.size * self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def dims(self) -> tuple[str, ...] | None:
        """Dimension names, or ``None``."""
        return self._dims

    @property
    def coords(self) -> dict[str, Any] | None:
        """Coordinates by name, or ``None``."""
        return self._coords

    @property
    def nchunks(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return nchunks_of(self._shape, self._chunks)

    @property
    def oindex(self) -> _IndexerProxy:
        """Orthogonal (outer) indexing: one subscript per dimension, cartesian product (NEP 21).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((3, 4), 2, lambda c: [np.ones((2, 2))[: 3 - 2 * i] for i, j in c])
            >>> x.oindex[[0, 2], [1, 3, 0]].shape
            (2, 3)
        """
        return _IndexerProxy(self, "outer")

    @property
    def vindex(self) -> _IndexerProxy:
        """Vectorized (point) indexing: arrays broadcast together, their dimensions first (NEP 21).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((3, 4), 2, lambda c: [np.ones((2, 2))[: 3 - 2 * i] for i, j in c])
            >>> x.vindex[[0, 2], [1, 3]].shape
            (2,)
        """
        return _IndexerProxy(self, "vector")

    @property
    def flat(self) -> _IndexerProxy:
        """C-order linear indexing: ``x.flat[i]``, ``x.flat[a:b:c]``, ``x.flat[int_array]``.

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr(5, 2, lambda c: [np.arange(2 * i, min(2 * i + 2, 5)) for (i,) in c])
            >>> x.flat[[4, 0]].tolist()
            [4.0, 0.0]
        """
        return _IndexerProxy(self, "flat")

    # --- internals ---------------------------------------------------------------------------------------
    def _leaves(self) -> list[FetchSource]:
        leaves: list[FetchSource] = self._source.leaves()
        return leaves

    def _count(self, name: str, amount: int = 1) -> None:
        for leaf in self._leaves():
            leaf.counters.add(name, amount)

    def _convert_key(self, key: Any) -> Any:
        """Lazy arrays used as indices (``x[x > 0]``) are materialized first (under the guard)."""
        if isinstance(key, tuple):
            if any(isinstance(k, LazyArray) for k in key):
                return tuple(k._materialize() if isinstance(k, LazyArray) else k for k in key)
            return key
        return key._materialize() if isinstance(key, LazyArray) else key

    def _materialize(self) -> np.ndarray:
        """The whole array as NumPy, refused above ``max_materialize`` bytes before any fetch."""
        limit = options.materialize_limit()
        if self.nbytes > limit:
            chosen = "" if options.get_options()["max_materialize"] is not None else " (half the free memory)"
            raise MaterializeError(
                f"refusing to materialize a lazy array of {self.size:,} elements (shape {self._shape}, "
                f"{_format_bytes(self.nbytes)}, {int(np.prod(self.nchunks, dtype=np.int64)):,} chunks): "
                f"more than max_materialize={limit:,} bytes{chosen}. Select a part first (x[...], "
                f"x.oindex[...], altarr.extract(x, ...)), use a streamed reduction (x.sum(), "
                f"np.mean(x, axis=0)), convert with x.to_dask(), or raise the limit with "
                f"altarr.set_options(max_materialize=...)"
            )
        self._count("materialize")
        return np.asarray(read_plans(self, [plan(normalize(Ellipsis, self._shape), self._chunks)])[0])

    # --- NumPy protocols --------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        """NumPy indexing (basic and advanced, exactly NumPy's semantics); returns NumPy data."""
        return self._read("numpy", key)

    def _read(self, form: str, key: Any) -> Any:
        """``key`` of indexing ``form`` planned and fetched (deferred inside ``with altarr.batch()``)."""
        p = plan(normalize(self._convert_key(key), self._shape, form), self._chunks)
        self._count("extract_subset")
        if (b := _batch.current()) is not None:
            return b.add(self, p)
        return read_plans(self, [p])[0]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise ReadOnlyError("lazy arrays are read-only")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a lazy array cannot be viewed as a NumPy array without a copy (copy=False)")
        arr = self._materialize()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            arr = arr.astype(dtype)
        return arr

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return array_function(func, types, args, kwargs)

    def __pow__(self, exponent: Any) -> Any:
        """``x ** e``: NumPy's operator, with its fast paths for ``2``, ``-1`` and ``0.5``."""
        return power(self, exponent)

    def to_numpy(self) -> np.ndarray:
        """The whole array as NumPy (guarded by ``max_materialize``, bytes)."""
        return self._materialize()

    # --- casts and views ----------------------------------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> LazyArray:
        """A lazy cast to ``dtype`` (values converted chunk by chunk when read).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr(3, 3, lambda c: [np.array([0.5, 1.5, 2.5])])
            >>> x.astype("int8")[...]
            array([0, 1, 2], dtype=int8)
        """
        return cast(self, check_dtype(dtype))

    @property
    def T(self) -> LazyArray:
        """The lazy transpose (reversed axes).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((2, 3), (1, 2), lambda c: [np.ones((1, 2))[:, : 3 - 2 * j] * i for i, j in c])
            >>> aa.is_altarr(x.T), x.T.shape, x.T.chunks, x.T[:, 1].tolist()
            (True, (3, 2), (2, 1), [1.0, 1.0, 1.0])
        """
        return transpose(self)

    @property
    def mT(self) -> LazyArray:
        """The lazy transpose of the last two axes."""
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    def transpose(self, *axes: Any) -> LazyArray:
        """A lazy view with permuted axes (NumPy's signature: ``x.transpose(1, 0)`` or ``((1, 0))``)."""
        given: Sequence[Any] | None = axes
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
            given = axes[0]
        return transpose(self, None if given is None or len(given) == 0 else tuple(given))

    def swapaxes(self, axis1: int, axis2: int) -> LazyArray:
        """A lazy view with two axes interchanged."""
        from numpy.lib.array_utils import normalize_axis_index

        a, b = normalize_axis_index(axis1, self.ndim), normalize_axis_index(axis2, self.ndim)
        perm = list(range(self.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        return transpose(self, perm)

    def ravel(self, order: Literal["C", "F", "A", "K"] = "C") -> Any:
        """C-order flattening: lazy when every chunk spans the whole trailing dimensions, else NumPy data
        through the guarded materialization."""
        if order not in ("C", "A", "K"):
            return np.ravel(self._materialize(), order=order)
        return reshape(self, (self.size,))

    def flatten(self, order: Literal["C", "F", "A", "K"] = "C") -> Any:
        """As :meth:`ravel` (lazy arrays are read-only, so a view serves as the copy)."""
        return self.ravel(order)

    def reshape(self, *shape: Any, order: Literal["C", "F", "A"] = "C", copy: bool | None = None) -> Any:
        """NumPy's ``reshape``: a lazy view in C order when every chunk of the result is one chunk of ``x``
        reshaped (:func:`~altarr.lazy.views.reshape_chunks`), else NumPy data through the guarded
        materialization.

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((4, 6), (2, 6), lambda c: [np.arange(12.0).reshape(2, 6)] * len(c))
            >>> y = x.reshape(8, 3)
            >>> aa.is_altarr(y), y.chunks, y[3].tolist()
            (True, (4, 3), [9.0, 10.0, 11.0])
        """
        if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
            shape = shape[0]
        # NumPy's own checks and -1 inference, on an array of the same shape that holds no bytes
        new = np.empty(self._shape, dtype=[]).reshape(shape, order=order).shape
        if order not in ("C", "A"):
            return self._materialize().reshape(new, order=order)
        return reshape(self, new)

    def tolist(self) -> Any:
        """The values as nested Python lists (a Python scalar for a 0-d array), materialized.

        Example:
            >>> import numpy as np, altarr as aa
            >>> aa.altarr((2, 2), 1, lambda c: [np.ones((1, 1))] * len(c), dtype="i2").tolist()
            [[1, 1], [1, 1]]
        """
        return self._materialize().tolist()

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar (NumPy's ``item``).

        Example:
            >>> import numpy as np, altarr as aa
            >>> x = aa.altarr((2, 3), 3, lambda c: [np.arange(6.0).reshape(2, 3)])
            >>> x.item(4), x.item(1, 2), type(x.item(0)).__name__
            (4.0, 5.0, 'float')
        """
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return self[(0,) * self.ndim].item()
        if len(args) == 1:
            i = operator.index(args[0])
            if not -self.size <= i < self.size:
                raise IndexError("index out of bounds")
            return self.flat[i].item()
        if len(args) != self.ndim:
            raise ValueError("incorrect number of indices for array")
        return self[tuple(operator.index(a) for a in args)].item()

    # --- extras -----------------------------------------------------------------------------------------
    def to_dask(self, chunks: Any = None) -> Any:
        """A dask array over this lazy array, one task per (batch of) chunk(s); needs ``dask``."""
        return _adapter("dask", "to_dask")(self, chunks=chunks)

    def to_xarray(
        self, name: str | None = None, attrs: Mapping[str, Any] | None = None, dask: bool = False
    ) -> Any:
        """An ``xarray.DataArray`` with this array's dims and coords, still lazy; needs ``xarray``."""
        return _adapter("xarray", "to_xarray")(self, name=name, attrs=attrs, dask=dask)

    # --- container protocol -----------------------------------------------------------------------------
    def read_many(self, selections: Sequence[Any], *, mode: str = "numpy") -> list[Any]:
        """Many selections in one call: their chunks fetched together, each once (:func:`altarr.read_many`).

        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr((4,), 2, lambda c: [np.arange(2 * i, 2 * i + 2) for (i,) in c], dtype="i8")
        >>> [r.tolist() for r in x.read_many([np.s_[1:3], np.s_[::3]])] == [[1, 2], [0, 3]]
        True
        """
        return read_many(self, selections, mode=mode)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __iter__(self) -> Iterator[Any]:
        """Rows along the first axis, fetched one chunk-row (one planned call) at a time."""
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        step = self._chunks[0]
        for r0 in range(0, self._shape[0], step):
            block = self[r0 : r0 + step]
            yield from block

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    def _scalar(self, kind: Callable[[Any], _S]) -> _S:
        """``float(x)``, ``int(x)``, ``complex(x)`` as the installed NumPy converts an array."""
        if self.ndim and _ONLY_0D_TO_SCALAR:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        if self.size != 1:
            raise TypeError("only length-1 arrays can be converted to Python scalars")
        if self.ndim:
            warnings.warn(
                "Conversion of an array with ndim > 0 to a scalar is deprecated, and will error in future. "
                "Ensure you extract a single element from your array before performing this operation. "
                "(Deprecated NumPy 1.25.)",
                DeprecationWarning,
                stacklevel=3,
            )
        return kind(self._materialize().reshape(()))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"
            )
        return bool(self._materialize().reshape(()))

    def __float__(self) -> float:
        return self._scalar(float)

    def __int__(self) -> int:
        return self._scalar(int)

    def __complex__(self) -> complex:
        return self._scalar(complex)

    def __index__(self) -> int:
        if self._dtype.kind not in "iu" or self.ndim:
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return self._scalar(int)

    # --- repr, copies, pickling -------------------------------------------------------------------------
    def __repr__(self) -> str:
        cached = sum(CACHE.owner_stats(leaf.token)["chunks_cached"] for leaf in self._leaves())
        dims = f" dims={self._dims}" if self._dims else ""
        return (
            f"<altarr.LazyArray shape={self._shape} dtype={self._dtype} chunks={self._chunks}{dims} "
            f"nchunks={self.nchunks} cached={cached} {self._source.describe()}>"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyArray:  # the source shared, as copy.copy's
        return LazyArray(
            self._shape,
            self._chunks,
            self._dtype,
            self._source,
            self._dims,
            _copy.deepcopy(self._coords, memo),
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            rebuild_lazy_array,
            (
                RECIPE_VERSION,
                self._shape,
                self._chunks,
                self._dtype.str,
                self._dims,
                self._coords,
                self._source,
            ),
        )

    def __dask_tokenize__(self) -> Any:
        return ("altarr.LazyArray", self._shape, self._chunks, self._dtype.str, self._source.dask_token())


def rebuild_lazy_array(
    version: int,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: str,
    dims: tuple[str, ...] | None,
    coords: dict[str, Any] | None,
    source: Any,
) -> LazyArray:
    """Rebuild a pickled lazy array (recipe version 1)."""
    if version > RECIPE_VERSION:
        raise UnsupportedError(
            f"this lazy-array recipe has version {version}; this altarr reads versions <= {RECIPE_VERSION}"
        )
    return LazyArray(tuple(shape), tuple(chunks), np.dtype(dtype), source, dims, coords)
