"""The arguments of a new array, checked and completed before anything is written: shape and dtype from
``data=``, automatic ``chunks`` (zarr-python 3's rule: docs/zarr-python.md), and the codecs in any form
of the codec vocabulary, spelled as altarr or zarr-python 3 spells them.

Example:
    >>> guess_chunks((1000, 1000), 8), guess_chunks((512, 512, 512), 2)
    ((250, 250), (64, 64, 128))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..codecs.vocabulary import check_serializer, compressor_argument, filters_argument
from ..errors import MetadataError
from ..formats import get_format

__all__ = ["guess_chunks", "auto_chunks", "new_array_arguments"]

_MIB = 1024 * 1024


def guess_chunks(
    shape: tuple[int, ...], itemsize: int, *, max_bytes: int = 64 * _MIB, min_bytes: int = 128 * 1024
) -> tuple[int, ...]:
    """Chunks for an array of ``shape`` and ``itemsize`` by zarr-python 3's automatic rule (the module
    docstring says it in words).

    >>> guess_chunks((100,), 1), guess_chunks((4000, 3000), 1)
    ((100,), (1000, 750))
    """
    if not shape:
        return ()
    chunks = [max(int(s), 1) for s in shape]
    if itemsize == 0:
        return tuple(chunks)
    size_mib = math.prod(chunks) * itemsize / _MIB
    target = min(max(256 * 1024 * 2 ** math.log10(size_mib), min_bytes), max_bytes)
    turn = 0
    while True:
        nbytes = math.prod(chunks) * itemsize
        near = nbytes < target or abs(nbytes - target) / target < 0.5
        if (near and nbytes < max_bytes) or math.prod(chunks) == 1:
            return tuple(chunks)
        d = turn % len(chunks)
        chunks[d] = math.ceil(chunks[d] / 2)
        turn += 1


def auto_chunks(chunks: Any, shape: tuple[int, ...], itemsize: int, shards: Any) -> tuple[int, ...]:
    """``chunks`` as a tuple: an int for every dimension, or ``"auto"``/``None`` for :func:`guess_chunks`
    (at most 1 MiB and dividing the outermost shard when ``shards`` are given).

    >>> auto_chunks("auto", (100, 100), 8, shards=(50, 50)), auto_chunks(10, (100, 100), 8, None)
    ((50, 50), (10, 10))
    """
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        if shards is None:
            return guess_chunks(shape, itemsize)
        guess = guess_chunks(shape, itemsize, max_bytes=_MIB)
        inner = shards[0] if shards and isinstance(shards[0], list | tuple) else shards
        out = []
        for c, s in zip(guess, inner, strict=False):
            c = min(c, int(s))
            while int(s) % c:
                c -= 1
            out.append(c)
        return tuple(out)
    if isinstance(chunks, str):
        raise MetadataError(f"chunks={chunks!r}: chunks are a shape, an int or 'auto'")
    if isinstance(chunks, int | np.integer):
        return (int(chunks),) * len(shape)
    return tuple(int(c) for c in chunks)


def new_array_arguments(
    format: str,
    *,
    shape: Any = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    compressor: Any = "auto",
    compressors: Any = None,
    filters: Any = None,
    serializer: Any = None,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of ``Format.create_array`` for a new array (``shape``, ``dtype``,
    ``chunks``, ``shards``, ``compressor`` in the format's terms, and the format ``options``), every one
    checked, so that a bad argument is refused before anything is written (and before ``overwrite``
    deletes anything). ``data`` gives the shape and dtype when they are not given.

    >>> kw = new_array_arguments("zarr2", data=np.zeros((10, 4), "u1"), compressors="zstd:5", options={})
    >>> kw["shape"], kw["dtype"], kw["chunks"], kw["compressor"]
    ((10, 4), dtype('uint8'), (10, 4), {'id': 'zstd', 'level': 5})
    """
    if data is not None:
        data = np.asarray(data)
        for name, given, found in (("shape", shape, data.shape), ("dtype", dtype, data.dtype)):
            if given is not None and (np.dtype(given) if name == "dtype" else _shape(given)) != found:
                raise MetadataError(f"{name}={given!r} differs from the data's {found!r}")
        shape, dtype = data.shape, data.dtype
    if shape is None or dtype is None:
        raise MetadataError("a new array needs shape= and dtype=, or data=")
    shape = _shape(shape)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise MetadataError(f"dtype={dtype!r} is not a NumPy data type: {e}") from e
    fmt = get_format(format)
    if compressors is not None and not (isinstance(compressor, str) and compressor == "auto"):
        raise MetadataError("pass compressor= (altarr) or compressors= (zarr-python), not both")
    argument, value = ("compressors", compressors) if compressors is not None else ("compressor", compressor)
    codec = compressor_argument(value, fmt.name, dt, argument=argument, default=fmt.default_compressor)
    check_serializer(serializer, fmt.name)
    options = dict(options)
    configs = filters_argument(filters, fmt.name)
    if configs is not None:
        if options.get("filters") is not None:
            raise MetadataError("filters are given twice (filters= and a format option)")
        options["filters"] = configs
    elif "filters" in options:
        options["filters"] = filters_argument(options["filters"], fmt.name)
    if isinstance(shards, int | np.integer):
        shards = (int(shards),) * len(shape)
    return {
        "shape": shape,
        "dtype": dtype,
        "chunks": auto_chunks(chunks, shape, dt.itemsize, shards),
        "shards": shards,
        "compressor": codec,
        **options,
    }


def _shape(value: Any) -> tuple[int, ...]:
    return (int(value),) if isinstance(value, int | np.integer) else tuple(int(v) for v in value)
