"""The ``altarr`` command line: ``altarr demo``, ``altarr info PATH``, ``altarr copy SRC DST``.

Example:
    $ altarr demo                # writes a sharded Zarr v3 dataset to a temporary folder and reads it back
    $ altarr info data.zarr      # format, shape, chunks, shards, codecs, attributes
    $ altarr copy data.n5 out.zarr --format zarr3 --shards 256,256,256
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="altarr: chunked, compressed N-D arrays.")
console = Console(width=140)


def _chunk_region(coords: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, chunks, strict=True))


@app.command()
def demo(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="where to write (default: a temporary folder)")
    ] = None,
    keep: Annotated[bool, typer.Option(help="keep the dataset instead of deleting it")] = False,
) -> None:
    """Write a small sharded Zarr v3 dataset, read parts of it back through the batched chunk API and
    print every step's store requests."""
    import altarr as aa

    tmp = Path(tempfile.mkdtemp(prefix="altarr-demo-")) if directory is None else directory
    path = tmp / "demo.zarr"
    shape, chunks, shards = (120, 160, 200), (20, 32, 40), (60, 64, 80)
    console.print(
        f"[bold]altarr demo[/bold]: a {shape} uint16 array in {shards} shards of {chunks} chunks "
        f"(zstd), Zarr v3 sharding_indexed, at {path}"
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
        overwrite=True,
    )
    stats = ds.store.stats
    table = Table("step", "reads", "bytes read", "writes", "bytes written", "size queries", "ms", "check")
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
            str(counts["size_queries"]),
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
    step(
        "read the deleted chunk",
        lambda: ds.read_chunks([(5, 4, 4)]),
        lambda got: "None" if got[0] is None else "MISMATCH: still there",
    )
    console.print(table)
    on_disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    console.print(f"{values.nbytes:,} bytes of values stored in {on_disk:,} bytes on disk.")
    if keep or directory is not None:
        console.print(f"dataset kept at {path}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        raise typer.Exit(code=1)


@app.command()
def info(path: str) -> None:
    """Describe a dataset or group: format, shape, dtype, chunks, shards, codecs, attributes."""
    import altarr as aa
    from altarr.errors import MetadataError

    try:
        ds = aa.open_dataset(path)
    except MetadataError:
        g = aa.open_group(path)
        console.print(f"group ({g.format}) with children: {', '.join(g.keys()) or '(none)'}")
        console.print(f"attributes: {json.dumps(dict(g.attrs))}")
        return
    console.print(repr(ds))
    console.print(f"fill value: {ds.fill_value!r}; grid: {ds.grid_shape} chunks")
    ab = ds.spec.codecs.array_bytes
    codecs = ab.codecs_json() if hasattr(ab, "codecs_json") else ds.spec.codecs.to_json()  # N5: + compression
    console.print(f"codecs: {json.dumps(codecs)}")
    console.print(f"attributes: {json.dumps(ds.attrs.asdict())}")


def _shape(text: str | None) -> tuple[int, ...] | None:
    return None if not text else tuple(int(x) for x in text.split(","))


@app.command()
def copy(
    source: str,
    destination: str,
    format: Annotated[str | None, typer.Option(help="zarr3, zarr2 or n5 (default: the source's)")] = None,
    shards: Annotated[
        str | None,
        typer.Option(help="outer shard shape, e.g. 256,256,256, or 'none' (default: the source's)"),
    ] = None,
    compressor: Annotated[str, typer.Option(help="zstd, gzip, blosc or none")] = "zstd",
    overwrite: Annotated[bool, typer.Option(help="replace an existing destination")] = False,
) -> None:
    """Copy a dataset between formats (N5, Zarr v2, Zarr v3 sharded), keeping values and attributes."""
    import altarr as aa

    src = aa.open_dataset(source)
    t = time.perf_counter()
    dst = aa.copy_dataset(
        src,
        destination,
        format=format,
        shards="same" if shards is None else (None if shards.lower() == "none" else _shape(shards)),
        compressor=None if compressor == "none" else compressor,
        overwrite=overwrite,
    )
    console.print(f"copied {src!r} -> {dst!r} in {time.perf_counter() - t:.2f} s")


def main() -> None:
    """Entry point of the ``altarr`` console script."""
    app()


if __name__ == "__main__":
    main()
