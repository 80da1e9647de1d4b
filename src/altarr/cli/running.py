"""What ``copy`` and ``pyramid`` share: progress, Ctrl-C, ``--scheduler``, ``--chunks``/``--shards``."""

from __future__ import annotations

import signal
from typing import Any

import typer

from .app import UsageProblem, err_console


class _Interrupt:
    """SIGINT during a copy: the first stops after the units in flight, a second at once; exit code 130."""

    def __init__(self, destination: str) -> None:
        self.destination = destination
        self.requested = False
        self._old: Any = None

    def __enter__(self) -> _Interrupt:
        def handler(signum: int, frame: Any) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True

        try:
            self._old = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread (e.g. a test runner)
            self._old = None
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            err_console.print(
                "interrupted: the shards written so far are complete; run the same command with --resume "
                f"to continue into {self.destination}",
                markup=False,
            )
            raise typer.Exit(code=130) from None

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


def _check_run(workers: int, resume: bool, overwrite: bool) -> None:
    if workers < 1:
        raise UsageProblem(f"--workers must be at least 1, got {workers}")
    if resume and overwrite:
        raise UsageProblem("--resume and --overwrite contradict each other")


def _cluster(scheduler: str | None) -> Any:
    if scheduler is None:
        return None
    from altarr.integrations.dask import cluster_runner

    return cluster_runner(scheduler)


def _numbers(text: str, ndim: int, what: str, kind: type = int) -> tuple[Any, ...]:
    """``text`` such as ``64,64,64`` as ``ndim`` numbers of ``kind`` (integers: positive ones)."""
    integers = kind is int
    try:
        values = tuple(kind(x) for x in text.split(","))
    except ValueError:
        shown = "integers" if integers else "numbers"
        raise UsageProblem(f"{what} must be {ndim} comma-separated {shown}, got {text!r}") from None
    if len(values) != ndim or (integers and min(values) < 1):
        each = ", each a positive integer" if integers else ""
        raise UsageProblem(f"{what} {text!r} must give {ndim} numbers, one per axis{each}")
    return values


def _chunk_options(chunks: str | None, shards: str | None, ndim: int) -> dict[str, Any]:
    """``--chunks`` and ``--shards`` (``none`` for none) as a copy's keywords."""
    kw: dict[str, Any] = {}
    if chunks is not None:
        kw["chunks"] = _numbers(chunks, ndim, "--chunks")
    if shards is not None:
        kw["shards"] = None if shards.lower() == "none" else _numbers(shards, ndim, "--shards")
    return kw


def _bar(enabled: bool, label: str, total: int | None, interrupt: _Interrupt) -> Any:
    """A copy's ``progress``: a progress bar on stderr (shown if ``enabled``) stopping at a Ctrl-C."""
    from altarr.transfer import ProgressBar

    return ProgressBar(total, label, console=err_console, enabled=enabled, on_step=interrupt.check)
