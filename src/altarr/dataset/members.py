"""What arrays and groups have beside their values: :class:`Attributes`, what both share
(:class:`StoredNode`: store, path, format, mode, zarr-python's ``name``, ``basename``, ``info``), and
:class:`Info`, the printable summary of ``info`` (the table of zarr-python's members is in
docs/zarr-python.md)."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from ..errors import ReadOnlyError
from .consolidated import refresh_consolidated
from .locks import run_exclusive

if TYPE_CHECKING:
    from ..formats.base import DatasetSpec, Format
    from ..stores.base import Store

__all__ = ["Attributes", "StoredNode", "Info", "byte_size", "inner_chain"]


def inner_chain(spec: DatasetSpec) -> Any:
    """The codec chain that encodes one chunk: the chain of the innermost shard level for a sharded
    array (``sharding_indexed`` holds it), else the array's own."""
    chain = spec.codecs
    while hasattr(chain.array_bytes, "codecs") and hasattr(chain.array_bytes.codecs, "array_bytes"):
        chain = chain.array_bytes.codecs
    return chain


class Info:
    """A printable summary: one ``name : value`` line per field, as zarr-python prints ``info``; the
    fields are also a dict (``info.fields``).

    >>> Info({"Type": "Array", "Shape": (2, 3)})
    Type  : Array
    Shape : (2, 3)
    """

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __repr__(self) -> str:
        width = max(len(k) for k in self.fields)
        return "\n".join(f"{k.ljust(width)} : {v}" for k, v in self.fields.items())

    __str__ = __repr__

    def _repr_markdown_(self) -> str:  # notebooks
        return "\n".join(f"- **{k}**: `{v}`" for k, v in self.fields.items())


def byte_size(n: int) -> str:
    """``40000 (39.1K)``, as zarr-python prints a byte count."""
    value, unit = float(n), ""
    for bigger in ("K", "M", "G", "T"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{n} ({value:.1f}{unit})" if unit else str(n)


class StoredNode:
    """What an array and a group share: store, path, format, mode, attributes, zarr-python's ``name``,
    ``basename`` and ``info`` (the fields of :meth:`_info_fields`)."""

    def __init__(self, store: Store, path: str, fmt: Format, mode: str, attributes: dict | None = None):
        self.store, self.path, self._format, self.mode = store, path, fmt, mode
        self.read_only = mode == "r"
        self.attrs = Attributes(store, path, fmt, self.read_only, attributes)

    @property
    def format(self) -> str:
        """The format: ``"zarr3"``, ``"zarr2"`` or ``"n5"``."""
        return self._format.name

    @property
    def name(self) -> str:
        """The path from the store's root, with a leading ``/`` (zarr-python's ``name``)."""
        return "/" + self.path

    @property
    def basename(self) -> str:
        """The last part of :attr:`name`."""
        return self.path.rsplit("/", 1)[-1]

    def _info_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def info(self) -> Info:
        """A printable summary (no request), as zarr-python's ``info``: type, format, and for an array
        its dtype, fill value, shapes, codecs and size."""
        return Info(self._info_fields())

    def _check_writable(self) -> None:
        if self.read_only:
            kind = type(self).__name__.lower()
            raise ReadOnlyError(
                f"{kind} was opened read-only (mode='r'); open it with mode='r+'", key=self.path
            )


class Attributes(MutableMapping):
    """User attributes of a node, read from and written through to its metadata.

    Every mutation re-reads the metadata document, applies just the keys it changes and writes the
    document back, under the document's lock (local files) or conditioned on the version it read
    (S3), so changes made meanwhile through another handle or process are kept; use :meth:`update`
    for several keys at once (one read and one write).

    >>> import altarr as aa
    >>> g1 = aa.create_group("memory://doc-attrs-merge"); g2 = aa.open_group("memory://doc-attrs-merge", mode="r+")
    >>> g1.attrs["x"] = 1; g2.attrs["y"] = 2
    >>> g1.attrs.refresh(); dict(g1.attrs)
    {'x': 1, 'y': 2}
    """

    def __init__(self, store: Store, prefix: str, fmt: Format, read_only: bool, initial: dict | None = None):
        self._store, self._prefix, self._fmt, self._read_only = store, prefix, fmt, read_only
        self._cache = dict(initial) if initial is not None else None

    def _load(self) -> dict[str, Any]:
        if self._cache is None:
            self._cache = dict(self._fmt.read_attributes(self._store, self._prefix))
        return self._cache

    def _change(self, changes: dict[str, Any], removals: tuple[str, ...] = ()) -> None:
        """Re-read, apply ``changes`` and ``removals``, write: one read-modify-write of the document."""
        if self._read_only:
            raise ReadOnlyError("attributes of a node opened read-only cannot be changed", key=self._prefix)
        doc = self._fmt.attributes_document
        key = f"{self._prefix}/{doc}" if self._prefix and doc else self._prefix or doc

        def merge() -> dict[str, Any]:
            attrs = dict(self._fmt.read_attributes(self._store, self._prefix))
            for k in removals:
                if k not in attrs:
                    raise KeyError(k)
                del attrs[k]
            attrs.update(changes)
            self._fmt.write_attributes(self._store, self._prefix, attrs)
            return attrs

        self._cache = run_exclusive(self._store, [key], merge)
        refresh_consolidated(self._store, self._prefix, self._fmt, "changed")

    def __getitem__(self, k: str) -> Any:
        return self._load()[k]

    def __setitem__(self, k: str, v: Any) -> None:
        self._change({k: v})

    def __delitem__(self, k: str) -> None:
        self._change({}, (k,))

    def update(self, *args: Any, **kwargs: Any) -> None:  # one read and one write for many keys
        self._change(dict(*args, **kwargs))

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def asdict(self) -> dict[str, Any]:
        return dict(self._load())

    def refresh(self) -> None:
        self._cache = None

    def __repr__(self) -> str:
        return f"Attributes({self._load()!r})"
