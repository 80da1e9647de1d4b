"""``altarr.verify``: check a stored dataset or group end to end (metadata, every shard index at every
level, every chunk decoded) and report every problem found, never stopping at the first
(``docs/engine.md``, "Verify").

Example:
    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-verify", shape=(4, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    >>> ds[...] = np.arange(16, dtype="u1").reshape(4, 4)
    >>> report = aa.verify("memory://doc-verify")
    >>> report.ok, report.checked["chunks"], report.arrays[0].by_checksum
    (True, 4, 4)
"""

from __future__ import annotations

import json
import lzma
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import AltarrError, ChecksumError
from .stores.local_files import TEMP_SUFFIX  # temporary files of writes in flight: not objects

if TYPE_CHECKING:
    from .dataset import Dataset
    from .stores.base import Store

__all__ = [
    "verify",
    "VerifyReport",
    "Problem",
    "ArrayCheck",
    "chunk_checksum",
    "METADATA_NAMES",
]


#: The metadata documents of every format
METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata", "attributes.json")
_NODE_NAMES = ("zarr.json", ".zarray", ".zgroup", "attributes.json")

#: :data:`altarr.transfer.JOURNAL`, spelled here so verify needs nothing of the copy machinery
COPY_JOURNAL = ".altarr-copy.json"

_EMPTY = 2**64 - 1


@dataclass
class Problem:
    """One problem found by :func:`verify`: its store key, ``kind`` (``"metadata"``, ``"index-bounds"``,
    ``"checksum"``, ``"unexpected-key"``, ``"incomplete"``, ...), message and chunk."""

    key: str
    kind: str
    message: str
    chunk: tuple[int, ...] | None = None

    def __str__(self) -> str:
        where = self.key + ("" if self.chunk is None else f" chunk {self.chunk}")
        return f"{where}: [{self.kind}] {self.message}"


@dataclass
class ArrayCheck:
    """What :func:`verify` checked of one array: its chunks checked ``by_checksum`` (named in
    ``checksums``) and ``decoded_only``."""

    path: str
    format: str
    objects: int = 0
    shards: int = 0
    by_checksum: int = 0
    decoded_only: int = 0
    checksums: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        return self.by_checksum + self.decoded_only

    def __str__(self) -> str:
        names = f" ({', '.join(self.checksums)})" if self.checksums else ""
        shards = f", {self.shards} shards" if self.shards else ""
        return (
            f"{self.path or '/'} ({self.format}{shards}): {self.chunks} chunks, {self.by_checksum} checked "
            f"by checksum{names}, {self.decoded_only} only by decoding"
        )


@dataclass
class VerifyReport:
    """What :func:`verify` found: ``ok`` when there are no problems (stale temporary files are none)."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    stale_temp_files: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=lambda: {"metadata": 0, "shards": 0, "chunks": 0})
    arrays: list[ArrayCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, key: str, kind: str, message: str, chunk: Any = None) -> None:
        chunk = None if chunk is None else tuple(int(c) for c in chunk)
        self.problems.append(Problem(key, kind, message, chunk))

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-able data (what ``altarr verify --json`` prints)."""
        doc = asdict(self)
        for a, check in zip(doc["arrays"], self.arrays, strict=True):
            a.update(path=check.path or "/", chunks=check.chunks)
        return {"ok": self.ok, **doc}

    def __str__(self) -> str:
        c = self.checked
        by_checksum = sum(a.by_checksum for a in self.arrays)
        lines = [
            f"altarr verify {self.path}: {'OK' if self.ok else f'{len(self.problems)} problem(s)'} "
            f"({c['metadata']} metadata documents, {c['shards']} shards, {c['chunks']} chunks checked: "
            f"{by_checksum} by checksum, {c['chunks'] - by_checksum} only by decoding)"
        ]
        lines += [f"  {p}" for p in self.problems]
        lines += [f"  {a}" for a in self.arrays]
        if self.stale_temp_files:
            verb = "removed" if self.removed else "found"
            lines.append(f"  {len(self.stale_temp_files)} stale temporary file(s) {verb}:")
            lines += [f"    {k}" for k in self.stale_temp_files]
        return "\n".join(lines)


