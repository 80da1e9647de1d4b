"""The ``altarr`` command's typer ``app``, its consoles, one-line errors and exit codes (:func:`main`)."""

from __future__ import annotations

import math
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console

try:  # the class of typer's argument errors: its bundled click's, or click's in older releases
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - an older typer
    from click.exceptions import ClickException  # type: ignore[assignment]  # the same class, from click

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = Console(width=140, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)


class UsageProblem(Exception):
    """A bad argument found after parsing (exit code 2, one line)."""


def checked_option(check: Any, *args: Any, **kwargs: Any) -> Any:
    """``check(*args, **kwargs)``, an altarr error it raises as a :class:`UsageProblem`."""
    from altarr.errors import AltarrError

    try:
        return check(*args, **kwargs)
    except AltarrError as e:
        raise UsageProblem(e.message) from e


def _version(value: bool) -> None:
    if value:
        import altarr

        status = altarr.native_status()
        print(f"altarr {altarr.__version__}\n{status}\n{status.zstd}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the full traceback of an error")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="print the version, the native kernel's state and the route of zstd writes",
        ),
    ] = False,
) -> None:
    """altarr: chunked, compressed N-D arrays (N5, Zarr v2, Zarr v3 sharded) from the command line.

    Example: altarr info data.zarr --json
    """


# --- opening ---------------------------------------------------------------------------------------------
def _require_exists(path: str) -> None:
    if "://" not in path and not Path(path).exists():
        raise FileNotFoundError(f"no such file or directory: {path}")


def _open_node(path: str) -> Any:
    """The dataset or group at ``path``; a one-line error when there is none."""
    from altarr.copying import open_node

    _require_exists(path)
    return open_node(path)


def _pyramid(group: Any) -> Any:
    """The pyramid a group holds, or ``None`` (also for a BigDataViewer container of several views)."""
    from altarr.multiscale.read import multiscale_or_none

    ms = multiscale_or_none(group)
    return ms if ms is not None and ms.views == 1 else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# --- entry point -----------------------------------------------------------------------------------------
def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    first = text.splitlines()[0]
    return first if isinstance(e, UsageProblem | FileNotFoundError) else f"{type(e).__name__}: {first}"


def main(argv: list[str] | None = None) -> None:
    """The ``altarr`` console script: one-line errors, a traceback only with ``--debug``."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("ALTARR_DEBUG", "") not in ("", "0")
    try:
        code = app(args=args, prog_name="altarr", standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort):
        err_console.print("interrupted (a copy can continue with --resume)", markup=False)
        code = 130
    except ClickException as e:  # bad arguments, as parsed by typer (click)
        message = e.format_message()
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `altarr`: the help is what was asked for
            print(message)
            code = 0
        else:
            err_console.print(f"error: {message.splitlines()[0]} (see altarr --help)", markup=False)
            code = e.exit_code
    except Exception as e:  # one line, or with --debug the traceback; the exit code is the same
        if debug:
            traceback.print_exc()
        err_console.print(f"error: {_one_line(e)}", markup=False)
        code = 2 if isinstance(e, UsageProblem) else 1
    sys.exit(code if isinstance(code, int) else 0)
