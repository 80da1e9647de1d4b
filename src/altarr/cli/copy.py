"""``altarr copy``: a dataset or a whole group between N5, Zarr v2 and Zarr v3, shard by shard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import UsageProblem, _open_node, _pyramid, app, err_console
from .pyramid import _copy_pyramid
from .running import _bar_reporter, _chunk_options, _cluster, _Interrupt


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
                options: dict[str, Any] = {
                    "chunks": chunks,
                    "shards": shards,
                    "codec": codec,
                    "overwrite": overwrite,
                }
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