def verify(path_or_url: str | Store, *, repair: bool = False, **storage_options: Any) -> VerifyReport:
    """Check the dataset or group at ``path_or_url`` (a path, URL or store) and return a
    :class:`VerifyReport`; ``repair=True`` removes stale temporary files, nothing else.

    >>> import altarr as aa
    >>> _ = aa.create_dataset("memory://doc-verify2", shape=(3,), dtype="f4", chunks=(2,))
    >>> print(aa.verify("memory://doc-verify2"))  # doctest: +NORMALIZE_WHITESPACE
    altarr verify memory://doc-verify2: OK (1 metadata documents, 0 shards, 0 chunks checked: 0 by checksum,
    0 only by decoding)
      / (zarr3): 0 chunks, 0 checked by checksum, 0 only by decoding
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
    _check_journals(store, keys, report)
    nodes = _node_prefixes(keys, prefix)
    if not nodes:
        report.add(prefix or "/", "metadata", "no N5, Zarr v2 or Zarr v3 metadata found")
        return report
    for node in nodes:
        try:
            _check_node(store, node, nodes, keys, report)
        except Exception as e:  # verify reports, it does not stop
            report.add(node or "/", "unexpected", f"{type(e).__name__}: {e}")
    return report


# --- nodes and metadata -------------------------------------------------------------------------------
def _parent(key: str) -> str:
    return key.rpartition("/")[0]


def _node_prefixes(keys: list[str], prefix: str) -> list[str]:
    found = {_parent(k) for k in keys if k.rpartition("/")[2] in _NODE_NAMES}
    return sorted(p for p in found if not prefix or p == prefix or p.startswith(prefix + "/"))


def _check_journals(store: Store, keys: list[str], report: VerifyReport) -> None:
    """An unfinished copy's journal makes its node incomplete."""
    for key in (k for k in keys if k.rpartition("/")[2] == COPY_JOURNAL):
        what = "an unfinished copy"
        try:
            doc = json.loads(bytes(store.get(key) or b"{}"))
            done, total = len(doc.get("done", [])), doc.get("units")
            if isinstance(total, int):
                what += f": {done} of {total} units written"
        except (ValueError, TypeError, AttributeError):
            what += " (its journal is unreadable)"
        report.add(
            key,
            "incomplete",
            f"{what}; the copy's journal is still there: run the same copy again with --resume "
            "(resume=True) to finish it",
        )


def _check_node(store: Store, node: str, nodes: list[str], keys: list[str], report: VerifyReport) -> None:
    from .dataset import Dataset
    from .formats import open_node

    docs = [k for k in keys if _parent(k) == node and k.rpartition("/")[2] in METADATA_NAMES]
    meta_key = docs[0] if docs else (node or "/")
    try:
        opened = open_node(store, node)
    except AltarrError as e:
        report.add(e.key or meta_key, "metadata", e.message)
        return
    except Exception as e:  # verify reports, it does not stop
        report.add(meta_key, "unexpected", f"{type(e).__name__}: {e}")
        return
    report.checked["metadata"] += len(docs)
    try:
        opened.format.read_attributes(store, node)
    except AltarrError as e:
        report.add(e.key or meta_key, "attributes", e.message)
    except Exception as e:
        report.add(meta_key, "unexpected", f"attributes: {type(e).__name__}: {e}")
    if opened.kind != "array" or opened.spec is None:
        return
    try:
        ds = Dataset(store, node, opened.spec, opened.format, mode="r")
    except AltarrError as e:
        report.add(e.key or meta_key, "metadata", e.message)
        return
    inner = [n for n in nodes if n != node and (not node or n.startswith(node + "/"))]
    base = f"{node}/" if node else ""
    data_keys = {
        k
        for k in keys
        if k.startswith(base)
        and k.rpartition("/")[2] not in METADATA_NAMES
        and not any(k.startswith(n + "/") for n in inner)
    }
    check = ArrayCheck(node, ds.format)
    report.arrays.append(check)
    _check_array(ds, data_keys, report, check)


# --- arrays -------------------------------------------------------------------------------------------
def _positions(ds: Dataset, data_keys: set[str]) -> tuple[list[tuple[str, tuple[int, ...]]], list[str]]:
    """Stored objects of ``ds`` with their outer grid positions (a key's integers, in order or reversed,
    that the dataset's key function gives back), and the keys that name no position."""
    acc = ds.access
    top = acc.grid.nlevels - 1
    grid = acc.grid.grid_shape(top)
    base = f"{ds.path}/" if ds.path else ""
    found, unknown = [], []
    for k in sorted(data_keys):
        nums = [int(x) for x in re.findall(r"\d+", k[len(base) :])]
        tail = tuple(nums[len(nums) - len(grid) :])  # () for a 0-d array
        for pos in (tail, tail[::-1]):
            fits = len(pos) == len(grid) and all(0 <= c < n for c, n in zip(pos, grid, strict=True))
            if fits and acc.layout.key(pos) == k:
                found.append((k, pos))
                break
        else:
            unknown.append(k)
    return found, unknown


