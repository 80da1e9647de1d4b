"""The ``altarr`` command line.

Commands (``altarr COMMAND --help`` shows each one's options and an example):

* ``altarr info PATH [--json]`` - format, shape, dtype, chunks, shards, codecs, fill value, dimension
  names, attributes, stored bytes and compression ratio of a dataset (or a group's attributes and
  children);
* ``altarr tree PATH`` - the group hierarchy, each array with its shape, dtype and format;
* ``altarr copy SRC DST`` - convert and re-chunk between N5, Zarr v2 and Zarr v3 (sharded), shard by
  shard, with a progress bar, ``--workers``, ``--resume`` and ``--scheduler`` (dask.distributed);
* ``altarr verify PATH`` - check every metadata document, shard index and chunk;
* ``altarr show PATH --index 10,:,: -o slice.png`` - render a 2-D slice with a colour bar;
* ``altarr demo`` - a guided tour that ends with the path of a PNG it wrote.

``altarr --version`` prints the version and whether the native kernel is active (and if not, why).
Errors are one line on stderr and a non-zero exit (2 for bad arguments, 1 otherwise, 130 when
interrupted); ``altarr --debug COMMAND`` shows the traceback instead.

Example:
    >>> from typer.testing import CliRunner
    >>> from altarr.cli import app
    >>> CliRunner().invoke(app, ["copy", "--help"]).exit_code
    0
"""

from __future__ import annotations

# every command module registers its commands with ``app`` when imported
from . import check, copy, demo, inspect, pyramid, show  # noqa: F401
from .app import app, main
from .inspect import describe
from .show import parse_index, render_png

__all__ = ["app", "main", "describe", "parse_index", "render_png"]
