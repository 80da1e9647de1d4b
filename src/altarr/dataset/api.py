"""Opening and creating datasets and groups, and consolidating a group's metadata (the copy functions
are :mod:`altarr.copying`).
"""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError, NodeNotFoundError, UnsupportedError
from ..formats import consolidated as cm
from ..formats import get_format, open_node, registered_formats
from ..formats._common import join_key
from ..formats.base import Node
from ..stores.base import Store
from .consolidated import refresh_consolidated
from .dataset import Dataset
from .group import Group, clear_node, create_dataset, store_at
from .locks import run_exclusive
from .n5_container import n5_container_above

__all__ = [
    "open_dataset",
    "create_dataset",
    "open_group",
    "create_group",
    "create_like",
    "consolidate_metadata",
]


def _open_node(store: Store, prefix: str, **options: Any) -> Node:
    """:func:`~altarr.formats.open_node`, with metadata errors saying which store they are about (a bare
    relative key such as '/' does not tell a user which path was wrong)."""
    try:
        return open_node(store, prefix, **options)
    except MetadataError as e:
        raise type(e)(f"{e.message} in {store!r}", **e._context()) from e


def open_dataset(
    path_or_url: str | Store,
    mode: str = "r",
    *,
    path: str = "",
    write_empty_chunks: bool = False,
    recheck: bool | None = None,
    format: str | None = None,
    **storage_options: Any,
) -> Dataset:
    """Open an existing N5, Zarr v2 or Zarr v3 array; the format is detected from its metadata.

    ``path_or_url`` is a local path, a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://`` through
    obstore, ``memory://`` and any other fsspec URL through fsspec; see ``docs/remote.md``), a ``.zip``
    file or a :class:`~altarr.stores.Store`; ``path`` a node inside it. ``mode="r"`` is read-only,
    ``"r+"`` allows writes. ``recheck`` is the staleness rule of the cached shard
    indexes: ``None`` validates them by the object versions the store reports, ``True`` reads them
    again on every call, ``False`` trusts them while the dataset is open. ``format`` (``"zarr3"``,
    ``"zarr2"``, ``"n5"``) skips the detection: only that format's metadata is requested.

    >>> import altarr as aa
    >>> _ = aa.create_dataset("memory://doc-open", shape=(3,), dtype="f4", chunks=(2,))
    >>> aa.open_dataset("memory://doc-open").shape
    (3,)
    """
    store, prefix = store_at(path_or_url, mode, path, storage_options)
    # detection and parsing from one batched request
    node = _open_node(store, prefix, format=format)
    if node.kind != "array":
        raise MetadataError("node is a group, not an array (use altarr.open_group)", key=prefix or "/")
    assert node.spec is not None  # an array's node carries its metadata
    return Dataset(
        store,
        prefix,
        node.spec,
        node.format,
        mode=mode,
        write_empty_chunks=write_empty_chunks,
        recheck=recheck,
    )


def open_group(
    path_or_url: str | Store,
    mode: str = "r",
    *,
    path: str = "",
    consolidated: bool | None = None,
    **storage_options: Any,
) -> Group:
    """Open an existing group (or the root of an N5 container).

    ``consolidated`` is what xarray and zarr-python mean by it: with ``None`` (the default) a group
    opened read-only whose metadata is consolidated (Zarr v3 ``consolidated_metadata``, Zarr v2
    ``.zmetadata``) lists and opens its children from that snapshot, without further requests (an HTTP
    server, which cannot list, needs it); ``True`` requires consolidated metadata (``MetadataError``
    without it); ``False`` ignores it and reads every child's own metadata.

    >>> import altarr as aa
    >>> _ = aa.create_group("memory://doc-og", format="n5")
    >>> aa.open_group("memory://doc-og").format
    'n5'
    """
    store, prefix = store_at(path_or_url, mode, path, storage_options)
    # one round: the candidates and the documents holding consolidated metadata (Zarr v2's .zmetadata;
    # Zarr v3 consolidates inside zarr.json)
    extra = tuple(dict.fromkeys(k for f in registered_formats() for k in f.consolidated_probe_keys()))
    try:
        node = _open_node(store, prefix, parse=False, extra=extra)
    except NodeNotFoundError:  # perhaps a group of an N5 container without attributes.json
        above = n5_container_above(path_or_url, path, mode, storage_options)
        if above is None:
            raise
        store, prefix = above
        node = _open_node(store, prefix, parse=False, extra=extra)
    if node.kind != "group":
        raise MetadataError("node is an array, not a group (use altarr.open_dataset)", key=prefix or "/")
    found = node.format.consolidated_children(node.raw or {}, prefix)
    if consolidated and found is None:
        raise MetadataError(
            f"consolidated=True, but this {node.format.title} group has no consolidated metadata "
            f"in {store!r} (pass consolidated=None to read each child's own)",
            key=prefix or "/",
        )
    use = found if mode == "r" and consolidated is not False else None
    return Group(store, prefix, node.format, mode=mode, consolidated=use)


