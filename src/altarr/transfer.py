"""Copying arrays and whole hierarchies shard by shard: the engine under ``altarr copy``.

A copy is cut into *units*, one per destination shard (for an unsharded destination, a block of whole
destination chunks of a few MiB). Each unit reads its region from the source in one planned call and
writes it to the destination as whole shards or chunks, so

* memory is bounded by the units in flight (``workers`` of them), whatever the array's size;
* no two units touch one stored object, so units can run on threads or on a dask cluster
  (:func:`altarr.integrations.dask.copy_on_cluster`) without locks;
* an interrupted copy can be resumed: a small journal (``.altarr-copy.json`` beside the destination's
  metadata) lists the units already written; ``resume=True`` skips them and rewrites the others, giving
  the same bytes as an uninterrupted copy. The journal is removed when the copy completes.

Example:
    >>> import numpy as np, altarr as aa
    >>> from altarr.transfer import copy_array
    >>> src = aa.create_dataset("memory://doc-transfer/a", shape=(6, 6), dtype="u1", chunks=(2, 2),
    ...                         shards=(4, 4))
    >>> src[...] = np.arange(36, dtype="u1").reshape(6, 6)
    >>> result = copy_array(src, "memory://doc-transfer/b", format="zarr2", compressor="gzip:6")
    >>> result.dataset.format, result.dataset.shards, result.notes
    ('zarr2', None, ['zarr2 cannot hold shards: shards (4, 4) dropped, chunks (2, 2) kept'])
    >>> bool((result.dataset[...] == src[...]).all())
    True
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from .dataset.consolidated import is_consolidated
from .errors import AltarrError, ExistsError, MetadataError, UnknownCodecError
from .formats import consolidated as cm
from .formats import get_format, registered_formats

__all__ = [
    "parse_codec",
    "parse_shape",
    "copy_units",
    "copy_unit",
    "copy_array",
    "write_units",
    "read_journal",
    "copy_tree",
    "CopyResult",
    "JOURNAL",
    "FORMATS",
]

#: Name of the resume journal, kept beside the destination array's metadata while a copy runs.
JOURNAL = ".altarr-copy.json"


class _CanShard(Mapping[str, bool]):
    """The registered formats (detection order) -> whether each can hold shards, read live from the
    format registry (a format registered later is in it)."""

    def __getitem__(self, name: str) -> bool:
        for f in registered_formats():
            if f.name == name:
                return f.can_shard
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([f.name for f in registered_formats()])

    def __len__(self) -> int:
        return len(registered_formats())

    def __repr__(self) -> str:
        return repr(dict(self))


#: The formats a copy can write, and whether each can hold shards (``{"zarr3": True, "zarr2": False,
#: "n5": True}`` and any format registered since).
FORMATS: Mapping[str, bool] = _CanShard()
_UNIT_BYTES = 4 << 20  # target size of a unit of an unsharded destination


def parse_shape(text: str, ndim: int, what: str) -> tuple[int, ...]:
    """``"64,64,64"`` as a tuple of ``ndim`` positive ints; a :class:`~altarr.errors.MetadataError` that
    quotes the text otherwise.

    >>> parse_shape("4,8", 2, "chunks")
    (4, 8)
    """
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise MetadataError(
            f"{what} must be comma-separated integers such as 64,64,64, got {text!r}"
        ) from None
    if len(shape) != ndim or any(n < 1 for n in shape):
        raise MetadataError(f"{what} {text!r} must give {ndim} positive lengths, one per dimension")
    return shape


def parse_codec(text: str | None, fmt: str, dtype: Any) -> Any:
    """A command-line codec (``zstd:3``, ``blosc:lz4:5``, ``gzip:6``, a bare name for its default level,
    or ``none``) as the compressor argument of :func:`altarr.create_dataset` for format ``fmt``.

    >>> parse_codec("zstd:5", "zarr2", "u2")
    {'id': 'zstd', 'level': 5}
    >>> parse_codec("blosc:zstd:7", "zarr3", "u2")["configuration"].get("cname")
    'zstd'
    """
    if text is None:
        return "zstd"
    parts = text.lower().split(":")
    name, args = parts[0], parts[1:]
    if name in ("none", "raw") and not args:
        return None
    usage = "use zstd[:LEVEL], gzip[:LEVEL], blosc[:CNAME[:LEVEL]] or none"
    if name not in ("zstd", "gzip", "blosc"):
        raise UnknownCodecError(f"unknown codec {text!r}: {usage}", codec=text)
    cname = "lz4"
    if name == "blosc" and args and not args[0].lstrip("-").isdigit():
        cname, args = args[0], args[1:]
        if cname not in ("lz4", "lz4hc", "zstd", "zlib", "blosclz", "snappy"):
            raise UnknownCodecError(f"unknown blosc compressor {cname!r} in {text!r}: {usage}", codec=text)
    if len(args) > 1 or (args and not args[0].lstrip("-").isdigit()):
        raise UnknownCodecError(f"bad codec {text!r}: {usage}", codec=text)
    default = {"zstd": 3, "gzip": 5, "blosc": 5}[name]
    level = int(args[0]) if args else default
    limits = {"zstd": (-7, 22), "gzip": (0, 9), "blosc": (0, 9)}[name]
    if not limits[0] <= level <= limits[1]:
        raise UnknownCodecError(
            f"{name} level {level} in {text!r} is outside {limits[0]}..{limits[1]}", codec=text
        )
    return get_format(fmt).compressor_json(name, level, cname, np.dtype(dtype))


def _unit_shape(dst: Any) -> tuple[int, ...]:
    """One destination shard, or for an unsharded destination a block of whole chunks of a few MiB
    (grown from the last dimension, the contiguous one)."""
    if dst.shards:
        return tuple(dst.shards)
    unit = list(dst.chunks)
    item = dst.dtype.itemsize
    for d in reversed(range(dst.ndim)):
        while unit[d] < dst.shape[d] and math.prod(unit) * item * 2 <= _UNIT_BYTES:
            unit[d] *= 2
    return tuple(min(u, max(s, 1)) for u, s in zip(unit, dst.shape, strict=True))


def copy_units(dst: Any) -> list[tuple[slice, ...]]:
    """The regions a copy into ``dst`` is cut into, in C order: each covers whole stored objects of
    ``dst`` and no two share one.

    >>> import altarr as aa
    >>> d = aa.create_dataset("memory://doc-units", shape=(5, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    >>> copy_units(d)
    [(slice(0, 4, None), slice(0, 4, None)), (slice(4, 5, None), slice(0, 4, None))]
    """
    unit = _unit_shape(dst)
    starts = product(*(range(0, max(s, 1), u) for s, u in zip(dst.shape, unit, strict=True)))
    return [
        tuple(slice(a, min(a + u, s)) for a, u, s in zip(start, unit, dst.shape, strict=True))
        for start in starts
    ]


def copy_unit(src: Any, dst: Any, region: tuple[slice, ...]) -> int:
    """Copy one unit; returns the number of value bytes it moved."""
    values = src[region]
    dst[region] = values
    return int(values.nbytes)


@dataclass
class CopyResult:
    """What :func:`copy_array` did: the destination, the units written and skipped, the value bytes
    moved and notes for the user (e.g. shards dropped)."""

    dataset: Any
    written: int = 0
    skipped: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)


def _journal_key(dst: Any) -> str:
    return f"{dst.path}/{JOURNAL}" if dst.path else JOURNAL


def read_journal(dst: Any) -> set[int] | None:
    """The units a copy into ``dst`` has written (its journal), or ``None`` when there is no journal (the
    copy completed, or none started)."""
    raw = dst.store.get(_journal_key(dst))
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        return {int(i) for i in doc["done"]}
    except (ValueError, KeyError, TypeError):
        raise MetadataError("unreadable copy journal", key=_journal_key(dst)) from None


def _write_journal(dst: Any, done: set[int], total: int) -> None:
    doc = {"altarr_copy": 1, "units": total, "done": sorted(done)}
    dst.store.set(_journal_key(dst), json.dumps(doc).encode())


def destination_layout(
    src: Any, fmt: str, chunks: tuple[int, ...] | None, shards: Any
) -> tuple[tuple[int, ...], tuple[int, ...] | None, list[str]]:
    """Chunks and shards of a copy of ``src`` into format ``fmt``: ``shards="same"`` keeps the source's
    (dropped, with a note, when ``fmt`` cannot hold shards or they do not fit the new chunks)."""
    notes: list[str] = []
    chunks = tuple(chunks) if chunks is not None else tuple(src.chunks)
    if shards == "same":
        shards = src.shards
        if shards is not None and not FORMATS[fmt]:
            notes.append(f"{fmt} cannot hold shards: shards {shards} dropped, chunks {chunks} kept")
            shards = None
        elif shards is not None and any(s % c for s, c in zip(shards, chunks, strict=True)):
            notes.append(f"source shards {shards} are not multiples of chunks {chunks}: shards dropped")
            shards = None
    elif shards is not None:
        if not FORMATS[fmt]:
            raise MetadataError(f"{fmt} cannot hold shards; use --shards none or another --format")
        shards = tuple(shards)
        bad = [d for d, (s, c) in enumerate(zip(shards, chunks, strict=True)) if s % c]
        if bad:
            raise MetadataError(f"shards {shards} must be multiples of chunks {chunks} (dimension {bad[0]})")
    return chunks, shards, notes


def _same_layout(dst: Any, src: Any, fmt: str, chunks: tuple, shards: Any) -> bool:
    return (
        dst.format == fmt
        and dst.shape == src.shape
        and dst.dtype == src.dtype
        and tuple(dst.chunks) == tuple(chunks)
        and (tuple(dst.shards) if dst.shards else None) == (tuple(shards) if shards else None)
    )


def copy_array(
    src: Any,
    destination: Any,
    *,
    format: str | None = None,
    chunks: tuple[int, ...] | None = None,
    shards: Any = "same",
    compressor: Any = "zstd",
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    path: str = "",
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list[tuple[int, tuple[slice, ...]]]], Iterator[tuple[int, int]]]
    | None = None,
) -> CopyResult:
    """Copy the dataset ``src`` into a new dataset at ``destination``, unit by unit (see the module).

    Args:
        src: the source :class:`~altarr.Dataset`.
        destination: a path, URL or store.
        format: ``"zarr3"``, ``"zarr2"`` or ``"n5"`` (default: the source's).
        chunks: destination chunk shape (default: the source's).
        shards: ``"same"`` (the source's, dropped with a note if ``format`` cannot hold them), ``None`` or a
            shard shape.
        compressor: a codec as :func:`parse_codec` takes it (``"zstd:3"``), or a format-specific object.
        overwrite: replace an existing destination.
        resume: continue an interrupted copy into an existing destination, skipping the units its
            journal lists.
        workers: units copied at once (each holds one unit of values in memory).
        path: node path inside ``destination``.
        progress: called as ``progress(value_bytes, units)`` after each unit (or wave of units).
        run_units: runs ``[(index, region), ...]`` elsewhere (e.g. on a dask cluster) and yields
            ``(index, value_bytes)`` as units complete.
    """
    import altarr as aa

    from .dataset.api import create_like

    fmt = format or src.format
    if fmt not in FORMATS:
        raise MetadataError(f"unknown format {fmt!r}; use one of {sorted(FORMATS)}")
    chunks, shards, notes = destination_layout(src, fmt, chunks, shards)
    if isinstance(compressor, str) or compressor is None:
        compressor = parse_codec(compressor or "none", fmt, src.dtype)
    if resume:
        try:
            dst = aa.open_dataset(destination, mode="r+", path=path)
        except AltarrError:
            dst = None
        if dst is not None:
            if not _same_layout(dst, src, fmt, chunks, shards):
                raise ExistsError(
                    f"cannot resume: {dst!r} does not have the layout asked for (format {fmt}, chunks "
                    f"{chunks}, shards {shards})",
                    key=dst.path,
                )
            journal = read_journal(dst)
            if journal is None:  # no journal: that copy finished
                return CopyResult(dst, skipped=len(copy_units(dst)), notes=[*notes, "already complete"])
            done = journal
    else:
        dst = None
    if dst is None:
        dst = create_like(
            src,
            destination,
            format=fmt,
            chunks=chunks,
            shards=shards,
            compressor=compressor,
            overwrite=overwrite,
            path=path,
        )
        done = set()
    return write_units(src, dst, done, notes=notes, workers=workers, progress=progress, run_units=run_units)


def write_units(
    src: Any,
    dst: Any,
    done: set[int] | None = None,
    *,
    notes: list[str] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list[tuple[int, tuple[slice, ...]]]], Iterator[tuple[int, int]]]
    | None = None,
) -> CopyResult:
    """Copy ``src`` (anything whose ``src[region]`` gives the values of a region of ``dst``) into the
    existing dataset ``dst`` unit by unit (:func:`copy_units`), skipping the units in ``done`` (what
    :func:`read_journal` returned), keeping the resume journal, and removing it at the end. ``workers``,
    ``progress`` and ``run_units`` as in :func:`copy_array`, which ends here; so does each level of a
    pyramid (:func:`altarr.multiscale.build_pyramid`).
    """
    from .dataset.parallel import get_max_workers, pmap, set_max_workers

    done = set(done or ())
    units = copy_units(dst)
    _write_journal(dst, done, len(units))
    result = CopyResult(dst, skipped=len(done), notes=list(notes or []))
    todo = [(i, r) for i, r in enumerate(units) if i not in done]
    if progress is not None and done:
        item = dst.dtype.itemsize
        progress(sum(math.prod(s.stop - s.start for s in units[i]) * item for i in done), len(done))
    if run_units is not None:
        for i, nbytes in run_units(src, dst, todo):
            done.add(i)
            result.written += 1
            result.bytes += nbytes
            _write_journal(dst, done, len(units))
            if progress is not None:
                progress(nbytes, 1)
    else:
        workers = max(1, int(workers))
        old = get_max_workers()
        if workers > 1:
            set_max_workers(workers)
        try:
            for w in range(0, len(todo), workers):
                wave = todo[w : w + workers]
                sizes = pmap(lambda item: copy_unit(src, dst, item[1]), wave)
                done.update(i for i, _ in wave)
                result.written += len(wave)
                result.bytes += sum(sizes)
                _write_journal(dst, done, len(units))
                if progress is not None:
                    progress(sum(sizes), len(wave))
        finally:
            if workers > 1:
                set_max_workers(old)
    dst.store.delete(_journal_key(dst))
    return result


def copy_tree(
    source: Any,
    destination: str,
    *,
    format: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    on_array: Callable[[str, Any], CopyResult] | None = None,
) -> list[tuple[str, CopyResult]]:
    """Copy a group and everything below it (groups with their attributes, arrays through ``on_array``,
    which receives the relative path and the source dataset and defaults to :func:`copy_array`)."""
    import altarr as aa

    fmt = format or source.format
    if fmt not in FORMATS:
        raise MetadataError(f"unknown format {fmt!r}; use one of {sorted(FORMATS)}")
    try:
        root = aa.create_group(destination, format=fmt, attributes=dict(source.attrs), overwrite=overwrite)
    except ExistsError:
        if not resume:
            raise
        root = aa.open_group(destination, mode="r+")
    results: list[tuple[str, CopyResult]] = []

    def walk(group: Any, into: Any, prefix: str) -> None:
        for name in group.keys():
            node = group[name]
            rel = f"{prefix}{name}"
            if isinstance(node, aa.Group):
                sub = into[name] if (resume and name in into) else into.create_group(name, dict(node.attrs))
                walk(node, sub, rel + "/")
            elif on_array is not None:
                results.append((rel, on_array(rel, node)))
            else:
                results.append(
                    (rel, copy_array(node, root.store, format=fmt, path=_join(root.path, rel), resume=resume))
                )

    walk(source, root, "")
    if is_consolidated(source) and cm.holder_name(fmt) is not None:  # a consolidated source stays so
        aa.consolidate_metadata(root)
    return results


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a else b
