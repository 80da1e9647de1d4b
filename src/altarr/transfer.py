"""Copying arrays and whole hierarchies unit by unit, one unit per destination shard (or block of whole
chunks), with a resume journal: the engine under ``altarr copy`` (``docs/cli.md``).

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
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from .dataset import create_like, is_consolidated
from .errors import ExistsError, MetadataError
from .formats import FORMATS, get_format
from .formats import consolidated as cm

__all__ = [
    "ProgressBar",
    "progress_reporter",
    "check_copy",
    "check_resume",
    "check_copies",
    "parse_codec",
    "copy_units",
    "copy_unit",
    "copy_array",
    "existing_dataset",
    "write_units",
    "read_journal",
    "copy_tree",
    "CopyResult",
    "JOURNAL",
]

#: The resume journal, beside the destination array's metadata while a copy runs
JOURNAL = ".altarr-copy.json"


_UNIT_BYTES = 4 << 20  # target size of a unit of an unsharded destination


def parse_codec(text: Any, fmt: str, dtype: Any, *, argument: str = "--codec") -> Any:
    """A codec of the codec vocabulary (:mod:`altarr.codecs.vocabulary`) as the compressor argument of
    :func:`altarr.create_dataset` for format ``fmt`` (``None``: the format's default); errors start with
    ``argument``.

    >>> parse_codec("zstd:5", "zarr2", "u2")
    {'id': 'zstd', 'level': 5}
    >>> parse_codec(None, "n5", "u2")
    {'type': 'gzip', 'useZlib': False}
    >>> parse_codec("lz5", "zarr3", "u2")
    Traceback (most recent call last):
    altarr.errors.UnknownCodecError: --codec 'lz5': unknown codec 'lz5'; use NAME[:LEVEL] (zstd, gzip, zlib, bz2, lzma, lz4), blosc[:CNAME][:LEVEL] or none [codec='lz5']
    """
    from .codecs.vocabulary import compressor_argument

    default = get_format(fmt).default_compressor
    value = "auto" if text is None else text
    return compressor_argument(value, fmt, np.dtype(dtype), argument=argument, default=default)


def _unit_shape(dst: Any) -> tuple[int, ...]:
    """One destination shard, or a block of whole chunks of a few MiB (grown from the last dimension)."""
    if dst.shards:
        return tuple(dst.shards)
    unit = list(dst.chunks)
    item = dst.dtype.itemsize
    for d in reversed(range(dst.ndim)):
        while unit[d] < dst.shape[d] and math.prod(unit) * item * 2 <= _UNIT_BYTES:
            unit[d] *= 2
    return tuple(min(u, max(s, 1)) for u, s in zip(unit, dst.shape, strict=True))


def copy_units(dst: Any) -> list[tuple[slice, ...]]:
    """The regions a copy into ``dst`` is cut into, in C order, no two sharing a stored object.

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
    """What :func:`copy_array` did: the destination, units written and skipped, value bytes, notes."""

    dataset: Any
    written: int = 0
    skipped: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)