def _check_array(ds: Dataset, data_keys: set[str], report: VerifyReport, check: ArrayCheck) -> None:
    acc = ds.access
    top = acc.grid.nlevels - 1
    found, unknown = _positions(ds, data_keys)
    for key in unknown:
        if key.rpartition("/")[2].startswith("."):
            continue  # hidden files (.DS_Store, editors' files, a copy's journal) are no chunk: not reported
        report.add(key, "unexpected-key", "an object inside the array that is no chunk or shard of its grid")
    walker = _Walker(acc, report, check)
    for key, pos in found:
        try:
            data = acc.store.get(key)
        except AltarrError as e:
            report.add(key, "read", e.message)
            continue
        if data is None:  # removed since the listing
            continue
        check.objects += 1
        mv = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        try:
            if top == 0:
                walker.chunk(mv, pos, key)
            else:
                report.checked["shards"] += 1
                check.shards += 1
                walker.shard(mv, top, pos, key)
        except Exception as e:  # one object's surprise must not stop the others' checks
            report.add(key, "unexpected", f"{type(e).__name__}: {e}")


class _Walker:
    """Checks the stored objects of one array: shard indexes level by level, then every chunk."""

    def __init__(self, acc: Any, report: VerifyReport, check: ArrayCheck) -> None:
        self.acc = acc
        self.grid = acc.grid
        self.report = report
        self.check = check
        self.chain = acc.codec.chain

    def chunk(self, data: Any, chunk: tuple[int, ...], key: str) -> None:
        report, check = self.report, self.check
        report.checked["chunks"] += 1
        name = chunk_checksum(self.chain, data)
        if name is None:
            check.decoded_only += 1
        else:
            check.by_checksum += 1
            if name not in check.checksums:
                check.checksums.append(name)
        try:
            self.acc.codec.decode_chunk(data, chunk, key)
        except ChecksumError as e:
            report.add(key, "checksum", e.message, chunk)
        except AltarrError as e:
            report.add(key, "chunk", e.message, chunk)
        except Exception as e:
            report.add(key, "unexpected", f"{type(e).__name__}: {e}", chunk)

    def _index(self, mv: memoryview, level: int, key: str, where: tuple[int, ...]) -> tuple[Any, int, int]:
        """The decoded index of a level-``level`` block and its data region, or ``None`` (reported)."""
        sc, cps = self.acc.layout.level_codec(level)
        n_idx = sc.index_nbytes(cps)
        size = len(mv)
        if size < n_idx:
            self.report.add(
                key, "truncated", f"{size} bytes, shorter than the {n_idx}-byte shard index", where
            )
            return None, 0, 0
        start_index = sc.index_location == "start"
        raw = mv[:n_idx] if start_index else mv[size - n_idx :]
        try:
            index = np.array(sc.index_codecs.decode(raw, (*cps, 2), np.dtype(np.uint64)), dtype=np.uint64)
        except ChecksumError as e:
            self.report.add(key, "index-checksum", f"shard index: {e.message}", where)
            return None, 0, 0
        except AltarrError as e:
            self.report.add(key, "index", f"shard index: {e.message}", where)
            return None, 0, 0
        lo, hi = (n_idx, size) if start_index else (0, size - n_idx)
        return index, lo, hi

    def shard(self, mv: memoryview, level: int, pos: tuple[int, ...], key: str) -> None:
        """Check the level-``level`` block at ``pos`` and its children (named by their first chunk)."""
        grid = self.grid
        index, lo, hi = self._index(mv, level, key, grid.first_chunk(pos, level))
        if index is None:
            return
        cps = grid.per_block(level)
        first = tuple(p * k for p, k in zip(pos, cps, strict=True))  # level-(level-1) position of entry 0
        inside = grid.grid_shape(level - 1)
        spans: list[tuple[int, int, tuple[int, ...], tuple[int, ...]]] = []
        for rel in np.ndindex(*cps):
            off, nb = (int(v) for v in index[rel])
            if off == _EMPTY and nb == _EMPTY:
                continue
            child = tuple(f + r for f, r in zip(first, rel, strict=True))
            label = grid.first_chunk(child, level - 1)
            if off == _EMPTY or nb == _EMPTY:
                msg = f"entry {rel} ({off}, {nb}) has one word 2**64-1: neither empty nor a valid range"
                self.report.add(key, "index-sentinel", msg, label)
            elif off < lo or off + nb > hi:
                msg = f"entry {rel} points at bytes [{off}, {off + nb}), outside the data region [{lo}, {hi})"
                self.report.add(key, "index-bounds", msg, label)
            else:
                spans.append((off, off + nb, label, child))
        spans.sort()
        for (s0, e0, c0, _), (s1, e1, c1, _) in zip(spans, spans[1:], strict=False):
            if s1 < e0:
                msg = f"bytes [{s1}, {e1}) of chunk {c1} overlap [{s0}, {e0}) of chunk {c0}"
                self.report.add(key, "index-overlap", msg, c1)
        for off, end, _, child in spans:
            if any(c >= n for c, n in zip(child, inside, strict=True)):
                continue  # a padded position past the array's edge: never read
            if level == 1:
                self.chunk(mv[off:end], child, key)
            else:
                self.shard(mv[off:end], level - 1, child, key)


