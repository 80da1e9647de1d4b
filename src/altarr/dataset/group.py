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

from ..errors import AltarrError, MetadataError, ReadOnlyError
from ..formats import detect_format
from ..formats.base import Format, join_key
from .dataset import Attributes, Dataset

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["Group", "node_exists"]


def node_exists(store: Store, prefix: str) -> bool:
    """Whether an array or group of any format is at ``prefix``."""
    try:
        detect_format(store, prefix)
    except AltarrError:
        return False
    return True


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
        from .api import _open_node

        node = self._from_consolidated(name.strip("/"))
        if node is not None:
            return node
        return _open_node(self.store, self._child(name), self.mode, self._format)

    def _from_consolidated(self, rel: str) -> Dataset | Group | None:
        """The child ``rel`` built from the consolidated metadata (no request), or ``None``."""
        cm = self._consolidated
        if not cm or not rel:
            return None
        from ..formats import FORMATS

        path = self._child(rel)
        below = {k[len(rel) + 1 :]: v for k, v in cm.items() if k.startswith(rel + "/")}
        if self.format == "zarr3":
            doc = cm.get(rel)
            if not isinstance(doc, dict):
                return None
            z3 = FORMATS["zarr3"]
            kind = z3.kind_of(doc, join_key(path, "zarr.json"))  # type: ignore[attr-defined]
            if kind == "array":
                spec = z3.spec_from_documents({"zarr.json": doc}, path)  # type: ignore[attr-defined]
                return Dataset(self.store, path, spec, z3, mode=self.mode)
            return Group(self.store, path, z3, mode=self.mode, consolidated=below)
        if self.format == "zarr2":
            z2 = FORMATS["zarr2"]
            if isinstance(cm.get(f"{rel}/.zarray"), dict):
                docs = {".zarray": cm[f"{rel}/.zarray"], ".zattrs": cm.get(f"{rel}/.zattrs")}
                spec = z2.spec_from_documents(docs, path)  # type: ignore[attr-defined]
                return Dataset(self.store, path, spec, z2, mode=self.mode)
            if isinstance(cm.get(f"{rel}/.zgroup"), dict):
                return Group(self.store, path, z2, mode=self.mode, consolidated=below)
        return None

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
        from .api import create_dataset

        if self.read_only:
            raise ReadOnlyError("group was opened read-only", key=self.path)
        path = self._child(name)
        self._ensure_parents(path)
        kwargs.setdefault("format", self.format)
        return create_dataset(self.store, path=path, **kwargs)

    def _ensure_parents(self, path: str) -> None:
        parts = path.split("/")
        for i in range(len(self.path.split("/")) if self.path else 0, len(parts) - 1):
            parent = "/".join(parts[: i + 1])
            if not node_exists(self.store, parent):
                self._format.create_group(self.store, parent, None)


def consolidated_children(fmt: str, raw: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """The consolidated metadata of a group from its fetched documents (``Node.raw``): Zarr v3's
    ``consolidated_metadata.metadata`` (child path -> ``zarr.json`` document), Zarr v2's ``.zmetadata``
    ``metadata`` (child key -> document); ``None`` where there is none."""
    from ..formats._common import parse_json

    if fmt == "zarr3" and raw.get("zarr.json") is not None:
        doc = parse_json(raw["zarr.json"], join_key(prefix, "zarr.json"))
        cm = doc.get("consolidated_metadata") if isinstance(doc, dict) else None
        meta = cm.get("metadata") if isinstance(cm, dict) else None
        return meta if isinstance(meta, dict) else None
    if fmt == "zarr2" and raw.get(".zmetadata") is not None:
        doc = parse_json(raw[".zmetadata"], join_key(prefix, ".zmetadata"))
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if doc.get("zarr_consolidated_format") == 1 and isinstance(meta, dict):
            return meta
    return None
