"""Groups: hierarchy and attributes, for every format.

Example:
    >>> import altarr as aa
    >>> root = aa.create_group("memory://doc-group", attributes={"title": "demo"})
    >>> ds = root.create_dataset("raw/volume", shape=(4, 4), dtype="uint8", chunks=(2, 2))
    >>> sorted(root.keys()), root.attrs["title"]
    (['raw'], 'demo')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import AltarrError, ExistsError, MetadataError, ReadOnlyError
from ..formats import detect_format, get_format, open_node
from ..formats.base import Format, Node, join_key
from .dataset import Attributes, Dataset

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["Group", "node_exists", "open_any", "new_dataset"]


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
        return Dataset(store, prefix, node.spec, node.format, mode=mode)
    return Group(store, prefix, node.format, mode=mode, consolidated=consolidated)


def open_any(store: Store, prefix: str, mode: str) -> Dataset | Group:
    """Open whatever node is at ``prefix``, in its own format (a child's may differ from its parent's).

    >>> import altarr as aa
    >>> g = aa.create_group("memory://doc-open-any", format="zarr2")
    >>> open_any(g.store, g.path, "r")
    <altarr.Group zarr2 '/'>
    """
    return _node_object(store, prefix, open_node(store, prefix), mode)


def new_dataset(
    store: Store,
    prefix: str,
    *,
    shape: Any,
    dtype: Any,
    chunks: Any,
    format: str = "zarr3",
    overwrite: bool = False,
    write_empty_chunks: bool = False,
    **create: Any,
) -> Dataset:
    """Create an array at ``prefix`` of ``store`` and return it opened for writing: an existing node raises
    :class:`~altarr.errors.ExistsError`, or is deleted first with ``overwrite``. ``create`` are the
    further arguments of :meth:`~altarr.formats.base.Format.create_array` (``shards``, ``compressor``,
    format options...). :func:`altarr.create_dataset` and :meth:`Group.create_dataset` both end here.

    >>> from altarr.stores import MemoryStore
    >>> new_dataset(MemoryStore(), "a", shape=5, dtype="u1", chunks=2).chunks
    (2,)
    """
    if isinstance(chunks, int):
        chunks = (chunks,) * len(tuple(shape) if not isinstance(shape, int) else (shape,))
    if isinstance(shape, int):
        shape = (shape,)
    clear_node(store, prefix, overwrite)
    fmt = get_format(format)
    spec = fmt.create_array(store, prefix, shape=tuple(shape), dtype=dtype, chunks=tuple(chunks), **create)
    return Dataset(store, prefix, spec, fmt, mode="r+", write_empty_chunks=write_empty_chunks)


def clear_node(store: Store, prefix: str, overwrite: bool) -> None:
    """Make room for a new node at ``prefix``: an existing node raises
    :class:`~altarr.errors.ExistsError`, or with ``overwrite`` everything under ``prefix`` is deleted."""
    if node_exists(store, prefix):
        if not overwrite:
            raise ExistsError(
                "a node already exists here (pass overwrite=True to replace it)", key=prefix or "/"
            )
        store.delete_prefix(prefix)


class Group:
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
        self.store, self.path, self._format, self.mode = store, path, fmt, mode
        self.read_only = mode == "r"
        self.attrs = Attributes(store, path, fmt, self.read_only)
        #: child metadata documents by path relative to this group (see :func:`consolidated_children`)
        self._consolidated = consolidated if self.read_only else None

    @property
    def format(self) -> str:
        return self._format.name

    def __repr__(self) -> str:
        return f"<altarr.Group {self.format} {self.path or '/'!r}>"

    def _child(self, name: str) -> str:
        name = name.strip("/")
        if not name:
            raise MetadataError("empty child name", key=self.path)
        return join_key(self.path, name)

    def __getitem__(self, name: str) -> Dataset | Group:
        node = self._from_consolidated(name.strip("/"))
        if node is not None:
            return node
        return open_any(self.store, self._child(name), self.mode)

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
        """Names of the direct children that are datasets or groups."""
        _, folders = self.store.list_dir(self.path)
        for name in sorted(folders):
            if name in self:
                yield name

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def arrays(self) -> Iterator[tuple[str, Dataset]]:
        for name in self.keys():
            node = self[name]
            if isinstance(node, Dataset):
                yield name, node

    def groups(self) -> Iterator[tuple[str, Group]]:
        for name in self.keys():
            node = self[name]
            if isinstance(node, Group):
                yield name, node

    def create_group(self, name: str, attributes: dict[str, Any] | None = None) -> Group:
        """Create a child group (and any missing intermediate groups)."""
        if self.read_only:
            raise ReadOnlyError("group was opened read-only", key=self.path)
        path = self._child(name)
        self._ensure_parents(path)
        self._format.create_group(self.store, path, attributes)
        return Group(self.store, path, self._format, mode=self.mode)

    def require_group(self, name: str) -> Group:
        if name in self:
            node = self[name]
            if isinstance(node, Group):
                return node
            raise MetadataError(f"{name!r} exists and is not a group", key=self._child(name))
        return self.create_group(name)

    def create_dataset(self, name: str, **kwargs: Any) -> Dataset:
        """Create a child dataset in this group's format; keyword arguments as :func:`create_dataset`."""
        if self.read_only:
            raise ReadOnlyError("group was opened read-only", key=self.path)
        path = self._child(name)
        self._ensure_parents(path)
        kwargs.setdefault("format", self.format)
        kwargs.pop("storage_options", None)  # the group's store is already open
        return new_dataset(self.store, path, **kwargs)

    def _ensure_parents(self, path: str) -> None:
        parts = path.split("/")
        for i in range(len(self.path.split("/")) if self.path else 0, len(parts) - 1):
            parent = "/".join(parts[: i + 1])
            if not node_exists(self.store, parent):
                self._format.create_group(self.store, parent, None)