def create_group(
    path_or_url: str | Store,
    *,
    format: str = "zarr3",
    attributes: dict[str, Any] | None = None,
    overwrite: bool = False,
    path: str = "",
    **storage_options: Any,
) -> Group:
    """Create a group (for N5 the container root records ``"n5": "4.0.0"``) and return it writable.

    >>> import altarr as aa
    >>> g = aa.create_group("memory://doc-cg", attributes={"a": 1})
    >>> dict(g.attrs)
    {'a': 1}
    """
    store, prefix = store_at(path_or_url, "w" if overwrite else "a", path, storage_options)
    clear_node(store, prefix, overwrite)
    fmt = get_format(format)
    fmt.create_group(store, prefix, attributes)
    refresh_consolidated(store, prefix, fmt, "created")
    return Group(store, prefix, fmt, mode="r+")


def create_like(
    source: Dataset,
    destination: str | Store,
    *,
    format: str | None = None,
    chunks: Any = None,
    shards: Any = None,
    compressor: Any = "zstd",
    overwrite: bool = False,
    path: str = "",
    **format_options: Any,
) -> Dataset:
    """A new, empty dataset at ``destination`` with the shape, dtype, fill value, user attributes and
    dimension names of ``source`` (dropped where ``format`` cannot name dimensions, as N5 cannot), in
    ``format`` (default the source's), with ``chunks`` (default the source's) and ``shards``. The
    destination of :func:`altarr.copy_dataset` and of ``altarr copy`` (:func:`altarr.transfer.copy_array`).

    >>> import altarr as aa
    >>> src = aa.create_dataset("memory://doc-like/a", shape=(4,), dtype="i2", chunks=(2,), dimension_names=["x"])
    >>> dst = create_like(src, "memory://doc-like/b", format="n5")
    >>> dst.format, dst.shape, dst.dimension_names
    ('n5', (4,), None)
    """
    fmt = format or source.format
    keep_names = get_format(fmt).has_dimension_names
    return create_dataset(
        destination,
        shape=source.shape,
        dtype=source.dtype,
        chunks=tuple(chunks) if chunks is not None else source.chunks,
        shards=shards,
        format=fmt,
        compressor=compressor,
        fill_value=source.fill_value,
        attributes=source.attrs.asdict(),
        dimension_names=source.dimension_names if keep_names else None,
        overwrite=overwrite,
        path=path,
        **format_options,
    )


def consolidate_metadata(
    path_or_group: str | Store | Group, *, path: str = "", **storage_options: Any
) -> Group:
    """Write the consolidated metadata of the Zarr group ``path_or_group`` (a path, URL or store with
    ``path`` inside it, or an open :class:`~altarr.Group`) as zarr-python does: Zarr v2 ``.zmetadata``,
    Zarr v3 ``consolidated_metadata`` in the group's ``zarr.json``; returns the group opened read-only
    from it. Needed once: altarr's later writes below the group keep it up to date. N5 has no
    consolidated metadata (:class:`~altarr.errors.UnsupportedError`).

    >>> import altarr as aa
    >>> g = aa.create_group("memory://doc-cm")
    >>> _ = g.create_group("sub")
    >>> list(aa.consolidate_metadata("memory://doc-cm").keys())
    ['sub']
    """
    if isinstance(path_or_group, Group):
        group = path_or_group
    else:
        group = open_group(path_or_group, "r+", path=path, consolidated=False, **storage_options)
    store, prefix, fmt = group.store, group.path, get_format(group.format)
    holder = cm.holder_name(fmt.name)
    if holder is None:
        raise UnsupportedError(f"{fmt.title} has no consolidated metadata", key=prefix or "/")
    key = join_key(prefix, holder)

    def write() -> None:
        metadata = cm.gather(store, prefix, fmt.name)
        raw = store.get(key) if fmt.name == "zarr3" else None  # Zarr v3's zarr.json keeps its other fields
        store.set(key, cm.holder_bytes(fmt.name, raw, metadata, key))

    run_exclusive(store, [key], write)
    return open_group(store, path=prefix, consolidated=True)
