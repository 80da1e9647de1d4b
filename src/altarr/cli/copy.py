"""``altarr copy``: a dataset or a whole group between N5, Zarr v2 and Zarr v3, shard by shard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import UsageProblem, _open_node, _pyramid, app, checked_option, err_console
from .pyramid import _copy_pyramid
from .running import _bar, _check_run, _chunk_options, _cluster, _Interrupt


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
        str | None,
        typer.Option(
            "--codec",
            "--compressor",
            help="zstd:3, gzip:6, blosc:lz4:5, none... (default: zstd:3 for Zarr, gzip for N5)",
        ),
    ] = None,
    checksum: Annotated[
        bool | None,
        typer.Option(
            "--checksum/--no-checksum",
            help="a checksum in every Zarr v3 chunk (default: on; zstd's own or crc32c)",
        ),
    ] = None,
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
    from altarr.formats import FORMATS

    if format is not None and format not in FORMATS:
        raise UsageProblem(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    _check_run(workers, resume, overwrite)
    node = _open_node(source)
    options, pyramid = _checked_options(
        node, destination, format, chunks, shards, codec, checksum, resume, overwrite
    )
    run = {"overwrite": overwrite, "resume": resume, "workers": workers, "run_units": _cluster(scheduler)}
    given = {"chunks": chunks, "shards": shards, "compressor": codec or "auto", "progress": progress}
    t0 = time.perf_counter()
    arrays = _copy_node(node, pyramid, source, destination, format, options, given, run)
    seconds = time.perf_counter() - t0
    moved = sum(r.bytes for r in arrays)
    written = sum(r.written for r in arrays)
    skipped = sum(r.skipped for r in arrays)
    resumed = f", {skipped} already there" if skipped else ""
    what = f"{len(arrays)} array(s)"
    if pyramid is not None:
        what = f"a {pyramid.layout} pyramid of {len(pyramid.levels)} levels"
    print(
        f"copied {what} to {destination}: {written} shard(s) written{resumed}, "
        f"{moved:,} value bytes in {seconds:.2f} s ({moved / max(seconds, 1e-9) / 1e6:.1f} MB/s)"
    )


def _copy_node(
    node: Any,
    pyramid: Any,
    source: str,
    destination: str,
    format: str | None,
    options: Any,
    given: dict[str, Any],
    run: dict[str, Any],
) -> list[Any]:
    """Copy a dataset, a group's arrays or a ``pyramid``'s levels and metadata; the copies' results."""
    import altarr as aa
    from altarr.multiscale.build import layout_for_format
    from altarr.transfer import copy_array, copy_tree

    with _Interrupt(destination) as interrupt:

        def one_array(src: Any, path: str, label: str) -> Any:
            with _bar(given["progress"], label, src.nbytes, interrupt) as bar:
                result = copy_array(src, destination, path=path, progress=bar, **run, **options(src))
            for note in result.notes:
                err_console.print(f"note: {label}: {note}", markup=False)
            return result

        if pyramid is not None:  # every level and the metadata, into the layout of --format
            layout = layout_for_format(format, pyramid.layout)
            return [_copy_pyramid(pyramid, destination, layout, interrupt, **given, **run)]
        if isinstance(node, aa.Group):
            results = copy_tree(
                node,
                destination,
                lambda rel, src: one_array(src, rel, rel),
                format=format,
                overwrite=run["overwrite"],
                resume=run["resume"],
            )
            return [r for _, r in results]
        return [one_array(node, "", Path(source.rstrip("/")).name or source)]


#: ``altarr copy``'s options, as its messages name them
CLI_NAMES = {name: f"--{name}" for name in ("format", "chunks", "shards", "checksum")}
CLI_NAMES["compressor"] = "--codec"


def _checked_options(
    node: Any,
    destination: str,
    format: str | None,
    chunks: str | None,
    shards: str | None,
    codec: str | None,
    checksum: bool | None,
    resume: bool,
    overwrite: bool,
) -> Any:
    """Every array's copy arguments, checked before anything is written: a function giving a source
    array's keywords for ``copy_array``, and the pyramid ``node`` holds (``None``: none)."""
    import altarr as aa
    from altarr.copying import arrays_below
    from altarr.transfer import check_copies, parse_codec

    fmt = format or node.format
    if checksum and fmt != "zarr3":
        raise UsageProblem(f"--checksum applies to Zarr v3 destinations; {fmt} chunks carry none")
    if not (resume or overwrite) and "://" not in destination and Path(destination).exists():
        raise UsageProblem(
            f"{destination} exists: --overwrite replaces it, --resume continues a copy into it"
        )

    def options(src: Any) -> dict[str, Any]:
        kw = _chunk_options(chunks, shards, src.ndim)
        kw.update(format=format or src.format, compressor="auto" if codec is None else codec, names=CLI_NAMES)
        if checksum is not None and kw["format"] == "zarr3":
            kw["checksum"] = checksum
        return kw

    pyramid = _pyramid(node) if isinstance(node, aa.Group) else None
    arrays = [("", node)] if not isinstance(node, aa.Group) else [] if pyramid else arrays_below(node)
    if pyramid is not None:
        checked_option(parse_codec, codec, fmt, pyramid.levels[0].dtype)
    checked_option(check_copies, arrays, destination, options, resume)
    return options, pyramid
