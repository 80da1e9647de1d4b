"""``altarr demo``: a short tour on a small dataset it writes, ending with the next steps a user takes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from .app import app, console
from .show import Axis2D, render_png


def _stored(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@app.command()
def demo(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="where to write (default: a new temporary folder)")
    ] = None,
) -> None:
    """A short tour: write a small sharded Zarr v3 volume, convert it to N5 and Zarr v2, read part of it
    lazily, draw a slice to a PNG, and show the next steps (aa.open, xarray, altarr info).

    Example: altarr demo --dir /tmp/altarr-demo
    """
    import altarr as aa

    tmp = Path(tempfile.mkdtemp(prefix="altarr-demo-")) if directory is None else directory
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "demo.zarr"
    shape, chunks, shards = (120, 160, 200), (20, 32, 40), (60, 64, 80)
    z, y, x = np.indices(shape, dtype=np.uint16)
    values = (z // 4 * 100 + y // 8 * 10 + x // 16).astype(np.uint16)  # smooth, so it compresses
    console.print("[bold]altarr demo[/bold]")
    ds = aa.create_dataset(
        str(path),
        data=values,
        chunks=chunks,
        shards=shards,
        attributes={"description": "altarr demo"},
        dimension_names=["z", "y", "x"],
        overwrite=True,
    )
    failures = 0
    console.print(
        f"1. Wrote a {shape} uint16 volume as Zarr v3 at {path}: shards of {shards} holding chunks of "
        f"{chunks}, zstd with a checksum in every chunk; {values.nbytes:,} bytes of values stored in "
        f"{_stored(path):,} bytes."
    )
    console.print("2. Converted it, shard by shard, as `altarr copy` does:")
    for fmt, name in [("n5", "demo.n5"), ("zarr2", "demo-v2.zarr")]:
        copied = aa.copy_dataset(ds, str(tmp / name), format=fmt, shards=None, overwrite=True)
        same = np.array_equal(copied[...], values)
        failures += not same
        console.print(
            f"   {name}: {fmt}, chunks {copied.chunks}, {_stored(tmp / name):,} bytes, values "
            f"{'equal' if same else 'MISMATCH'}"
        )
    lazy = aa.open(str(tmp / "demo.n5"))
    mean = float(lazy[30:34, :, 100:180].mean())
    ok = bool(np.isclose(mean, values[30:34, :, 100:180].mean()))
    failures += not ok
    console.print(
        f"3. Read lazily: aa.open(...)[30:34, :, 100:180].mean() = {mean:.2f} "
        f"({'equal' if ok else 'MISMATCH'}), reading only the chunks that selection touches."
    )
    png: Path | None = tmp / "demo-slice.png"
    try:
        axes = (Axis2D("y", np.arange(shape[1])), Axis2D("x", np.arange(shape[2])))
        render_png(values[60], tmp / "demo-slice.png", title="demo.zarr[60, :, :]", axes=axes)
        console.print(f"4. Drew a slice (altarr show {path} --index 60,:,: -o {png}).")
    except ImportError:
        png = None
        console.print("4. (install matplotlib to draw a slice: pip install 'altarr[show]')")
    console.print("\n[bold]Next steps[/bold]")
    console.print(
        f'   Python:  import altarr as aa; x = aa.open("{path}"); x[60].mean()\n'
        f'   xarray:  import xarray as xr; xr.open_dataset("{path}", engine="altarr")\n'
        f"   shell:   altarr info {path}",
        markup=False,
    )
    if png is not None:
        console.print(str(png), markup=False)
    if failures:
        raise typer.Exit(code=1)
