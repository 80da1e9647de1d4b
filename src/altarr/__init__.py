"""altarr: chunked, compressed N-dimensional arrays: a block engine for N5, Zarr v2 and Zarr v3
(:func:`open_dataset`, :func:`create_dataset`) and NumPy-compatible lazy arrays (:func:`altarr`,
:func:`open`), one call one round trip.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((10, 7), (4, 3), lambda chunks: [np.zeros((4, 3))] * len(chunks))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> its module, imported on first use (``import altarr`` stays cheap)
_PUBLIC = {
    # lazy arrays
    "altarr": "altarr.lazy",
    "LazyArray": "altarr.lazy",
    "extract": "altarr.lazy",
    "plan": "altarr.lazy",
    "stats": "altarr.lazy",
    "reset": "altarr.lazy",
    "is_altarr": "altarr.lazy",
    "set_options": "altarr.lazy",
    "get_options": "altarr.lazy",
    "open": "altarr.lazy",
    "zarr_v2": "altarr.lazy",
    "example_zarr": "altarr.lazy",
    "read_many": "altarr.lazy.many",
    "batch": "altarr.lazy.batch",
    # block engine
    "Dataset": "altarr.dataset",
    "Group": "altarr.dataset",
    "open_dataset": "altarr.dataset",
    "create_dataset": "altarr.dataset",
    "open_group": "altarr.dataset",
    "create_group": "altarr.dataset",
    "copy_dataset": "altarr.copying",
    "copy_group": "altarr.copying",
    "consolidate_metadata": "altarr.dataset.api",
    # stores
    "store_from_url": "altarr.stores",
    "MemoryStore": "altarr.stores",
    "LocalStore": "altarr.stores",
    "FsspecStore": "altarr.stores",
    "ZipStore": "altarr.stores",
    "ObstoreStore": "altarr.stores",
    "Store": "altarr.stores",
    # image pyramids
    "build_pyramid": "altarr.multiscale",
    "open_multiscale": "altarr.multiscale",
    "convert_pyramid": "altarr.multiscale",
    "Multiscale": "altarr.multiscale",
    # dask and xarray adapters (imported on first use)
    "to_dask": "altarr.integrations.dask",
    "store": "altarr.integrations.dask",
    # errors module
    "errors": "altarr.errors",
    # integrity check
    "verify": "altarr.verifying",
    "VerifyReport": "altarr.verifying",
    # whether the native kernel is active, and if not, why
    "native_status": "altarr.native",
}

# ``open`` stays out of ``__all__``: ``from altarr import *`` must not shadow the builtin
__all__ = sorted(n for n in _PUBLIC if n != "open") + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'altarr' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if name == "errors" else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(_PUBLIC) + ["__version__"]
