"""The public copy functions :func:`copy_dataset` and :func:`copy_group` (the engine is
:mod:`altarr.transfer`, shared with ``altarr copy``).
"""

from __future__ import annotations

from typing import Any

from .errors import AltarrError
from .transfer import ProgressBar, check_copies, copy_array, copy_tree, progress_reporter

__all__ = ["copy_dataset", "copy_group", "ProgressBar"]


def copy_dataset(source: Any, destination: Any, **options: Any) -> Any:
    """Copy the values and attributes of the dataset ``source`` into a new dataset in any format, one
    destination shard at a time, as ``altarr copy`` does; ``options`` are
    :func:`~altarr.transfer.copy_array`'s (``format``, ``chunks``, ``shards``, ``compressor``,
    ``overwrite``, ``resume``, ``workers``, ``path``, ``progress`` and :func:`altarr.create_dataset`'s
    format options); its notes are warnings.

    >>> import numpy as np, altarr as aa
    >>> src = aa.create_dataset("memory://doc-copy/a", data=np.arange(12.0).reshape(3, 4), chunks=(2, 2))
    >>> dst = aa.copy_dataset(src, "memory://doc-copy/b", format="zarr2", compressor="gzip:6")
    >>> dst.format, dst.compressors, float(dst[2, 3])
    ('zarr2', (GZip(level=6),), 11.0)
    """
    result = copy_array(source, destination, **options)
    _warn(result.notes)
    return result.dataset


def copy_group(
    source: Any,
    destination: Any,
    *,
    format: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: Any = False,
    **array_options: Any,
) -> Any:
    """Copy the group ``source`` (a :class:`~altarr.Group` or a path) and everything below it into
    ``destination``, each array as :func:`copy_dataset` copies it (every array checked first, with
    ``resume`` against what the interrupted copy wrote).

    >>> import numpy as np, altarr as aa
    >>> g = aa.create_group("memory://doc-copy-group/a", attributes={"site": "x"})
    >>> g.create_dataset("b/c", data=np.ones((4, 4), "u1"), chunks=(2, 2)).shape
    (4, 4)
    >>> out = aa.copy_group(g, "memory://doc-copy-group/n5", format="n5")
    >>> out.attrs["site"], out["b/c"].format, int(out["b/c"][...].sum())
    ('x', 'n5', 16)
    """
    import altarr as aa

    src = source if isinstance(source, aa.Group) else aa.open_group(source)
    fmt = format or src.format
    arrays = arrays_below(src)
    check_copies(arrays, destination, lambda _: {"format": fmt, **array_options}, resume)
    total = sum(ds.nbytes for _, ds in arrays)
    with progress_reporter(progress, total, str(destination)) as report:
        run: dict[str, Any] = {"format": fmt, "overwrite": overwrite, "resume": resume}

        def one(rel: str, ds: Any) -> Any:
            return copy_array(ds, destination, path=rel, progress=report, **run, **array_options)

        results = copy_tree(src, destination, one, **run)
    _warn([f"{rel}: {note}" for rel, r in results for note in r.notes])
    return aa.open_group(destination, mode="r+")


def arrays_below(group: Any, recursive: bool = True) -> list[tuple[str, Any]]:
    """Every array below ``group`` (``recursive=False``: its own), with its path relative to it."""
    import altarr as aa

    members = group.members(max_depth=None if recursive else 0)
    return [(rel, node) for rel, node in members if isinstance(node, aa.Dataset)]


def open_node(location: Any, *, consolidated: bool | None = None, **storage_options: Any) -> Any:
    """The dataset or group at ``location``; where there is neither, the dataset's error (the group's
    with ``consolidated=True``: it says the consolidated metadata is missing)."""
    import altarr as aa

    try:
        return aa.open_dataset(location, **storage_options)
    except AltarrError as e:
        try:
            return aa.open_group(location, consolidated=consolidated, **storage_options)
        except AltarrError as g:
            raise (g if consolidated else e) from None


def _warn(notes: list[str]) -> None:
    import warnings

    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=3)
