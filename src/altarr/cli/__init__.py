"""The ``altarr`` command line: ``info``, ``tree``, ``copy``, ``pyramid``, ``verify``, ``show``, ``demo``
(``docs/cli.md``)."""

from __future__ import annotations

# every command module registers its commands with ``app`` when imported
from . import copy, demo, inspect, pyramid, show  # noqa: F401
from .app import app, main
from .inspect import describe
from .show import parse_index, render_png

__all__ = ["app", "main", "describe", "parse_index", "render_png"]
