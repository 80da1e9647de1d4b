"""``altarr pyramid``: multiscale pyramids built from an array or converted between layouts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import UsageProblem, _open_node, _pyramid, app, checked_option, err_console
from .running import _bar, _check_run, _chunk_options, _cluster, _Interrupt, _numbers


def _copy_pyramid(pyramid: Any, destination: str, layout: str, interrupt: _Interrupt, **run: Any) -> Any:
    """``altarr copy`` of a pyramid: every level and the metadata, into the layout of ``--format``;
    ``run``: ``chunks``, ``shards``, ``progress`` and :func:`~altarr.convert_pyramid`'s keywords."""
    from altarr.multiscale.build import convert_pyramid
    from altarr.multiscale.layouts import get_layout
    from altarr.transfer import CopyResult

    shards = run.pop("shards")
    kw = _chunk_options(run.pop("chunks"), shards, len(pyramid.axes))
    into_n5 = get_layout(layout).format == "n5" and get_layout(pyramid.layout).format != "n5"
    if shards is None and into_n5 and any(lv.dataset.shards for lv in pyramid.levels):
        kw["shards"] = None  # plain N5, what every N5 reader opens (as for an array copied into N5)
        err_console.print("note: plain N5 written: shards dropped (--shards keeps them)", markup=False)
    total = sum(lv.dataset.nbytes for lv in pyramid.levels)
    with _bar(run.pop("progress"), f"{pyramid.layout} -> {layout}", total, interrupt) as bar:
        out = convert_pyramid(pyramid, destination, layout=layout, progress=bar, **run, **kw)
    err_console.print(f"note: a pyramid ({pyramid.layout}, {len(out.levels)} levels) written as {layout}")
    return CopyResult(out.group, written=bar.units, bytes=bar.done)


def _build_pyramid(node: Any, destination: str, interrupt: _Interrupt, **o: Any) -> tuple[Any, int]:
    """``altarr pyramid`` of an array: the options parsed, the build run with a progress bar."""
    from altarr.multiscale import build_pyramid

    ndim = node.ndim
    factors, scale = o.pop("factors"), o.pop("scale")
    o["factors"] = None if factors is None else [_numbers(f, ndim, "--factors") for f in factors.split("/")]
    o["scale"] = None if scale is None else _numbers(scale, ndim, "--scale", float)
    o.update(_chunk_options(o.pop("chunks"), o.pop("shards"), ndim))
    with _bar(o.pop("progress"), Path(destination).name, None, interrupt) as bar:
        out = build_pyramid(node, destination, progress=bar, **o)
    return out, bar.done


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
    codec: Annotated[
        str | None,
        typer.Option(
            "--codec", help="zstd:3, gzip:6, blosc:lz4:5, none... (default: zstd:3 for Zarr, gzip for N5)"
        ),
    ] = None,
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
    import altarr as aa
    from altarr.multiscale import METHODS
    from altarr.multiscale.layouts import get_layout
    from altarr.transfer import parse_codec

    fmt = checked_option(get_layout, layout).format
    if method not in METHODS:
        raise UsageProblem(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    _check_run(workers, resume, overwrite)
    checked_option(parse_codec, codec, fmt, "u1")  # a bad codec: one line, before anything is written
    node = _open_node(source)
    t0 = time.perf_counter()
    run = {"compressor": codec or "auto", "overwrite": overwrite, "resume": resume, "workers": workers}
    given = {"chunks": chunks, "shards": shards, "progress": progress}
    build = {
        "method": method,
        "levels": levels,
        "factors": factors,
        "axes": axes,
        "scale": scale,
        "unit": unit,
    }
    with _Interrupt(destination) as interrupt:
        run["run_units"] = _cluster(scheduler)
        if not isinstance(node, aa.Group):
            out, moved = _build_pyramid(node, destination, interrupt, layout=layout, **build, **given, **run)
        else:
            out, moved = _convert(node, source, destination, interrupt, build, layout=layout, **given, **run)
    seconds = time.perf_counter() - t0
    shapes = ", ".join("x".join(map(str, lv.shape)) for lv in out.levels)
    print(
        f"wrote a {out.layout} pyramid of {len(out.levels)} levels ({shapes}) to {destination}: "
        f"{moved:,} value bytes in {seconds:.2f} s"
    )


def _convert(node: Any, source: str, destination: str, interrupt: _Interrupt, build: dict, **o: Any) -> Any:
    """``altarr pyramid`` of a pyramid: converted into ``--layout``; the build options refused."""
    import altarr as aa

    ms = _pyramid(node)
    if ms is None:
        raise UsageProblem(f"{source} is a group and not a pyramid; give an array (see altarr tree {source})")
    if any(v is not None for k, v in build.items() if k != "method") or build["method"] != "mean":
        raise UsageProblem(
            "converting a pyramid keeps its levels: drop --method/--levels/--factors/--axes/--scale/--unit"
        )
    result = _copy_pyramid(ms, destination, o.pop("layout"), interrupt, **o)
    return aa.open_multiscale(result.dataset), result.bytes