class ProgressBar:
    """A progress bar on stderr (rich), called as ``progress(value_bytes, units)``; counts both and calls
    ``on_step()`` after each call; closed at the end of a ``with`` block.

    >>> with ProgressBar(100, "demo", enabled=False) as bar:
    ...     bar(60, 1); bar(40, 1)
    >>> bar.done, bar.units
    (100, 2)
    """

    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        console: Any = None,
        enabled: bool = True,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        self.total, self.label, self.console, self.enabled = total, label, console, enabled
        self.on_step = on_step
        self.done = self.units = 0
        self._bar: Any = None

    def __call__(self, nbytes: int, units: int) -> None:
        self.done += nbytes
        self.units += units
        if self.enabled and self._bar is None:  # shown from the first step on
            import rich.progress as rp
            from rich.console import Console

            columns = (rp.TextColumn("{task.description}"), rp.BarColumn(), rp.DownloadColumn())
            speed = (rp.TransferSpeedColumn(), rp.TimeRemainingColumn())
            self._bar = rp.Progress(*columns, *speed, console=self.console or Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        if self.enabled:
            self._bar.advance(self._task, nbytes)
        if self.on_step is not None:
            self.on_step()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def progress_reporter(progress: Any, total: int | None, label: str) -> AbstractContextManager[Any]:
    """A copy's ``progress`` argument as a function: ``True`` is a :class:`ProgressBar`, false ``None``."""
    return ProgressBar(total, label) if progress is True else nullcontext(progress or None)


def _journal_key(dst: Any) -> str:
    return f"{dst.path}/{JOURNAL}" if dst.path else JOURNAL


def _journal_doc(dst: Any) -> dict[str, Any] | None:
    raw = dst.store.get(_journal_key(dst))
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        doc["done"] = {int(i) for i in doc["done"]}
        return dict(doc)
    except (ValueError, KeyError, TypeError):
        raise MetadataError("unreadable copy journal", key=_journal_key(dst)) from None


def read_journal(dst: Any) -> set[int] | None:
    """The units a copy into ``dst`` has written (its journal), or ``None`` without a journal."""
    doc = _journal_doc(dst)
    return None if doc is None else doc["done"]


def _write_journal(dst: Any, done: set[int], total: int, options: Mapping[str, Any]) -> None:
    doc = {"altarr_copy": 1, "units": total, "done": sorted(done), **options}
    dst.store.set(_journal_key(dst), json.dumps(doc).encode())


#: The copy's arguments as messages name them (``altarr copy`` passes its options)
PYTHON_NAMES = {n: f"{n}=" for n in ("format", "chunks", "shards", "compressor", "checksum")}


def _said(names: Mapping[str, str], name: str, value: Any) -> str:
    """``chunks=(64, 64)`` in Python, ``--chunks 64,64`` on the command line."""
    shown = names.get(name, f"{name}=")
    if shown.endswith("="):
        return f"{shown}{value!r}"
    if isinstance(value, tuple | list) and all(isinstance(v, int) for v in value):
        value = ",".join(map(str, value))
    return f"{shown} {value}"


def check_copy(
    src: Any,
    fmt: str,
    chunks: Any = None,
    shards: Any = "same",
    compressor: Any = "auto",
    checksum: bool | None = None,
    names: Mapping[str, str] = PYTHON_NAMES,
) -> tuple[dict[str, Any], Any, list[str]]:
    """Check a copy of ``src`` into ``fmt`` before anything is written: what it asks (as
    :func:`check_resume` compares it), the destination's compressor argument, and the notes.
    ``shards="same"`` keeps the source's where ``fmt`` holds them and they fit (a note says when not; into
    N5 from another format, plain N5)."""
    if fmt not in FORMATS:
        raise MetadataError(f"{_said(names, 'format', fmt)}: use one of {sorted(FORMATS)}")
    notes: list[str] = []
    chunks = tuple(chunks) if chunks is not None else tuple(src.chunks)
    if len(chunks) != src.ndim or any(not isinstance(c, int | np.integer) or c < 1 for c in chunks):
        raise MetadataError(f"{_said(names, 'chunks', chunks)}: give {src.ndim} positive lengths")
    if shards == "same":
        shards = src.shards
        if shards is not None and not FORMATS[fmt].can_shard:
            notes.append(f"{fmt} cannot hold shards: shards {shards} dropped, chunks {chunks} kept")
            shards = None
        elif shards is not None and fmt == "n5" and src.format != "n5":
            notes.append(
                f"plain N5 written (sharded N5 opens in altarr and Java N5 4.x only): shards {shards} "
                f"dropped, chunks {chunks} kept; give {names.get('shards', 'shards=')} to keep them"
            )
            shards = None
        elif shards is not None and any(s % c for s, c in zip(shards, chunks, strict=True)):
            notes.append(f"source shards {shards} are not multiples of chunks {chunks}: shards dropped")
            shards = None
    elif shards is not None:
        nested = len(shards) > 0 and isinstance(shards[0], tuple | list)  # [inner, ..., outer]
        levels = [tuple(level) for level in shards] if nested else [tuple(shards)]
        shards = levels if nested else levels[0]
        if not FORMATS[fmt].can_shard:
            raise MetadataError(f"{_said(names, 'shards', shards)}: {fmt} cannot hold shards")
        inner = chunks
        for level in levels:
            if len(level) != src.ndim or any(s % c for s, c in zip(level, inner, strict=False)):
                raise MetadataError(
                    f"{_said(names, 'shards', level)} must be multiples of {_said(names, 'chunks', inner)}"
                )
            inner = level
    codec = parse_codec(compressor or "none", fmt, src.dtype, argument=names["compressor"].rstrip("="))
    given = not (isinstance(compressor, str) and compressor == "auto")
    asked = {"format": fmt, "chunks": chunks, "shards": shards, "compressor": codec if given else None}
    return asked | {"checksum": checksum, "compressor_given": compressor}, codec, notes


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def check_resume(
    dst: Any, src: Any, asked: Mapping[str, Any], names: Mapping[str, str] = PYTHON_NAMES
) -> dict[str, Any] | None:
    """The journal of ``dst`` (``None``: that copy completed) if a copy asking ``asked`` may resume into
    it, else an :class:`~altarr.errors.ExistsError` naming each argument that differs."""
    diff = []
    have = {"format": dst.format, "chunks": tuple(dst.chunks), "shards": dst.shards and tuple(dst.shards)}
    for name in ("format", "chunks", "shards"):
        if have[name] != asked[name]:
            diff.append(f"{_said(names, name, asked[name])} (the destination has {have[name]})")
    if (dst.shape, dst.dtype) != (src.shape, src.dtype):
        diff.append(
            f"the source's shape {src.shape} {src.dtype} (the destination has {dst.shape} {dst.dtype})"
        )
    journal = _journal_doc(dst)
    for name in ("compressor", "checksum"):
        value = asked.get(name)
        if journal is not None and value is not None and _jsonable(value) != journal.get(name):
            shown = asked.get(f"{name}_given", value)
            diff.append(f"{_said(names, name, shown)} (the interrupted copy wrote {journal.get(name)})")
    if diff:
        raise ExistsError(
            "cannot resume: the destination differs in " + "; ".join(diff), key=dst.path or None
        )
    return journal


def check_copies(
    arrays: list[tuple[str, Any]], destination: Any, options: Callable[[Any], dict[str, Any]], resume: bool
) -> None:
    """:func:`check_copy` of each ``(path, dataset)`` of ``arrays`` with :func:`copy_array`'s keywords
    ``options(dataset)``, and with ``resume`` :func:`check_resume` against what was written at ``path``."""
    for path, src in arrays:
        kw = options(src)
        names = kw.get("names", PYTHON_NAMES)
        given = (kw.get("chunks"), kw.get("shards", "same"), kw.get("compressor", "auto"), kw.get("checksum"))
        asked, _, _ = check_copy(src, kw.get("format") or src.format, *given, names)
        dst = existing_dataset(destination, path) if resume else None
        if dst is not None:
            check_resume(dst, src, asked, names)


def copy_array(
    src: Any,
    destination: Any,
    *,
    format: str | None = None,
    chunks: tuple[int, ...] | None = None,
    shards: Any = "same",
    compressor: Any = "auto",
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    path: str = "",
    progress: Any = None,
    run_units: Callable[[Any, Any, list[tuple[int, tuple[slice, ...]]]], Iterator[tuple[int, int]]]
    | None = None,
    names: Mapping[str, str] = PYTHON_NAMES,
    **format_options: Any,
) -> CopyResult:
    """Copy the dataset ``src`` into a new dataset at ``destination``, unit by unit: what
    :func:`altarr.copy_dataset` and ``altarr copy`` run. Every argument is checked before anything is
    written.

    Args:
        src: the source :class:`~altarr.Dataset`.
        destination: a path, URL or store.
        format: ``"zarr3"``, ``"zarr2"`` or ``"n5"`` (default: the source's).
        chunks: destination chunk shape (default: the source's).
        shards: ``"same"`` (the source's, where ``format`` holds them), ``None`` or a shard shape.
        compressor: the codec vocabulary (``"zstd:3"``); ``"auto"`` is the format's default.
        overwrite: replace an existing destination.
        resume: continue an interrupted copy (refused when the arguments differ from its).
        workers: units copied at once (each holds one unit of values in memory).
        path: node path inside ``destination``.
        progress: ``True`` for a progress bar, or called as ``progress(value_bytes, units)``.
        run_units: runs ``[(index, region), ...]`` elsewhere and yields ``(index, value_bytes)``.
        names: how messages name the arguments (``altarr copy`` passes its options).
        format_options: for :func:`altarr.create_dataset`.
    """

    fmt = format or src.format
    asked, compressor, notes = check_copy(
        src, fmt, chunks, shards, compressor, format_options.get("checksum"), names
    )
    chunks, shards = asked["chunks"], asked["shards"]
    dst = existing_dataset(destination, path) if resume else None
    done: set[int] = set()
    if dst is not None:
        journal = check_resume(dst, src, asked, names)
        if journal is None:  # no journal: that copy finished
            return CopyResult(dst, skipped=len(copy_units(dst)), notes=[*notes, "already complete"])
        done = journal["done"]
    else:
        layout = {"format": fmt, "chunks": chunks, "shards": shards, "compressor": compressor}
        dst = create_like(src, destination, overwrite=overwrite, path=path, **layout, **format_options)
    journal = {"compressor": _jsonable(compressor), "checksum": format_options.get("checksum")}
    with progress_reporter(progress, src.nbytes, str(destination)) as report:
        return write_units(
            src,
            dst,
            done,
            notes=notes,
            workers=workers,
            progress=report,
            run_units=run_units,
            journal=journal,
        )


def existing_dataset(destination: Any, path: str) -> Any:
    """The array at ``path`` in ``destination`` opened for writing (what a resume continues), or ``None``."""
    import altarr as aa

    try:
        return aa.open_dataset(destination, mode="r+", path=path)
    except FileNotFoundError:
        return None


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
    journal: Mapping[str, Any] | None = None,
) -> CopyResult:
    """Copy ``src`` (whose ``src[region]`` gives a region of ``dst``'s values) into the existing dataset
    ``dst`` unit by unit, skipping the units in ``done``, keeping the resume journal (plus ``journal``'s
    arguments) until the end; the end of :func:`copy_array` and of each pyramid level.
    """
    from ._threads import pmap

    done = set(done or ())
    units = copy_units(dst)
    journal = journal or {}
    _write_journal(dst, done, len(units), journal)
    result = CopyResult(dst, skipped=len(done), notes=list(notes or []))
    todo = [(i, r) for i, r in enumerate(units) if i not in done]
    if progress is not None and done:
        item = dst.dtype.itemsize
        progress(sum(math.prod(s.stop - s.start for s in units[i]) * item for i in done), len(done))

    def record(indices: list[int], nbytes: int) -> None:
        done.update(indices)
        result.written += len(indices)
        result.bytes += nbytes
        _write_journal(dst, done, len(units), journal)
        if progress is not None:
            progress(nbytes, len(indices))

    if run_units is not None:
        for i, nbytes in run_units(src, dst, todo):
            record([i], nbytes)
    else:
        workers = max(1, int(workers))
        for w in range(0, len(todo), workers):  # on ``workers`` threads, the pool size in force left alone
            wave = todo[w : w + workers]
            sizes = pmap(lambda item: copy_unit(src, dst, item[1]), wave, workers)
            record([i for i, _ in wave], sum(sizes))
    dst.store.delete(_journal_key(dst))
    return result


def copy_tree(
    source: Any,
    destination: Any,
    on_array: Callable[[str, Any], CopyResult],
    *,
    format: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
) -> list[tuple[str, CopyResult]]:
    """Copy a group and everything below it into ``destination``: groups with their attributes, each
    array by ``on_array(relative_path, dataset)`` (a :func:`copy_array` into ``destination``)."""
    import altarr as aa

    fmt = format or source.format
    try:  # an unknown format: create_group's MetadataError, before anything is written
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
            else:
                results.append((rel, on_array(rel, node)))

    walk(source, root, "")
    if is_consolidated(source) and cm.holder_name(fmt) is not None:  # a consolidated source stays so
        aa.consolidate_metadata(root)
    return results
