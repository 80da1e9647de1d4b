"""``altarr show``: a 2-D slice of a dataset drawn to a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    scale: int = max(1, min(-(-256 // max(rows, 1)), 4096 // max(cols, 1)))
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
