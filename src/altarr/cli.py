"""The ``altarr`` command line.

Commands (``altarr COMMAND --help`` shows each one's options and an example):

* ``altarr info PATH [--json]`` - format, shape, dtype, chunks, shards, codecs, fill value, dimension
  names, attributes, stored bytes and compression ratio of a dataset (or a group's attributes and
  children);
* ``altarr tree PATH`` - the group hierarchy, each array with its shape, dtype and format;
* ``altarr copy SRC DST`` - convert and re-chunk between N5, Zarr v2 and Zarr v3 (sharded), shard by
  shard, with a progress bar, ``--workers``, ``--resume`` and ``--scheduler`` (dask.distributed);
* ``altarr verify PATH`` - check every metadata document, shard index and chunk;
* ``altarr show PATH --index 10,:,: -o slice.png`` - render a 2-D slice with a colour bar;
* ``altarr demo`` - a guided tour that ends with the path of a PNG it wrote.

``altarr --version`` prints the version and whether the native kernel is active (and if not, why).
Errors are one line on stderr and a non-zero exit (2 for bad arguments, 1 otherwise, 130 when
interrupted); ``altarr --debug COMMAND`` shows the traceback instead.

Example:
    >>> from typer.testing import CliRunner
    >>> from altarr.cli import app
    >>> CliRunner().invoke(app, ["copy", "--help"]).exit_code
    0
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="altarr: chunked, compressed N-D arrays (N5, Zarr v2, Zarr v3 sharded) from the command line.",
)
console = Console(width=140, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)
_state = {"debug": False}


class UsageProblem(Exception):
    """A bad argument found after parsing (exit code 2, one line)."""


def _version(value: bool) -> None:
    """``--version``: the version, and whether the native kernel is active and, if not, why."""
    if value:
        import altarr

        print(f"altarr {altarr.__version__}\n{altarr.native_status()}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the full traceback of an error")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="print the version and the native kernel's state",
        ),
    ] = False,
) -> None:
    """altarr: chunked, compressed N-D arrays (N5, Zarr v2, Zarr v3 sharded) from the command line.

    Example: altarr info data.zarr --json
    """
    _state["debug"] = debug or _state["debug"]


def _chunk_region(coords: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, chunks, strict=True))


# --- opening ---------------------------------------------------------------------------------------------
def _open_node(path: str, mode: str = "r") -> Any:
    """The dataset or group at ``path``; a one-line error when there is none."""
    import altarr as aa
    from altarr.errors import AltarrError

    if "://" not in path and not Path(path).exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    try:
        return aa.open_dataset(path, mode=mode)
    except AltarrError as e:
        try:
            return aa.open_group(path, mode=mode)
        except AltarrError:
            raise e from None


def _pyramid(group: Any) -> Any:
    """The pyramid a group holds (:func:`altarr.open_multiscale`), or ``None``; also ``None`` for a
    BigDataViewer container of several setups or timepoints, which commands treat as the hierarchy it is
    (a copy copies every view's arrays and attributes)."""
    from altarr.multiscale import is_multiscale, open_multiscale

    ms = open_multiscale(group) if is_multiscale(group) else None
    return ms if ms is not None and ms.views == 1 else None


def _stored_bytes(store: Any, prefix: str) -> tuple[int, int]:
    total = objects = 0
    for key in store.list(prefix):
        size = store.size(key)
        if size is not None:
            total += size
            objects += 1
    return total, objects


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def describe(node: Any) -> dict[str, Any]:
    """What ``altarr info`` prints, as a JSON-able dict."""
    import altarr as aa

    if isinstance(node, aa.Group):
        children = []
        for name in node.keys():
            child = node[name]
            children.append({"name": name, "kind": "group" if isinstance(child, aa.Group) else "array"})
        doc = {
            "kind": "group",
            "format": node.format,
            "path": node.path or "/",
            "attributes": _jsonable(dict(node.attrs)),
            "children": children,
        }
        pyramid = _pyramid(node)
        if pyramid is not None:
            doc["multiscale"] = _jsonable(pyramid.summary())
        return doc
    ds = node
    from altarr.formats import get_format

    codecs = get_format(ds.format).codecs_json(ds.spec)
    stored, objects = _stored_bytes(ds.store, ds.path)
    return {
        "kind": "array",
        "format": ds.format,
        "path": ds.path or "/",
        "shape": list(ds.shape),
        "dtype": str(ds.dtype),
        "chunks": list(ds.chunks),
        "shards": list(ds.shards) if ds.shards else None,
        "shard_levels": [list(level) for level in ds.shard_levels],
        "codecs": _jsonable(codecs),
        "fill_value": _jsonable(ds.fill_value),
        "dimension_names": list(ds.dimension_names) if ds.dimension_names else None,
        "attributes": _jsonable(ds.attrs.asdict()),
        "nbytes": ds.nbytes,
        "stored_bytes": stored,
        "stored_objects": objects,
        "compression_ratio": round(ds.nbytes / stored, 3) if stored else None,
    }


@app.command()
def info(
    path: Annotated[str, typer.Argument(help="a dataset or group: folder, .zip or URL")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object instead of a table")] = False,
) -> None:
    """Describe a dataset (format, shape, dtype, chunks, shards, codecs, fill value, dimension names,
    attributes, stored bytes, compression ratio) or a group (attributes, children).

    Example: altarr info data.zarr --json
    """
    doc = describe(_open_node(path))
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    table = Table(show_header=False, box=None)
    for key, value in doc.items():
        if key == "stored_bytes":
            value = f"{value:,} bytes in {doc['stored_objects']:,} objects"
        elif key in ("stored_objects", "kind"):
            continue
        elif key == "nbytes":
            value = f"{value:,} bytes"
        elif isinstance(value, dict | list):
            value = json.dumps(value)
        table.add_row(key.replace("_", " "), "-" if value is None else str(value))
    console.print(f"{doc['kind']} {path}")
    console.print(table)


@app.command()
def tree(path: Annotated[str, typer.Argument(help="a group (or a single dataset)")]) -> None:
    """Print the group hierarchy with each array's shape, dtype and format.

    Example: altarr tree experiment.n5
    """
    from rich.tree import Tree

    import altarr as aa

    levels: dict[str, str] = {}  # store path of a pyramid level -> what it is in its pyramid

    def label(name: str, node: Any) -> str:
        if isinstance(node, aa.Group):
            pyramid = _pyramid(node)
            if pyramid is None:
                return f"{name}/ (group, {node.format})"
            for i, lv in enumerate(pyramid.levels):
                scale = ", ".join(f"{s:g}" for s in lv.scale)
                levels[lv.dataset.path] = f"; level {i}, factors {lv.factors}, scale ({scale})"
            return f"{name}/ (group, {node.format}; {pyramid.layout} pyramid of {len(pyramid.levels)} levels)"
        shards = f", shards {node.shards}" if node.shards else ""
        level = levels.get(node.path, "")
        return f"{name} {node.shape} {node.dtype} {node.format}, chunks {node.chunks}{shards}{level}"

    def walk(group: Any, branch: Tree) -> None:
        for name in group.keys():
            child = group[name]
            sub = branch.add(label(name, child))
            if isinstance(child, aa.Group):
                walk(child, sub)

    node = _open_node(path)
    root = Tree(label(path.rstrip("/"), node))
    if isinstance(node, aa.Group):
        walk(node, root)
    console.print(root)


# --- copy ------------------------------------------------------------------------------------------------
def _progress_bar(total: int, description: str) -> Any:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )


class _Interrupt:
    """SIGINT during a copy: the first one stops after the units in flight (their journal entries are
    written), a second one aborts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._old: Any = None

    def __enter__(self) -> _Interrupt:
        def handler(signum: int, frame: Any) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True

        try:
            self._old = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread (e.g. a test runner)
            self._old = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


@app.command()
def copy(
    source: Annotated[str, typer.Argument(help="the dataset or group to copy")],
    destination: Annotated[str, typer.Argument(help="where to write it")],
    format: Annotated[
        str | None, typer.Option("--format", help="zarr3, zarr2 or n5 (default: the source's)")
    ] = None,
    chunks: Annotated[
        str | None, typer.Option(help="destination chunk shape, e.g. 64,64,64 (default: the source's)")
    ] = None,
    shards: Annotated[
        str | None,
        typer.Option(
            help="destination shard shape, e.g. 256,256,256, or 'none' (default: the source's, dropped "
            "with a note when the format cannot hold them)"
        ),
    ] = None,
    codec: Annotated[
        str,
        typer.Option("--codec", "--compressor", help="zstd:3, gzip:6, blosc:lz4:5 or none (default zstd:3)"),
    ] = "zstd:3",
    overwrite: Annotated[bool, typer.Option(help="replace an existing destination")] = False,
    resume: Annotated[
        bool, typer.Option(help="continue an interrupted copy: skip the destination shards already written")
    ] = False,
    workers: Annotated[int, typer.Option(help="destination shards copied at once (memory: a few each)")] = 1,
    scheduler: Annotated[
        str | None,
        typer.Option(help="a dask.distributed scheduler address: one task per destination shard"),
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar on stderr")] = True,
) -> None:
    """Copy a dataset or a whole group between N5, Zarr v2 and Zarr v3, re-chunking and re-sharding on the
    way, one destination shard at a time.

    Example: altarr copy data.n5 data.zarr --format zarr3 --chunks 64,64,64 --shards 256,256,256
    --codec zstd:5 --workers 2
    """
    import altarr as aa
    from altarr.transfer import FORMATS, copy_array, copy_tree, parse_codec

    if format is not None and format not in FORMATS:
        raise UsageProblem(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    if workers < 1:
        raise UsageProblem(f"--workers must be at least 1, got {workers}")
    if resume and overwrite:
        raise UsageProblem("--resume and --overwrite contradict each other")
    parse_codec(codec, "zarr3", "u1")  # a bad codec fails before anything is written
    node = _open_node(source)
    run_units = _cluster(scheduler, source)
    t0 = time.perf_counter()
    with _Interrupt() as interrupt:

        def one_array(src: Any, dest: Any, path: str, label: str) -> Any:
            fmt = format or src.format
            kw = _chunk_options(chunks, shards, src.ndim)
            report, stop = _bar_reporter(progress, label, src.nbytes, interrupt)
            try:
                result = copy_array(
                    src,
                    dest,
                    format=fmt,
                    compressor=parse_codec(codec, fmt, src.dtype),
                    overwrite=overwrite,
                    resume=resume,
                    workers=workers,
                    path=path,
                    progress=report,
                    run_units=run_units,
                    **kw,
                )
            finally:
                stop()
            for note in result.notes:
                err_console.print(f"note: {label}: {note}")
            return result

        def _copy_node(node: Any) -> list[Any]:
            pyramid = _pyramid(node) if isinstance(node, aa.Group) else None
            if pyramid is not None:  # every level and the metadata, into the layout of --format
                from altarr.multiscale.convert import layout_for_format

                layout = layout_for_format(format, pyramid.layout)
                options = {"chunks": chunks, "shards": shards, "codec": codec, "overwrite": overwrite}
                options |= {
                    "resume": resume,
                    "workers": workers,
                    "progress": progress,
                    "run_units": run_units,
                }
                return [_copy_pyramid(pyramid, destination, layout, interrupt, **options)]
            if isinstance(node, aa.Group):
                results = copy_tree(
                    node,
                    destination,
                    format=format,
                    overwrite=overwrite,
                    resume=resume,
                    on_array=lambda rel, src: one_array(src, destination, rel, rel),
                )
                arrays = [r for _, r in results]
            else:
                arrays = [one_array(node, destination, "", Path(source.rstrip("/")).name or source)]
            return arrays

        try:
            arrays = _copy_node(node)
        except KeyboardInterrupt:
            err_console.print(
                f"interrupted: the shards written so far are complete; run the same command with --resume "
                f"to continue the copy into {destination}",
                markup=False,
            )
            raise typer.Exit(code=130) from None
    seconds = time.perf_counter() - t0
    moved = sum(r.bytes for r in arrays)
    written = sum(r.written for r in arrays)
    skipped = sum(r.skipped for r in arrays)
    resumed = f", {skipped} already there" if skipped else ""
    print(
        f"copied {len(arrays)} array(s) to {destination}: {written} shard(s) written{resumed}, "
        f"{moved:,} value bytes in {seconds:.2f} s ({moved / max(seconds, 1e-9) / 1e6:.1f} MB/s)"
    )


# --- pyramids ----------------------------------------------------------------------------------------------
def _cluster(scheduler: str | None, source: str) -> Any:
    """The ``run_units`` of ``--scheduler ADDRESS`` (one task per destination shard), or ``None``."""
    if scheduler is None:
        return None
    from altarr.integrations.dask import cluster_runner

    return cluster_runner(scheduler, source)


def _chunk_options(chunks: str | None, shards: str | None, ndim: int) -> dict[str, Any]:
    """``--chunks`` and ``--shards`` (``none`` for none) as the keywords of a copy; absent when not given."""
    from altarr.transfer import parse_shape

    kw: dict[str, Any] = {}
    if chunks is not None:
        kw["chunks"] = parse_shape(chunks, ndim, "--chunks")
    if shards is not None:
        kw["shards"] = None if shards.lower() == "none" else parse_shape(shards, ndim, "--shards")
    return kw


def _bar_reporter(enabled: bool, label: str, total: int | None, interrupt: _Interrupt) -> tuple[Any, Any]:
    """A ``progress(value_bytes, units)`` that drives a progress bar on stderr (started on the first
    report), and the function that stops the bar."""
    bar: dict[str, Any] = {}

    def report(nbytes: int, units: int) -> None:
        if enabled:
            if not bar:
                bar["bar"] = _progress_bar(total or 0, label)
                bar["bar"].start()
                bar["task"] = bar["bar"].add_task(label, total=total)
            bar["bar"].advance(bar["task"], nbytes)
        interrupt.check()

    return report, lambda: bar and bar["bar"].stop()


def _copy_pyramid(pyramid: Any, destination: str, layout: str, interrupt: _Interrupt, **o: Any) -> Any:
    """``altarr copy`` of a pyramid: every level and the metadata, into the layout of ``--format``."""
    from altarr.multiscale.convert import convert_pyramid
    from altarr.transfer import CopyResult

    kw = _chunk_options(o["chunks"], o["shards"], len(pyramid.axes))
    total = sum(lv.dataset.nbytes for lv in pyramid.levels)
    report, stop = _bar_reporter(o["progress"], f"{pyramid.layout} -> {layout}", total, interrupt)
    moved = {"bytes": 0, "units": 0}

    def counted(nbytes: int, units: int) -> None:
        moved["bytes"] += nbytes
        moved["units"] += units
        report(nbytes, units)

    try:
        out = convert_pyramid(
            pyramid,
            destination,
            layout=layout,
            compressor=o["codec"],
            overwrite=o["overwrite"],
            resume=o["resume"],
            workers=o["workers"],
            progress=counted,
            run_units=o.get("run_units"),
            **kw,
        )
    finally:
        stop()
    err_console.print(f"note: a pyramid ({pyramid.layout}, {len(out.levels)} levels) written as {layout}")
    return CopyResult(out.group, written=moved["units"], bytes=moved["bytes"])


def _numbers(text: str | None, ndim: int, what: str, kind: type = float) -> tuple[Any, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(kind(x) for x in text.split(","))
    except ValueError:
        raise UsageProblem(f"{what} must be {ndim} comma-separated numbers, got {text!r}") from None
    if len(values) != ndim:
        raise UsageProblem(f"{what} {text!r} must give {ndim} numbers, one per axis")
    return values


def _build_pyramid(node: Any, destination: str, interrupt: _Interrupt, **o: Any) -> tuple[Any, int]:
    """``altarr pyramid`` of an array: the options parsed, the build run with a progress bar."""
    from altarr.multiscale import build_pyramid

    ndim = node.ndim
    steps = (
        None
        if o["factors"] is None
        else [_numbers(s, ndim, "--factors", int) for s in o["factors"].split("/")]
    )
    report, stop = _bar_reporter(o["progress"], Path(destination).name, None, interrupt)
    moved = [0]

    def counted(nbytes: int, units: int) -> None:
        moved[0] += nbytes
        report(nbytes, units)

    try:
        out = build_pyramid(
            node,
            destination,
            layout=o["layout"],
            method=o["method"],
            levels=o["levels"],
            factors=steps,
            axes=o["axes"],
            scale=_numbers(o["scale"], ndim, "--scale"),
            unit=o["unit"],
            **_chunk_options(o["chunks"], o["shards"], ndim),
            compressor=o["codec"],
            overwrite=o["overwrite"],
            resume=o["resume"],
            workers=o["workers"],
            progress=counted,
            run_units=o["run_units"],
        )
    finally:
        stop()
    return out, moved[0]


@app.command()
def pyramid(
    source: Annotated[str, typer.Argument(help="an array (or a pyramid, to convert it)")],
    destination: Annotated[str, typer.Argument(help="where to write the pyramid's group")],
    layout: Annotated[
        str, typer.Option(help="ome-zarr (0.5, Zarr v3), ome-zarr-0.4 (Zarr v2), n5-viewer or bdv (N5)")
    ] = "ome-zarr",
    method: Annotated[str, typer.Option(help="mean (intensities), mode or stride (labels)")] = "mean",
    levels: Annotated[
        int | None, typer.Option(help="number of levels, level 0 included (default: until one chunk)")
    ] = None,
    factors: Annotated[
        str | None,
        typer.Option(
            help="each level's factors relative to the one above, e.g. 1,2,2/2,2,2 (default: planned)"
        ),
    ] = None,
    axes: Annotated[
        str | None, typer.Option(help="axis names, e.g. zyx or c,y,x (default zyx for 3-D)")
    ] = None,
    scale: Annotated[str | None, typer.Option(help="level 0's voxel size per axis, e.g. 2,0.5,0.5")] = None,
    unit: Annotated[str | None, typer.Option(help="unit of the spatial axes, e.g. micrometer")] = None,
    chunks: Annotated[str | None, typer.Option(help="chunk shape of every level, e.g. 64,64,64")] = None,
    shards: Annotated[str | None, typer.Option(help="shard shape of every level, e.g. 256,256,256")] = None,
    codec: Annotated[str, typer.Option("--codec", help="zstd:3, gzip:6, blosc:lz4:5 or none")] = "zstd:3",
    overwrite: Annotated[bool, typer.Option(help="replace an existing destination")] = False,
    resume: Annotated[bool, typer.Option(help="continue an interrupted build")] = False,
    workers: Annotated[int, typer.Option(help="destination shards written at once")] = 1,
    progress: Annotated[bool, typer.Option(help="show a progress bar on stderr")] = True,
    scheduler: Annotated[
        str | None,
        typer.Option(help="a dask.distributed scheduler address: one task per destination shard"),
    ] = None,
) -> None:
    """Build a multiscale pyramid of an array (OME-Zarr 0.5/0.4, or N5 for n5-viewer / BigDataViewer), each
    level written shard by shard; given a pyramid, convert it into --layout.

    Example: altarr pyramid stack.n5 stack.ome.zarr --scale 2,0.5,0.5 --unit micrometer --shards 256,256,256
    """
    from altarr.multiscale import METHODS
    from altarr.multiscale.layouts import get_layout
    from altarr.transfer import parse_codec

    get_layout(layout)
    if method not in METHODS:
        raise UsageProblem(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if workers < 1:
        raise UsageProblem(f"--workers must be at least 1, got {workers}")
    if resume and overwrite:
        raise UsageProblem("--resume and --overwrite contradict each other")
    parse_codec(codec, "zarr3", "u1")
    node = _open_node(source)
    t0 = time.perf_counter()
    with _Interrupt() as interrupt:
        try:
            options = {
                "layout": layout,
                "method": method,
                "levels": levels,
                "factors": factors,
                "axes": axes,
                "scale": scale,
                "unit": unit,
                "chunks": chunks,
                "shards": shards,
                "codec": codec,
                "overwrite": overwrite,
                "resume": resume,
                "workers": workers,
                "progress": progress,
                "run_units": _cluster(scheduler, source),
            }
            out, moved = _pyramid_of(node, source, destination, interrupt, options)
        except KeyboardInterrupt:
            err_console.print(
                f"interrupted: run the same command with --resume to continue into {destination}",
                markup=False,
            )
            raise typer.Exit(code=130) from None
    seconds = time.perf_counter() - t0
    shapes = ", ".join("x".join(map(str, lv.shape)) for lv in out.levels)
    print(
        f"wrote a {out.layout} pyramid of {len(out.levels)} levels ({shapes}) to {destination}: "
        f"{moved:,} value bytes in {seconds:.2f} s"
    )


def _pyramid_of(node: Any, source: str, destination: str, interrupt: _Interrupt, o: dict[str, Any]) -> Any:
    """``altarr pyramid``'s work: a pyramid converted into ``--layout``, an array built into one."""
    import altarr as aa

    if not isinstance(node, aa.Group):
        return _build_pyramid(node, destination, interrupt, **o)
    ms = _pyramid(node)
    if ms is None:
        raise UsageProblem(f"{source} is a group and not a pyramid; give an array (see altarr tree {source})")
    if any(o[k] is not None for k in ("levels", "factors", "axes", "scale", "unit")) or o["method"] != "mean":
        raise UsageProblem(
            "converting a pyramid keeps its levels: drop --method/--levels/--factors/--axes/--scale/--unit"
        )
    options = {k: v for k, v in o.items() if k != "layout"}
    result = _copy_pyramid(ms, destination, o["layout"], interrupt, **options)
    return aa.open_multiscale(result.dataset), result.bytes


# --- verify ----------------------------------------------------------------------------------------------
@app.command()
def verify(
    path: Annotated[str, typer.Argument(help="a dataset or group")],
    repair: Annotated[bool, typer.Option(help="remove temporary files left by interrupted writes")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Check every metadata document, shard index and chunk; print each problem with its key and a
    summary. Exit code 0 only when clean.

    Example: altarr verify data.zarr
    """
    import altarr as aa

    if "://" not in path and not Path(path).exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    report = aa.verify(path, repair=repair)
    if as_json:
        doc = {
            "ok": report.ok,
            "checked": report.checked,
            "problems": [
                {"key": p.key, "kind": p.kind, "message": p.message, "chunk": p.chunk}
                for p in report.problems
            ],
            "stale_temp_files": list(report.stale_temp_files),
        }
        print(json.dumps(_jsonable(doc), indent=2))
    else:
        print(str(report))
    if not report.ok:
        raise typer.Exit(code=1)


# --- show ------------------------------------------------------------------------------------------------
def parse_index(text: str, ndim: int) -> tuple[Any, ...]:
    """``"10,:,2:8"`` as a selection tuple: integers, ``:``, ``a:b`` and ``a:b:c``, one per dimension
    (missing trailing dimensions are ``:``).

    >>> parse_index("10,:,2:8", 3)
    (10, slice(None, None, None), slice(2, 8, None))
    """
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if len(parts) > ndim:
        raise UsageProblem(f"--index {text!r} has {len(parts)} entries for a {ndim}-d array")
    out: list[Any] = []
    for p in parts:
        try:
            if ":" in p:
                bits = p.split(":")
                if len(bits) > 3:
                    raise ValueError
                out.append(slice(*(int(b) if b else None for b in bits)))
            else:
                out.append(int(p))
        except ValueError:
            raise UsageProblem(f"--index entry {p!r} is not an integer or a slice like 2:8") from None
    return tuple(out) + (slice(None),) * (ndim - len(out))


def render_png(values: np.ndarray, out: str | Path, *, cmap: str = "viridis", title: str = "") -> int:
    """Write a 2-D array as a PNG: the values at ``scale`` pixels per element (nearest, unresampled), in
    colour map ``cmap``, with a labelled colour bar to the right. Returns the scale.

    The image occupies the top-left ``rows * scale`` by ``cols * scale`` pixels of the PNG, so the PNG's
    height is exactly the slice's rows times the scale.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    rows, cols = values.shape
    scale = max(1, min(-(-256 // max(rows, 1)), 4096 // max(cols, 1)))
    data = np.ma.masked_invalid(values.astype(np.float64))
    finite = data.compressed()
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if lo == hi:
        hi = lo + 1
    norm = Normalize(lo, hi)
    rgba = colormaps[cmap](norm(data), bytes=True)
    rgba = np.repeat(np.repeat(rgba, scale, axis=0), scale, axis=1)
    dpi = 100
    height = rows * scale
    bar = 110
    fig = Figure(figsize=((cols * scale + bar) / dpi, height / dpi), dpi=dpi)
    fig.figimage(rgba, xo=0, yo=0, origin="upper")
    width = cols * scale + bar
    cax = fig.add_axes((cols * scale / width + 12 / width, 0.08, 14 / width, 0.84))
    cb = fig.colorbar(ScalarMappable(norm=norm, cmap=colormaps[cmap]), cax=cax)
    cb.ax.tick_params(labelsize=7)
    if title:
        cb.set_label(title, fontsize=7)
    fig.savefig(str(out), dpi=dpi, metadata={"Software": f"altarr show, scale {scale}"})
    return scale


@app.command()
def show(
    path: Annotated[str, typer.Argument(help="a dataset")],
    index: Annotated[
        str,
        typer.Option(help="a selection leaving two dimensions, e.g. 10,:,: (default: the first 2-D plane)"),
    ] = "",
    output: Annotated[str, typer.Option("--output", "-o", help="the PNG to write")] = "slice.png",
    cmap: Annotated[str, typer.Option(help="a matplotlib colour map name")] = "viridis",
    size: Annotated[
        int, typer.Option(help="a pyramid: the finest level whose slice is at most this many values a side")
    ] = 1024,
) -> None:
    """Render a 2-D slice of a dataset as a PNG with a colour map and a colour bar. Given a pyramid, the
    --index is in level 0's voxels and the slice comes from the finest level that fits --size.

    Example: altarr show data.zarr --index 10,:,: -o slice.png
    """
    import altarr as aa

    try:
        from matplotlib import colormaps
    except ImportError:
        raise UsageProblem("altarr show needs matplotlib: pip install 'altarr[show]'") from None
    if cmap not in colormaps:
        raise UsageProblem(f"unknown colour map {cmap!r} (try viridis, magma, gray)")
    node = _open_node(path)
    pyramid = _pyramid(node) if isinstance(node, aa.Group) else None
    if not isinstance(node, aa.Dataset) and pyramid is None:
        raise UsageProblem(f"{path} is a group; show needs a dataset or a pyramid (see altarr tree {path})")
    if pyramid is not None:
        node = pyramid.levels[0].dataset
    if not index and node.ndim > 2:
        index = ",".join(["0"] * (node.ndim - 2))
    key = parse_index(index, node.ndim)
    kept = sum(isinstance(k, slice) for k in key)
    if kept != 2:
        raise UsageProblem(f"--index {index!r} leaves {kept} dimensions of {node.shape}; it must leave 2")
    for d, (k, n) in enumerate(zip(key, node.shape, strict=True)):
        if isinstance(k, int) and not -n <= k < n:
            raise UsageProblem(f"--index {index!r}: {k} is outside dimension {d} of length {n}")
    title = f"{Path(path).name}[{index}]"
    if pyramid is not None:
        level, key = _pyramid_level(pyramid, key, size)
        node = pyramid.levels[level].dataset
        title += f" level {level}"
    values = node[key]
    if 0 in values.shape:
        raise UsageProblem(f"--index {index!r} selects an empty slice {values.shape}")
    scale = render_png(values, output, cmap=cmap, title=title)
    print(f"wrote {output}: a {values.shape[0]}x{values.shape[1]} slice at {scale} px per value")


def _pyramid_level(pyramid: Any, key: tuple[Any, ...], size: int) -> tuple[int, tuple[Any, ...]]:
    """The finest level of ``pyramid`` whose part of ``key`` (a level-0 selection) is at most ``size``
    values a side, and ``key`` at that level. Slices with a step are read from level 0."""
    if size < 1:
        raise UsageProblem(f"--size must be at least 1, got {size}")
    if any(isinstance(k, slice) and k.step not in (None, 1) for k in key):
        return 0, key
    for level in range(len(pyramid.levels)):
        at = pyramid.selection_at(key, level)
        if all(s.stop - s.start <= size for s in at if isinstance(s, slice)):
            return level, at
    return len(pyramid.levels) - 1, pyramid.selection_at(key, len(pyramid.levels) - 1)


# --- demo ------------------------------------------------------------------------------------------------
@app.command()
def demo(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="where to write (default: a new temporary folder)")
    ] = None,
) -> None:
    """A guided tour: write a small sharded Zarr v3 dataset, read it back chunk by chunk, convert it to
    N5 and Zarr v2, read it lazily, and draw a slice to a PNG. Every step prints its store requests.

    Example: altarr demo --dir /tmp/altarr-demo
    """
    import altarr as aa
    from altarr.transfer import copy_array

    tmp = Path(tempfile.mkdtemp(prefix="altarr-demo-")) if directory is None else directory
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "demo.zarr"
    shape, chunks, shards = (120, 160, 200), (20, 32, 40), (60, 64, 80)
    console.print("[bold]altarr demo[/bold]")
    console.print(
        f"1. The block engine. A {shape} uint16 array, stored as Zarr v3 in shards of {shards} "
        f"holding chunks of {chunks} (zstd), at {path}.\n"
        "   Each row below is one call; 'reads'/'writes' count the store requests it made."
    )
    z, y, x = np.indices(shape, dtype=np.uint16)
    values = (z // 4 * 100 + y // 8 * 10 + x // 16).astype(np.uint16)  # smooth, so zstd has work to do
    ds = aa.create_dataset(
        str(path),
        shape=shape,
        dtype="uint16",
        chunks=chunks,
        shards=shards,
        compressor="zstd",
        attributes={"description": "altarr demo"},
        dimension_names=["z", "y", "x"],
        overwrite=True,
    )
    stats = ds.store.stats
    table = Table("step", "reads", "bytes read", "writes", "bytes written", "ms", "check")
    failures = 0

    def step(name: str, action: Callable[[], Any], check: Callable[[Any], str]) -> None:
        nonlocal failures
        stats.reset()
        t = time.perf_counter()
        result = action()
        seconds = time.perf_counter() - t
        counts = stats.as_dict()
        note = check(result)
        failures += note.startswith("MISMATCH")
        table.add_row(
            name,
            str(counts["reads"]),
            f"{counts['bytes_read']:,}",
            str(counts["writes"]),
            f"{counts['bytes_written']:,}",
            f"{seconds * 1e3:.1f}",
            note,
        )

    def chunks_equal(wanted: list[tuple[int, ...]]) -> Callable[[list], str]:
        def check(got: list) -> str:
            ok = all(
                a is not None and np.array_equal(a, values[_chunk_region(w, chunks)])
                for w, a in zip(wanted, got, strict=True)
            )
            return "equal" if ok else "MISMATCH"

        return check

    def write_all() -> None:
        ds[...] = values

    step(
        "write the whole array", write_all, lambda _: f"{len(list(ds.store.list(ds.path))) - 1} shard objects"
    )
    same_shard = [(0, 0, 0), (0, 1, 1), (1, 0, 1), (2, 1, 0)]
    step("read_chunks: 4 chunks of 1 shard", lambda: ds.read_chunks(same_shard), chunks_equal(same_shard))
    spread = [(0, 0, 0), (3, 2, 3), (5, 4, 4), (2, 3, 1)]
    step("read_chunks: 1 chunk in each of 4 shards", lambda: ds.read_chunks(spread), chunks_equal(spread))
    step(
        "again: the shard indexes are cached",
        lambda: ds.read_chunks(spread),
        lambda got: chunks_equal(spread)(got) + ", no index read",
    )
    region = (slice(10, 50), slice(30, 90), slice(150, None))
    step(
        "region read ds[10:50, 30:90, 150:]",
        lambda: ds[region],
        lambda got: "equal" if np.array_equal(got, values[region]) else "MISMATCH",
    )
    values[_chunk_region((0, 0, 0), chunks)] = 7
    step(
        "write_chunks: 1 chunk into an existing shard",
        lambda: ds.write_chunks([(0, 0, 0)], [np.full(chunks, 7, dtype=np.uint16)]),
        lambda _: "1 read + 1 write, siblings kept as bytes",
    )
    step("delete_chunks: 1 chunk", lambda: ds.delete_chunks([(5, 4, 4)]), lambda r: f"existed={r[0]}")
    values[_chunk_region((5, 4, 4), chunks)] = 0
    step(
        "read the deleted chunk",
        lambda: ds.read_chunks([(5, 4, 4)]),
        lambda got: "None" if got[0] is None else "MISMATCH: still there",
    )
    console.print(table)
    stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    console.print(f"   {values.nbytes:,} bytes of values are stored in {stored:,} bytes on disk.\n")

    console.print("2. Converting between formats (what `altarr copy` does), one destination shard at a time:")
    conv = Table("copy", "written", "source reads", "destination writes", "ms", "check")
    for fmt, name, shard_arg in [("n5", "demo.n5", "same"), ("zarr2", "demo-v2.zarr", "same")]:
        stats.reset()
        t = time.perf_counter()
        result = copy_array(ds, str(tmp / name), format=fmt, shards=shard_arg, overwrite=True)
        seconds = time.perf_counter() - t
        dst = result.dataset
        same = np.array_equal(dst[...], values)
        failures += not same
        conv.add_row(
            f"zarr3 -> {fmt} ({name})",
            f"{result.written} shards" if dst.shards else f"{result.written} blocks of chunks (no shards)",
            str(stats.as_dict()["reads"]),
            str(dst.store.stats.as_dict()["writes"]),
            f"{seconds * 1e3:.0f}",
            "equal" if same else "MISMATCH",
        )
    console.print(conv)
    console.print("   Zarr v2 cannot hold shards, so that copy keeps the chunks and drops the shards.\n")

    console.print("3. Lazy arrays: aa.open(path) reads nothing until values are needed.")
    lazy = aa.open(str(tmp / "demo.n5"))
    selection = (slice(30, 34), slice(None), slice(100, 180))
    plan = aa.plan(lazy, *selection)
    console.print(
        f"   The plan for x[30:34, :, 100:180] touches {len(plan)} chunks "
        f"({int(plan['nbytes'].sum()):,} decoded bytes), computed without reading:"
    )
    console.print("   " + plan.head(3).to_string(index=False).replace("\n", "\n   "))
    t = time.perf_counter()
    mean = float(lazy[selection].mean())
    lazy_stats = aa.stats(lazy)
    seconds = time.perf_counter() - t
    ok = math.isclose(mean, float(values[selection].mean()))
    failures += not ok
    console.print(
        f"   mean of that selection = {mean:.2f} ({'equal' if ok else 'MISMATCH'}), read in "
        f"{lazy_stats['fetch_calls']} fetch call(s) of {lazy_stats['chunks_fetched']} chunks, "
        f"{seconds * 1e3:.0f} ms\n"
    )

    png = tmp / "demo-slice.png"
    try:
        render_png(values[60], png, title="demo.zarr[60, :, :]")
        console.print(f"4. A slice drawn with a colour bar (altarr show {path} --index 60,:,: -o {png}):")
        console.print(str(png))
    except ImportError:
        console.print("4. (install matplotlib to draw a slice: pip install 'altarr[show]')")
    if failures:
        raise typer.Exit(code=1)


# --- entry point -----------------------------------------------------------------------------------------
def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    first = text.splitlines()[0]
    return first if isinstance(e, UsageProblem | FileNotFoundError) else f"{type(e).__name__}: {first}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``altarr`` console script: one-line errors, a traceback only with ``--debug``."""
    args = list(sys.argv[1:] if argv is None else argv)
    _state["debug"] = "--debug" in args or os.environ.get("ALTARR_DEBUG", "") not in ("", "0")
    try:
        code = app(args=args, prog_name="altarr", standalone_mode=False)
    except (KeyboardInterrupt, _click_exception("Abort")):
        err_console.print("interrupted (a copy can continue with --resume)", markup=False)
        code = 130
    except _click_exception("ClickException") as e:  # bad arguments, as parsed by typer (click)
        message = e.format_message()
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `altarr`: the help is what was asked for
            print(message)
            code = 0
        else:
            err_console.print(f"error: {message.splitlines()[0]} (see altarr --help)", markup=False)
            code = e.exit_code
    except UsageProblem as e:
        if _state["debug"]:
            raise
        err_console.print(f"error: {_one_line(e)}", markup=False)
        code = 2
    except Exception as e:
        if _state["debug"]:
            raise
        err_console.print(f"error: {_one_line(e)}", markup=False)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


def _click_exception(name: str) -> type[BaseException]:
    """The click exception class ``name`` that typer raises (typer bundles its own click)."""
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            return getattr(__import__(module, fromlist=[name]), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"no click exception class {name}")


if __name__ == "__main__":
    main()
