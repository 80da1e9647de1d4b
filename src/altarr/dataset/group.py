"""Groups (hierarchy and attributes, for every format) and :func:`create_dataset`, which creates an
array in a group or at a path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import (
    AltarrError,
    ChildNotFoundError,
    ExistsError,
    MetadataError,
    NodeNotFoundError,
    NodeTypeError,
)
from ..formats import detect_format, get_format, open_node
from ..formats._common import join_key
from ..formats.base import Format, Node
from ..stores import store_from_url
from ..stores.base import Store
from .arguments import new_array_arguments
from .consolidated import refresh_consolidated
from .dataset import Dataset
from .members import Info, StoredNode

__all__ = ["Group", "Tree", "create_dataset", "node_exists", "store_at"]


def node_exists(store: Store, prefix: str) -> bool:
    """Whether an array or group of any format is at ``prefix``."""
    try:
        detect_format(store, prefix)
    except AltarrError:
        return False
    return True


def _node_object(
    store: Store, prefix: str, node: Node, mode: str, consolidated: Any = None
) -> Dataset | Group:
    if node.kind == "array":
        assert node.spec is not None  # an array's node carries its metadata
        return Dataset(store, prefix, node.spec, node.format, mode=mode)
    return Group(store, prefix, node.format, mode=mode, consolidated=consolidated)


def store_at(path_or_url: str | Store, mode: str, path: str, storage_options: dict) -> tuple[Store, str]:
    """The store of ``path_or_url`` opened in ``mode`` and the prefix of the node ``path`` inside it."""
    store, prefix = store_from_url(path_or_url, mode=mode, **storage_options)
    path = path.strip("/")
    return store, (f"{prefix}/{path}" if prefix and path else prefix or path)


def create_dataset(
    path_or_url: str | Store,
    *,
    shape: Any = None,
    dtype: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    format: str = "zarr3",
    compressor: Any = "auto",
    fill_value: Any = 0,
    attributes: dict[str, Any] | None = None,
    dimension_names: Any = None,
    overwrite: bool = False,
    path: str = "",
    write_empty_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    data: Any = None,
    compressors: Any = None,
    filters: Any = None,
    serializer: Any = None,
    **format_options: Any,
) -> Dataset:
    """Create a new array and return it opened for writing.

    ``shape`` and ``dtype`` come from ``data`` (written into the new array) when not given. ``chunks`` is
    the innermost chunk shape, or ``"auto"`` (the default) for zarr-python 3's automatic rule (see
    :mod:`altarr.dataset.arguments`); ``shards`` ``None``, the outermost shard shape, or a list of shard
    shapes from the innermost level outwards (nested sharding). ``format`` is ``"zarr3"``, ``"zarr2"``
    or ``"n5"``. ``compressor`` (or zarr-python's ``compressors``) takes every form of the codec
    vocabulary (:mod:`altarr.codecs.vocabulary`): ``"zstd:5"``, ``"blosc:lz4:5"``, ``None``, a Zarr v3,
    numcodecs or N5 dict, a numcodecs or ``zarr.codecs`` object; ``"auto"`` is zstd (level 3).
    ``filters`` (numcodecs filters, Zarr v2) and ``serializer`` (little-endian ``bytes``) as zarr-python
    takes them. Every argument is checked before anything is written. An existing node raises
    :class:`~altarr.errors.ExistsError` unless ``overwrite=True``, which deletes it first. Shapes are
    NumPy order for every format.

    >>> import altarr as aa, numpy as np
    >>> ds = aa.create_dataset("memory://doc-create", shape=(100, 100), dtype="uint16", chunks=(10, 10),
    ...                        shards=(50, 50), compressor="zstd:5")
    >>> ds.chunks, ds.shards
    ((10, 10), (50, 50))
    >>> aa.create_dataset("memory://doc-create-data", data=np.arange(6.0).reshape(2, 3)).shape
    (2, 3)
    """
    store, prefix = store_at(path_or_url, "w" if overwrite else "a", path, storage_options or {})
    options = {"fill_value": fill_value, "attributes": attributes, "dimension_names": dimension_names}
    kw = new_array_arguments(
        format,
        shape=shape,
        dtype=dtype,
        data=data,
        chunks=chunks,
        shards=shards,
        compressor=compressor,
        compressors=compressors,
        filters=filters,
        serializer=serializer,
        options={**options, **format_options},
    )
    clear_node(store, prefix, overwrite)
    fmt = get_format(format)
    spec = fmt.create_array(store, prefix, **kw)
    refresh_consolidated(store, prefix, fmt, "created")
    ds = Dataset(store, prefix, spec, fmt, mode="r+", write_empty_chunks=write_empty_chunks)
    if data is not None:
        ds[...] = data
    return ds


def clear_node(store: Store, prefix: str, overwrite: bool) -> None:
    """Make room for a new node at ``prefix``: an existing node raises
    :class:`~altarr.errors.ExistsError`, or with ``overwrite`` everything under ``prefix`` is deleted."""
    if node_exists(store, prefix):
        if not overwrite:
            raise ExistsError(
                "a node already exists here (pass overwrite=True to replace it)", key=prefix or "/"
            )
        store.delete_prefix(prefix)


class Group(StoredNode):
    """A group node: children are datasets or groups, addressed by ``/``-separated relative paths.

    A group opened read-only whose metadata is consolidated (Zarr v3 ``consolidated_metadata`` in its
    ``zarr.json``, Zarr v2 ``.zmetadata``) opens its children from that snapshot, without a request."""

    def __init__(
        self,
        store: Store,
        path: str,
        fmt: Format,
        *,
        mode: str = "r",
        consolidated: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(store, path, fmt, mode)
        #: child metadata documents by path relative to this group (see :func:`consolidated_children`)
        self._consolidated = consolidated if self.read_only else None

    def __repr__(self) -> str:
        return f"<altarr.Group {self.format} {self.path or '/'!r}>"

    def _child(self, name: str) -> str:
        name = name.strip("/")
        if not name:
            raise MetadataError("empty child name", key=self.path)
        return join_key(self.path, name)

    def __getitem__(self, name: str) -> Dataset | Group:
        """The child array or group at ``name`` (a ``/``-separated path below this group); a missing one
        raises :class:`~altarr.errors.ChildNotFoundError`, a ``KeyError`` (and a ``FileNotFoundError``)."""
        node = self._from_consolidated(name.strip("/"))
        if node is not None:
            return node
        try:
            path = self._child(name)  # the child in its own format (it may differ from this group's)
            return _node_object(self.store, path, open_node(self.store, path), self.mode)
        except NodeNotFoundError as e:
            raise ChildNotFoundError(f"no array or group {name!r} in this group", key=e.key) from e

    def get(self, name: str, default: Any = None) -> Dataset | Group | Any:
        """The child at ``name``, or ``default`` when there is none."""
        try:
            return self[name]
        except ChildNotFoundError:
            return default

    def _from_consolidated(self, rel: str) -> Dataset | Group | None:
        """The child ``rel`` built from the consolidated metadata (no request), or ``None``."""
        cm = self._consolidated
        if not cm or not rel:
            return None
        path = self._child(rel)
        node = self._format.child_from_consolidated(cm, rel, path)
        if node is None:
            return None
        below = {k[len(rel) + 1 :]: v for k, v in cm.items() if k.startswith(rel + "/")}
        return _node_object(self.store, path, node, self.mode, below)

    def __contains__(self, name: str) -> bool:
        return node_exists(self.store, self._child(name))

    def keys(self) -> Iterator[str]:
        """Names of the direct children that are datasets or groups, sorted: from the consolidated
        metadata when the group was opened with it (no listing, which HTTP cannot do), else from a
        listing of the store."""
        cm = self._consolidated
        if cm:
            names = sorted({k.split("/", 1)[0] for k in cm})
            yield from (n for n in names if self._format.child_from_consolidated(cm, n, self._child(n)))
            return
        _, folders = self.store.list_dir(self.path)
        for name in sorted(folders):
            if name in self:
                yield name

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        """The number of direct children (zarr-python's ``len(group)``)."""
        return sum(1 for _ in self.keys())

    def __delitem__(self, name: str) -> None:
        """Delete the child ``name`` and everything below it (``del group["raw"]``)."""
        self._check_writable()
        path = self._child(name)
        if not node_exists(self.store, path):
            raise ChildNotFoundError(f"no array or group {name!r} in this group", key=path)
        self.store.delete_prefix(path)
        refresh_consolidated(self.store, path, self._format, "deleted")

    def members(self, max_depth: int | None = 0) -> tuple[tuple[str, Dataset | Group], ...]:
        """``(name, node)`` of every child, as zarr-python's ``members``: the direct children with
        ``max_depth=0``, ``max_depth`` levels further below with a number, the whole hierarchy with
        ``None``; deeper names are paths relative to this group (``"raw/volume"``).

        Example:
            >>> import altarr as aa
            >>> g = aa.create_group("memory://doc-members-g")
            >>> _ = g.create_array("raw/volume", shape=(4,), dtype="u1")
            >>> tuple(name for name, _ in g.members(max_depth=None))
            ('raw', 'raw/volume')
        """
        out: list[tuple[str, Dataset | Group]] = []
        for name, node in self._children():
            out.append((name, node))
            if isinstance(node, Group) and (max_depth is None or max_depth > 0):
                deeper = node.members(None if max_depth is None else max_depth - 1)
                out.extend((f"{name}/{rel}", child) for rel, child in deeper)
        return tuple(out)

    def nmembers(self, max_depth: int | None = 0) -> int:
        """``len(self.members(max_depth))``."""
        return len(self.members(max_depth))

    def _children(self) -> Iterator[tuple[str, Dataset | Group]]:
        return ((name, self[name]) for name in self.keys())

    def arrays(self) -> Iterator[tuple[str, Dataset]]:
        """``(name, dataset)`` of the direct children that are arrays."""
        return ((name, node) for name, node in self._children() if isinstance(node, Dataset))

    def groups(self) -> Iterator[tuple[str, Group]]:
        """``(name, group)`` of the direct children that are groups."""
        return ((name, node) for name, node in self._children() if isinstance(node, Group))

    def array_keys(self) -> Iterator[str]:
        """Names of the direct children that are arrays."""
        return (name for name, _ in self.arrays())

    def group_keys(self) -> Iterator[str]:
        """Names of the direct children that are groups."""
        return (name for name, _ in self.groups())

    def array_values(self) -> Iterator[Dataset]:
        """The direct children that are arrays."""
        return (node for _, node in self.arrays())

    def group_values(self) -> Iterator[Group]:
        """The direct children that are groups."""
        return (node for _, node in self.groups())

    def create_group(
        self, name: str, attributes: dict[str, Any] | None = None, *, overwrite: bool = False
    ) -> Group:
        """Create a child group (and any missing intermediate groups). An existing node there raises
        :class:`~altarr.errors.ExistsError` (a ``FileExistsError``), as zarr-python raises, unless
        ``overwrite=True``, which deletes it first."""
        self._check_writable()
        path = self._child(name)
        clear_node(self.store, path, overwrite)
        self._ensure_parents(path)
        self._format.create_group(self.store, path, attributes)
        refresh_consolidated(self.store, path, self._format, "created")
        return Group(self.store, path, self._format, mode=self.mode)

    def require_group(self, name: str) -> Group:
        """The child group ``name``, created when missing; ``TypeError`` when an array is there (as in
        zarr-python)."""
        node = self.get(name)
        if node is None:
            return self.create_group(name)
        if not isinstance(node, Group):
            raise NodeTypeError(f"{name!r} exists and is an array, not a group", key=self._child(name))
        return node

    def create_dataset(self, name: str, **kwargs: Any) -> Dataset:
        """Create a child dataset in this group's format; keyword arguments as
        :func:`altarr.create_dataset` (``shape``/``dtype`` or ``data``, ``chunks``, ``shards``,
        ``compressor`` or ``compressors``, ...)."""
        self._check_writable()
        path = self._child(name)
        self._ensure_parents(path)
        kwargs.setdefault("format", self.format)
        kwargs.pop("storage_options", None)  # the group's store is already open
        return create_dataset(self.store, path=path, **kwargs)

    def create_array(self, name: str, **kwargs: Any) -> Dataset:
        """zarr-python 3's name for :meth:`create_dataset` (the same arguments)."""
        return self.create_dataset(name, **kwargs)

    def require_array(
        self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False, **kwargs: Any
    ) -> Dataset:
        """The child array ``name`` when it exists with this ``shape`` (and a ``dtype`` its values cast to
        safely, or exactly with ``exact=True``), else created with these arguments; an existing node
        that does not match raises ``TypeError``, as zarr-python's ``require_array`` does."""
        node = self.get(name)
        if node is None:
            return self.create_dataset(name, shape=shape, dtype=dtype, **kwargs)
        key = self._child(name)
        if not isinstance(node, Dataset):
            raise NodeTypeError(f"{name!r} exists and is a group, not an array", key=key)
        want = (int(shape),) if isinstance(shape, int) else tuple(shape)
        if node.shape != want:
            raise NodeTypeError(f"{name!r} exists with shape {node.shape}, not {want}", key=key)
        if dtype is not None:
            dt = np.dtype(dtype)
            if (exact and node.dtype != dt) or not np.can_cast(node.dtype, dt):
                raise NodeTypeError(f"{name!r} exists with dtype {node.dtype}, not {dt}", key=key)
        return node

    require_dataset = require_array

    def tree(self, level: int | None = None) -> Tree:
        """The hierarchy below this group as a printable tree (arrays with their shape and dtype), as
        zarr-python's ``tree()``; ``level`` limits the depth.

        >>> import altarr as aa
        >>> g = aa.create_group("memory://doc-tree")
        >>> _ = g.create_array("raw/volume", shape=(4, 4), dtype="u1")
        >>> _ = g.create_group("labels")
        >>> g.tree()
        /
        ├── labels
        └── raw
            └── volume (4, 4) uint8
        """
        return Tree(self, level)

    def _info_fields(self) -> dict[str, Any]:
        return {
            "Name": self.name,
            "Type": "Group",
            "Format": self._format.title,
            "Read-only": self.read_only,
            "Store type": type(self.store).__name__,
        }

    def info_complete(self) -> Info:
        """:attr:`info` and the number of members, arrays and groups below (lists the hierarchy)."""
        members = self.members(max_depth=None)
        arrays = sum(isinstance(n, Dataset) for _, n in members)
        more = {"No. members": len(members), "No. arrays": arrays, "No. groups": len(members) - arrays}
        return Info({**self._info_fields(), **more})

    def _ensure_parents(self, path: str) -> None:
        parts = path.split("/")
        for i in range(len(self.path.split("/")) if self.path else 0, len(parts) - 1):
            parent = "/".join(parts[: i + 1])
            if not node_exists(self.store, parent):
                self._format.create_group(self.store, parent, None)


class Tree:
    """A group's hierarchy, printed as lines (the text of :meth:`Group.tree`)."""

    def __init__(self, group: Group, level: int | None) -> None:
        self.lines = [group.name if group.path else "/"]
        self._walk(group, "", level)

    def _walk(self, group: Group, indent: str, level: int | None) -> None:
        children = list(group._children())
        for i, (name, node) in enumerate(children):
            last = i == len(children) - 1
            label = f"{name} {node.shape} {node.dtype}" if isinstance(node, Dataset) else name
            self.lines.append(f"{indent}{'└── ' if last else '├── '}{label}")
            if isinstance(node, Group) and (level is None or level > 1):
                self._walk(node, indent + ("    " if last else "│   "), None if level is None else level - 1)

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    __str__ = __repr__
