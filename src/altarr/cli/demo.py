"""``altarr demo``: a guided tour of altarr on a small dataset it writes."""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from .app import app, console
from .show import render_png


def _chunk_region(coords: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, chunks, strict=True))


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

    def chunks_equal(wanted: Sequence[tuple[int, ...]]) -> Callable[[list], str]:
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
