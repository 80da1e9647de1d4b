"""``altarr verify``: every metadata document, shard index and chunk checked."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .app import _jsonable, _require_exists, app


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
