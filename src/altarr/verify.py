"""``altarr.verify``: check a stored dataset or group end to end and report every problem found.

:func:`verify` walks every node under a path (N5, Zarr v2 and Zarr v3, any mix), and for each one

* parses its metadata documents (``zarr.json``, ``.zarray``/``.zattrs``/``.zgroup``, ``attributes.json``)
  and its attributes;
* reads every stored object of every array: for a sharded array it decodes each shard index (at every
  nesting level), verifies its checksum, and checks every entry (inside the object's data region, not
  overlapping another entry or the index, no half-empty "sentinel" pairs); then it decodes every chunk,
  which verifies chunk checksums and sizes;
* lists the temporary files that interrupted writes left behind (``*.altarr-tmp``), and removes them
  when ``repair=True``.

It never stops at the first problem: each is a :class:`Problem` naming the store key, the kind of
problem, a message and (where known) the chunk coordinates. Memory stays bounded by one stored object
(a shard is read whole, then its chunks are decoded one at a time).

Example:
    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-verify", shape=(4, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    >>> ds[...] = np.arange(16, dtype="u1").reshape(4, 4)
    >>> report = aa.verify("memory://doc-verify")
    >>> report.ok, report.checked["chunks"]
    (True, 4)
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import AltarrError, ChecksumError

if TYPE_CHECKING:
    from .dataset.dataset import Dataset
    from .stores.base import Store

__all__ = ["verify", "VerifyReport", "Problem", "TEMP_SUFFIX", "METADATA_NAMES"]

#: The suffix of the temporary files a local write creates before its rename (see ``stores/local.py``).
TEMP_SUFFIX = ".altarr-tmp"

#: Names of the metadata documents of every format (a folder holding one of them is a node).
METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata", "attributes.json")
_NODE_NAMES = ("zarr.json", ".zarray", ".zgroup", "attributes.json")

_EMPTY = 2**64 - 1


@dataclass
class Problem:
    """One problem found by :func:`verify`.

    ``kind`` is one of ``"metadata"``, ``"attributes"``, ``"read"``, ``"truncated"``,
    ``"index-checksum"``, ``"index"``, ``"index-bounds"``, ``"index-overlap"``, ``"index-sentinel"``,
    ``"checksum"``, ``"chunk"``, ``"unexpected-key"`` (an object in an array's folder that is none of its
    chunks or shards), ``"unexpected"`` (an error that is not an ``altarr.errors`` one).
    """

    key: str
    kind: str
    message: str
    chunk: tuple[int, ...] | None = None

    def __str__(self) -> str:
        where = self.key + ("" if self.chunk is None else f" chunk {self.chunk}")
        return f"{where}: [{self.kind}] {self.message}"


@dataclass
class VerifyReport:
    """What :func:`verify` found. ``ok`` is true when there are no problems (stale temporary files are
    listed separately and do not count as problems: they are the normal leftovers of killed writers)."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    stale_temp_files: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=lambda: {"metadata": 0, "shards": 0, "chunks": 0})

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, key: str, kind: str, message: str, chunk: Any = None) -> None:
        chunk = None if chunk is None else tuple(int(c) for c in chunk)
        self.problems.append(Problem(key, kind, message, chunk))

    def __str__(self) -> str:
        c = self.checked
        lines = [
            f"altarr verify {self.path}: {'OK' if self.ok else f'{len(self.problems)} problem(s)'} "
            f"({c['metadata']} metadata documents, {c['shards']} shards, {c['chunks']} chunks checked)"
        ]
        lines += [f"  {p}" for p in self.problems]
        if self.stale_temp_files:
            verb = "removed" if self.removed else "found"
            lines.append(f"  {len(self.stale_temp_files)} stale temporary file(s) {verb}:")
            lines += [f"    {k}" for k in self.stale_temp_files]
        return "\n".join(lines)


def verify(path_or_url: str | Store, *, repair: bool = False, **storage_options: Any) -> VerifyReport:
    """Check the dataset or group at ``path_or_url`` (a path, URL or :class:`~altarr.stores.Store`;
    ``storage_options`` as for :func:`altarr.open_dataset`) and return a :class:`VerifyReport`.

    With ``repair=True`` the stale temporary files are removed (``report.removed``); nothing else is
    changed.

    >>> import altarr as aa
    >>> _ = aa.create_dataset("memory://doc-verify2", shape=(3,), dtype="f4", chunks=(2,))
    >>> print(aa.verify("memory://doc-verify2"))
    altarr verify memory://doc-verify2: OK (1 metadata documents, 0 shards, 0 chunks checked)
    """
    from .stores import store_from_url

    name = path_or_url if isinstance(path_or_url, str) else repr(path_or_url)
    report = VerifyReport(str(name))
    try:
        store, prefix = store_from_url(path_or_url, mode="r+" if repair else "r", **storage_options)
    except AltarrError as e:
        report.add(str(name), "read", f"cannot open the store: {e}")
        return report
    _check_temp_files(store, prefix, report, repair)
    try:
        keys = sorted(store.list(prefix))
    except AltarrError as e:
        report.add(prefix or "/", "read", f"cannot list the store: {e}")
        return report
    keys = [k for k in keys if not k.endswith(TEMP_SUFFIX)]
    nodes = _node_prefixes(keys, prefix)
    if not nodes:
        report.add(prefix or "/", "metadata", "no N5, Zarr v2 or Zarr v3 metadata found")
        return report
    for node in nodes:
        try:
            _check_node(store, node, nodes, keys, report)
        except Exception as e:  # noqa: BLE001 - verify reports, it does not stop
            report.add(node or "/", "unexpected", f"{type(e).__name__}: {e}")
    return report