# --- checksums ------------------------------------------------------------------------------------------
#: Codecs whose stored form always carries a checksum their decoder verifies, by codec name
_ALWAYS = {
    "crc32c": "crc32c",
    "gzip": "gzip CRC-32",
    "zlib": "zlib Adler-32",
    "bz2": "bzip2 CRC",
    "bzip2": "bzip2 CRC",
    "xz": "xz check",
    "crc32": "CRC-32",
    "adler32": "Adler-32",
    "fletcher32": "Fletcher-32",
    "jenkins_lookup3": "lookup3",
}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def chunk_checksum(chain: Any, data: Any) -> str | None:
    """The checksum that decoding a chunk's stored bytes ``data`` through ``chain`` verifies, by name
    (``None``: the chunk can only be decoded): the first of the chain's bytes stages, stored side first,
    those inside the array->bytes codec included, that checks one."""
    stages: list[tuple[str, Any]] = [(c.name, c) for c in reversed(chain.bytes_bytes)]
    ab = chain.array_bytes
    inside: list[Any] = []
    if ab.name == "zarr2_chunk":
        inside = ([ab.compressor] if ab.compressor is not None else []) + list(reversed(ab.filters))
    elif ab.name == "n5bytes":
        inside = [None, *reversed(ab.data_codecs)]  # None: the block header comes first
    stages += [(str(getattr(c, "codec_id", getattr(c, "name", ""))), c) for c in inside]
    for i, (name, codec) in enumerate(stages):
        found = _stage_checksum(name, codec, data if i == 0 else None)
        if found is not None:
            return found
    return None


def _stage_checksum(name: str, codec: Any, data: Any) -> str | None:
    """The checksum one stage verifies; ``data``: its input on the stored side, else ``None``."""
    if name == "gzip" and getattr(codec, "use_zlib", False):  # N5 gzip with useZlib: a zlib stream
        return _ALWAYS["zlib"]
    if name == "lzma":  # numcodecs' LZMA: an .xz container with an integrity check, unless told otherwise
        fmt, check = getattr(codec, "format", lzma.FORMAT_XZ), getattr(codec, "check", -1)
        return "xz check" if fmt == lzma.FORMAT_XZ and check != lzma.CHECK_NONE else None
    if name == "lz4":  # N5's lz4-java block stream checks each block; numcodecs' LZ4 has no checksum
        return "lz4 xxHash32" if hasattr(codec, "to_n5_json") else None
    if name == "zstd" and data is not None:  # the stored frame says (RFC 8878 3.1.1.1.1, bit 2)
        mv = memoryview(data).cast("B")
        return "zstd frame checksum" if len(mv) >= 5 and mv[:4] == _ZSTD_MAGIC and mv[4] & 0x04 else None
    if name == "zstd":
        return "zstd frame checksum" if getattr(codec, "checksum", False) else None
    return _ALWAYS.get(name)


# --- temporary files ----------------------------------------------------------------------------------
def _check_temp_files(store: Store, prefix: str, report: VerifyReport, repair: bool) -> None:
    """List (and with ``repair`` remove) the temporary files left by interrupted writes."""
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
