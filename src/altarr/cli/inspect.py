"""``altarr info``, ``altarr tree`` and ``altarr verify``: what a dataset or group holds, and whether it is
whole."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from .app import _jsonable, _open_node, _pyramid, _require_exists, app, console


def _stored_bytes(store: Any, prefix: str) -> tuple[int, int]:
    sizes = [size for _, size in store.list_sized(prefix)]  # one listing on object stores, no HEADs
    return sum(sizes), len(sizes)


def describe(node: Any) -> dict[str, Any]:
    """What ``altarr info`` prints, as a JSON-able dict."""
    import altarr as aa

    if isinstance(node, aa.Group):
        kinds = {name: "group" if isinstance(node[name], aa.Group) else "array" for name in node.keys()}
        doc = {
            "kind": "group",
            "format": node.format,
            "path": node.path or "/",
            "attributes": _jsonable(dict(node.attrs)),
            "children": [{"name": name, "kind": kind} for name, kind in kinds.items()],
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


@app.command()
def verify(
    path: Annotated[str, typer.Argument(help="a dataset or group")],
    repair: Annotated[bool, typer.Option(help="remove temporary files left by interrupted writes")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Check every metadata document, shard index and chunk; print each problem with its key, and per
    array how many chunks a checksum verified and how many could only be decoded. An unfinished copy is a
    problem. Exit code 0 only when clean.

    Example: altarr verify data.zarr
    """
    import altarr as aa

    _require_exists(path)
    report = aa.verify(path, repair=repair)
    if as_json:
        print(json.dumps(_jsonable(report.as_dict()), indent=2))
    else:
        print(str(report))
    if not report.ok:
        raise typer.Exit(code=1)
