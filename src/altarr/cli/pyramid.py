"""``altarr pyramid``: multiscale pyramids built from an array or converted between layouts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import UsageProblem, _open_node, _pyramid, app, checked_option, err_console
from .running import _bar, _check_run, _chunk_options, _cluster, _Interrupt


def _copy_pyramid(pyramid: Any, destination: str, layout: str, interrupt: _Interrupt, **o: Any) -> Any:
    """``altarr copy`` of a pyramid: every level and the metadata, into the layout of ``--format``."""
    from altarr.multiscale.convert import convert_pyramid
    from altarr.transfer import CopyResult

    kw = _chunk_options(o["chunks"], o["shards"], len(pyramid.axes))
    from altarr.multiscale.layouts import get_layout

    into_n5 = get_layout(layout).format == "n5" and get_layout(pyramid.layout).format != "n5"
    if o["shards"] is None and into_n5 and any(lv.dataset.shards for lv in pyramid.levels):
        kw["shards"] = None  # plain N5, what every N5 reader opens (as for an array copied into N5)
        err_console.print("note: plain N5 written: shards dropped (--shards keeps them)", markup=False)
    total = sum(lv.dataset.nbytes for lv in pyramid.levels)
    with _bar(o["progress"], f"{pyramid.layout} -> {layout}", total, interrupt) as bar:
        out = convert_pyramid(
            pyramid,
            destination,
            layout=layout,
            compressor=o["codec"],
            overwrite=o["overwrite"],
            resume=o["resume"],
            workers=o["workers"],
            progress=bar,
            run_units=o.get("run_units"),
            **kw,
        )
    err_console.print(f"note: a pyramid ({pyramid.layout}, {len(out.levels)} levels) written as {layout}")
    return CopyResult(out.group, written=bar.units, bytes=bar.done)


def _numbers(text: str, ndim: int, what: str, kind: type = float) -> tuple[Any, ...]:
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
    with _bar(o["progress"], Path(destination).name, None, interrupt) as bar:
        out = build_pyramid(
            node,
            destination,
            layout=o["layout"],
            method=o["method"],
            levels=o["levels"],
            factors=steps,
            axes=o["axes"],
            scale=None if o["scale"] is None else _numbers(o["scale"], ndim, "--scale"),
            unit=o["unit"],
            **_chunk_options(o["chunks"], o["shards"], ndim),
            compressor=o["codec"],
            overwrite=o["overwrite"],
            resume=o["resume"],
            workers=o["workers"],
            progress=bar,
            run_units=o["run_units"],
        )
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
    with _Interrupt(destination) as interrupt:
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
            "codec": codec or "auto",
            "overwrite": overwrite,
            "resume": resume,
            "workers": workers,
            "progress": progress,
            "run_units": _cluster(scheduler),
        }
        out, moved = _pyramid_of(node, source, destination, interrupt, options)
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
