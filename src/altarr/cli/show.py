"""``altarr show``: a 2-D slice of a dataset drawn to a PNG."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import typer

from .app import UsageProblem, _open_node, _pyramid, app


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


@dataclass
class Axis2D:
    """One axis of a drawn slice: its ``name`` and the coordinate of each row or column."""

    name: str
    coords: np.ndarray


def limits(
    values: np.ndarray, vmin: float | None, vmax: float | None, percentile: str | None
) -> tuple[float, float]:
    """The colour limits: ``vmin``/``vmax`` where given, else the ``percentile`` pair (``"1,99"``; one
    number ``p`` is ``p,100-p``) of the finite values, else their minimum and maximum.

    >>> limits(np.arange(101.0), None, None, "2"), limits(np.arange(5.0), 1, None, None)
    ((2.0, 98.0), (1.0, 4.0))
    """
    finite = values[np.isfinite(values)] if values.dtype.kind in "fc" else values.ravel()
    if percentile is not None:
        try:
            qs = [float(q) for q in percentile.split(",")]
        except ValueError:
            raise UsageProblem(f"--percentile must be LOW,HIGH such as 1,99, got {percentile!r}") from None
        qs = [qs[0], 100 - qs[0]] if len(qs) == 1 else qs
        if len(qs) != 2 or not 0 <= qs[0] < qs[1] <= 100:
            raise UsageProblem(
                f"--percentile must be LOW,HIGH with 0 <= LOW < HIGH <= 100, got {percentile!r}"
            )
        lo, hi = (float(v) for v in np.percentile(finite, qs)) if finite.size else (0.0, 1.0)
    else:
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    lo, hi = (lo if vmin is None else float(vmin)), (hi if vmax is None else float(vmax))
    if lo > hi:
        raise UsageProblem(f"the colour limits are reversed: {lo} > {hi} (--vmin/--vmax)")
    return (lo, lo + 1) if lo == hi else (lo, hi)


def render_png(
    values: np.ndarray,
    out: str | Path,
    *,
    cmap: str = "viridis",
    title: str = "",
    clim: tuple[float, float] | None = None,
    axes: tuple[Axis2D, Axis2D] | None = None,
    origin: Literal["upper", "lower"] = "upper",
) -> int:
    """Write a 2-D array as a PNG at a whole number of pixels per value (returned; the PNG's
    ``altarr-image`` metadata says left, top, scale), with labelled axes, a title and a colour bar.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    rows, cols = values.shape
    scale: int = max(1, min(-(-256 // max(rows, 1)), 4096 // max(cols, 1)))
    data = np.ma.masked_invalid(values.astype(np.float64))
    norm = Normalize(*(clim or limits(values, None, None, None)))
    axes = axes or (Axis2D("dim 0", np.arange(rows)), Axis2D("dim 1", np.arange(cols)))
    dpi, left, right, top, bottom = 100, 80, 130, 30, 50
    width, height = left + cols * scale + right, top + rows * scale + bottom
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_axes((left / width, bottom / height, cols * scale / width, rows * scale / height))
    image = ax.imshow(data, cmap=cmap, norm=norm, origin=origin, interpolation="nearest", aspect="auto")
    for axis, which, n in ((axes[1], ax.xaxis, cols), (axes[0], ax.yaxis, rows)):
        coords = axis.coords

        def label(pos: float, _: Any, coords: np.ndarray = coords, n: int = n) -> str:
            i = int(round(pos))
            return f"{coords[i]:.6g}" if 0 <= i < n and abs(pos - i) < 1e-6 else ""

        which.set_major_locator(MaxNLocator(nbins=6, integer=True))
        which.set_major_formatter(FuncFormatter(label))
    ax.set_xlabel(axes[1].name)
    ax.set_ylabel(axes[0].name)
    ax.tick_params(labelsize=7)
    if title:
        ax.set_title(title, fontsize=8)
    cax = fig.add_axes(
        ((left + cols * scale + 15) / width, bottom / height, 14 / width, rows * scale / height)
    )
    fig.colorbar(image, cax=cax).ax.tick_params(labelsize=7)
    box = f"{left},{top},{scale}"
    fig.savefig(str(out), dpi=dpi, metadata={"Software": f"altarr show, scale {scale}", "altarr-image": box})
    return scale


def _axes(path: str, node: Any, key: tuple[Any, ...], pyramid: Any, level: int) -> tuple[Axis2D, Axis2D]:
    """The two kept axes' names and coordinates (a pyramid's, a sibling coordinate array's, indices)."""
    names = list(node.dimension_names or node.attrs.get("_ARRAY_DIMENSIONS") or [None] * node.ndim)
    if pyramid is not None:
        names = [a.name for a in pyramid.axes]
    out = []
    for d, k in enumerate(key):
        if not isinstance(k, slice):
            continue
        index = np.arange(node.shape[d])[k]
        if pyramid is not None:
            coords = pyramid.levels[level].coords(d)[index]
        else:
            full = _sibling(path, names[d], node.shape[d])
            coords = index if full is None else full[index]
        out.append(Axis2D(names[d] or f"dim {d}", coords))
    return out[0], out[1]


def _sibling(path: str, name: str | None, length: int) -> np.ndarray | None:
    """The 1-D array ``name`` of ``length`` values beside the array at ``path``, or ``None``."""
    import altarr as aa

    parent = path.rstrip("/").rpartition("/")[0]
    if not name or not parent:
        return None
    try:
        coord = aa.open_dataset(parent, path=name)
    except aa.errors.AltarrError:
        return None
    return coord[...] if coord.shape == (length,) else None


def _origin(origin: str, rows: Axis2D) -> Literal["upper", "lower"]:
    if origin in ("upper", "lower"):
        return "upper" if origin == "upper" else "lower"
    latitude = rows.name.lower() in ("lat", "latitude") and len(rows.coords) > 1
    return "lower" if latitude and rows.coords[-1] > rows.coords[0] else "upper"


@app.command()
def show(
    path: Annotated[str, typer.Argument(help="a dataset")],
    index: Annotated[
        str,
        typer.Option(help="a selection leaving two dimensions, e.g. 10,:,: (default: the first 2-D plane)"),
    ] = "",
    output: Annotated[str, typer.Option("--output", "-o", help="the PNG to write")] = "slice.png",
    cmap: Annotated[str, typer.Option(help="a matplotlib colour map name (gray, magma...)")] = "viridis",
    vmin: Annotated[float | None, typer.Option(help="the value drawn with the map's first colour")] = None,
    vmax: Annotated[float | None, typer.Option(help="the value drawn with the map's last colour")] = None,
    percentile: Annotated[
        str | None, typer.Option(help="colour limits at these percentiles, e.g. 1,99 (microscopy)")
    ] = None,
    origin: Annotated[
        str, typer.Option(help="upper (row 0 at the top), lower, or auto: lower for an increasing latitude")
    ] = "auto",
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
    if origin not in ("auto", "upper", "lower"):
        raise UsageProblem(f"--origin must be auto, upper or lower, got {origin!r}")
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
    title = f"{Path(path).name}[{index}]" if index else Path(path).name
    level = 0
    if pyramid is not None:
        level, key = _pyramid_level(pyramid, key, size)
        node = pyramid.levels[level].dataset
        title += f" level {level}"
    values = node[key]
    if 0 in values.shape:
        raise UsageProblem(f"--index {index!r} selects an empty slice {values.shape}")
    axes = _axes(path, node, key, pyramid, level)
    clim = limits(values, vmin, vmax, percentile)
    scale = render_png(
        values, output, cmap=cmap, title=title, clim=clim, axes=axes, origin=_origin(origin, axes[0])
    )
    print(f"wrote {output}: a {values.shape[0]}x{values.shape[1]} slice at {scale} px per value")


def _pyramid_level(pyramid: Any, key: tuple[Any, ...], size: int) -> tuple[int, tuple[Any, ...]]:
    """The finest level whose part of the level-0 selection ``key`` is at most ``size`` a side, and
    ``key`` there."""
    if size < 1:
        raise UsageProblem(f"--size must be at least 1, got {size}")
    if any(isinstance(k, slice) and k.step not in (None, 1) for k in key):
        return 0, key
    for level in range(len(pyramid.levels)):
        at = pyramid.selection_at(key, level)
        if all(s.stop - s.start <= size for s in at if isinstance(s, slice)):
            return level, at
    return len(pyramid.levels) - 1, pyramid.selection_at(key, len(pyramid.levels) - 1)