# --- nodes and metadata -------------------------------------------------------------------------------
def _parent(key: str) -> str:
    return key.rpartition("/")[0]


def _node_prefixes(keys: list[str], prefix: str) -> list[str]:
    found = {_parent(k) for k in keys if k.rpartition("/")[2] in _NODE_NAMES}
    return sorted(p for p in found if not prefix or p == prefix or p.startswith(prefix + "/"))


def _check_node(store: Store, node: str, nodes: list[str], keys: list[str], report: VerifyReport) -> None:
    from .dataset.dataset import Dataset
    from .formats import open_node

    docs = [k for k in keys if _parent(k) == node and k.rpartition("/")[2] in METADATA_NAMES]
    meta_key = docs[0] if docs else (node or "/")
    try:
        opened = open_node(store, node)
    except AltarrError as e:
        report.add(e.key or meta_key, "metadata", e.message)
        return
    except Exception as e:  # noqa: BLE001 - verify reports, it does not stop
        report.add(meta_key, "unexpected", f"{type(e).__name__}: {e}")
        return
    report.checked["metadata"] += len(docs)
    try:
        opened.format.read_attributes(store, node)
    except AltarrError as e:
        report.add(e.key or meta_key, "attributes", e.message)
    except Exception as e:  # noqa: BLE001
        report.add(meta_key, "unexpected", f"attributes: {type(e).__name__}: {e}")
    if opened.kind != "array":
        return
    try:
        ds = Dataset(store, node, opened.spec, opened.format, mode="r")
    except AltarrError as e:
        report.add(e.key or meta_key, "metadata", e.message)
        return
    # the data keys of this array: under its prefix, not metadata, not inside a child node
    inner = [n for n in nodes if n != node and (not node or n.startswith(node + "/"))]
    base = f"{node}/" if node else ""
    data_keys = {
        k
        for k in keys
        if k.startswith(base)
        and k.rpartition("/")[2] not in METADATA_NAMES
        and not any(k.startswith(n + "/") for n in inner)
    }
    _check_array(ds, data_keys, report)


# --- arrays -------------------------------------------------------------------------------------------
def _positions(ds: Dataset, data_keys: set[str]) -> tuple[list[tuple[str, tuple[int, ...]]], list[str]]:
    """Stored objects of ``ds`` with their outer grid positions, and the keys that name no position.

    Each key is parsed (its integers, in order or reversed, as N5 writes them) and accepted when the
    dataset's own key function gives it back for that position inside the grid: the cost follows the
    stored objects, not the grid (which may be astronomically large and sparse)."""
    import re

    acc = ds._access
    top = acc.grid.nlevels - 1
    grid = acc.grid.grid_shape(top)
    base = f"{ds.path}/" if ds.path else ""
    found, unknown = [], []
    for k in sorted(data_keys):
        nums = [int(x) for x in re.findall(r"\d+", k[len(base) :])]
        pos = None
        for cand in (
            tuple(nums[-len(grid) :]) if grid else (),
            tuple(reversed(nums[-len(grid) :])) if grid else (),
        ):
            if len(cand) == len(grid) and all(0 <= c < n for c, n in zip(cand, grid, strict=True)):
                if acc.key(cand) == k:
                    pos = cand
                    break
        if pos is None:
            unknown.append(k)
        else:
            found.append((k, pos))
    return found, unknown


def _check_array(ds: Dataset, data_keys: set[str], report: VerifyReport) -> None:
    acc = ds._access
    top = acc.grid.nlevels - 1
    found, unknown = _positions(ds, data_keys)
    for key in unknown:
        if key.rpartition("/")[2].startswith("."):
            continue  # hidden files (.DS_Store, editors' files) are no chunk of any format: not reported
        report.add(key, "unexpected-key", "an object inside the array that is no chunk or shard of its grid")
    for key, pos in found:
        try:
            data = acc.store.get(key)
        except AltarrError as e:
            report.add(key, "read", e.message)
            continue
        if data is None:  # removed since the listing
            continue
        mv = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        if top == 0:
            _check_chunk(acc, mv, pos, key, report)
        else:
            report.checked["shards"] += 1
            _check_shard(acc, mv, top, pos, key, report)


