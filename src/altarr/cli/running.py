"""What the long-running commands (``copy``, ``pyramid``) share: the progress reports, Ctrl-C handling
(the first stops after the units in flight, a second at once), ``--scheduler`` and ``--chunks``/``--shards``.
"""

from __future__ import annotations

import signal
from typing import Any

from .app import err_console


class _Interrupt:
    """SIGINT during a copy: the first one stops after the units in flight (their journal entries are
    written), a second one aborts at once."""

    def __init__(self) -> None:
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

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


def _cluster(scheduler: str | None) -> Any:
    """The ``run_units`` of ``--scheduler ADDRESS`` (one task per destination shard), or ``None``."""
    if scheduler is None:
        return None
    from altarr.integrations.dask import cluster_runner

    return cluster_runner(scheduler)


def _chunk_options(chunks: str | None, shards: str | None, ndim: int) -> dict[str, Any]:
    """``--chunks`` and ``--shards`` (``none`` for none) as the keywords of a copy; absent when not given."""
    from altarr.transfer import parse_shape

    kw: dict[str, Any] = {}
    if chunks is not None:
        kw["chunks"] = parse_shape(chunks, ndim, "--chunks")
    if shards is not None:
        kw["shards"] = None if shards.lower() == "none" else parse_shape(shards, ndim, "--shards")
    return kw


def _bar_reporter(enabled: bool, label: str, total: int | None, interrupt: _Interrupt) -> tuple[Any, Any]:
    """A ``progress(value_bytes, units)`` that drives the copy's progress bar on stderr
    (:class:`altarr.transfer.ProgressBar`) and stops at a Ctrl-C, and the function that stops the bar."""
    from altarr.transfer import ProgressBar

    bar = ProgressBar(total, label, console=err_console, enabled=enabled)

    def report(nbytes: int, units: int) -> None:
        bar(nbytes, units)
        interrupt.check()

    return report, bar.close