def _check_chunk(acc: Any, data: Any, chunk: tuple[int, ...], key: str, report: VerifyReport) -> None:
    report.checked["chunks"] += 1
    try:
        acc.decode_chunk(data, chunk, key)
    except ChecksumError as e:
        report.add(key, "checksum", e.message, chunk)
    except AltarrError as e:
        report.add(key, "chunk", e.message, chunk)
    except Exception as e:  # noqa: BLE001
        report.add(key, "unexpected", f"{type(e).__name__}: {e}", chunk)


def _check_shard(
    acc: Any, mv: memoryview, level: int, pos: tuple[int, ...], key: str, report: VerifyReport
) -> None:
    """Check the level-``level`` block at grid position ``pos`` whose bytes are ``mv``, then its children."""
    grid = acc.grid
    sc = acc.sharding[level]
    cps = grid.per_block(level)
    first = tuple(p * k for p, k in zip(pos, cps, strict=True))  # level-(level-1) position of entry 0
    where = tuple(int(p) for p in grid.chunks_in(pos, level)[0]) if level else pos
    n_idx = sc.index_nbytes(cps)
    size = len(mv)
    if size < n_idx:
        report.add(key, "truncated", f"{size} bytes, shorter than the {n_idx}-byte shard index", where)
        return
    start_index = sc.index_location == "start"
    raw = mv[:n_idx] if start_index else mv[size - n_idx :]
    try:
        index = np.array(sc.index_codecs.decode(raw, (*cps, 2), np.dtype(np.uint64)), dtype=np.uint64)
    except ChecksumError as e:
        report.add(key, "index-checksum", f"shard index: {e.message}", where)
        return
    except AltarrError as e:
        report.add(key, "index", f"shard index: {e.message}", where)
        return
    lo, hi = (n_idx, size) if start_index else (0, size - n_idx)
    spans: list[tuple[int, int, tuple[int, ...]]] = []
    for rel in np.ndindex(*cps):
        off, nb = (int(v) for v in index[rel])
        child = tuple(f + r for f, r in zip(first, rel, strict=True))
        label = child if level == 1 else tuple(int(c) for c in grid.chunks_in(child, level - 1)[0])
        if off == _EMPTY and nb == _EMPTY:
            continue
        if off == _EMPTY or nb == _EMPTY:
            report.add(
                key,
                "index-sentinel",
                f"entry {rel} ({off}, {nb}) has one word 2**64-1: neither empty nor a valid range",
                label,
            )
            continue
        if off < lo or off + nb > hi:
            report.add(
                key,
                "index-bounds",
                f"entry {rel} points at bytes [{off}, {off + nb}), outside the data region [{lo}, {hi})",
                label,
            )
            continue
        spans.append((off, off + nb, label))
    spans.sort()
    for (s0, e0, c0), (s1, e1, c1) in zip(spans, spans[1:], strict=False):
        if s1 < e0:
            report.add(
                key,
                "index-overlap",
                f"bytes [{s1}, {e1}) of chunk {c1} overlap [{s0}, {e0}) of chunk {c0}",
                c1,
            )
    for off, end, label in spans:
        child_level = level - 1
        # the child's own grid position at its level
        child = grid.position(label, child_level)
        if any(c >= n for c, n in zip(child, grid.grid_shape(child_level), strict=True)):
            continue  # a padded position past the array's edge: never read
        if child_level == 0:
            _check_chunk(acc, mv[off:end], child, key, report)
        else:
            _check_shard(acc, mv[off:end], child_level, child, key, report)


# --- temporary files ----------------------------------------------------------------------------------
def _check_temp_files(store: Store, prefix: str, report: VerifyReport, repair: bool) -> None:
    """List (and with ``repair`` remove) the temporary files left by interrupted writes.

    Every store lists and removes its own (:meth:`~altarr.stores.Store.list_temporary`,
    :meth:`~altarr.stores.Store.remove_temporary`): local stores find the files on disk, which their
    listing hides."""
    try:
        temps = sorted(store.list_temporary(prefix))
    except (AltarrError, OSError) as e:
        report.add(prefix or "/", "read", f"cannot list temporary files: {e}")
        return
    report.stale_temp_files = temps
    if not repair:
        return
    for k in temps:
        try:
            report.removed.extend(store.remove_temporary([k]))
        except (AltarrError, OSError) as e:
            report.add(k, "read", f"cannot remove the temporary file: {e}")


class _CallableModule(types.ModuleType):
    """This module, callable: ``altarr.verify(path)`` runs :func:`verify` while ``altarr.verify.VerifyReport``
    and ``from altarr.verify import verify`` keep working."""

    def __call__(
        self, path_or_url: str | Store, *, repair: bool = False, **storage_options: Any
    ) -> VerifyReport:
        return verify(path_or_url, repair=repair, **storage_options)


sys.modules[__name__].__class__ = _CallableModule
