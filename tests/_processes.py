"""A store read in a forked and in a spawned child process, for the stores whose client does not survive
``fork()`` (obstore's Rust runtime): shared by the S3 and the HTTP tests."""

from __future__ import annotations

import multiprocessing
from typing import Any

from altarr.errors import StoreError
from altarr.stores import Range


def _read_in_child(store: Any, key: str, queue: Any) -> None:
    try:
        queue.put(store.get_ranges([(key, Range(0, 3))]))
    except StoreError as e:
        queue.put(str(e))
    except BaseException as e:  # any other failure is shown by the parent's assert, not left to its timeout
        queue.put(f"the child failed: {type(e).__name__}: {e}")
        raise


def read_in_fork_and_spawn(store: Any, key: str, first_bytes: bytes) -> None:
    """Assert that a forked child reading ``store`` (used here before the fork) gets a ``StoreError``
    telling it to use ``spawn``, not a hang; and that a spawned child (the store pickled) reads the first
    three bytes of ``key``, ``first_bytes``."""
    for method, expect in [("fork", "spawn"), ("spawn", [first_bytes])]:
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        p = ctx.Process(target=_read_in_child, args=(store, key, queue))
        p.start()
        try:
            got = queue.get(timeout=120)
        finally:
            p.join(60)
            if p.is_alive():  # a hung child must not outlive the test (it holds pytest's output pipe)
                p.kill()
        assert p.exitcode == 0, got  # a child that failed says how (_read_in_child)
        assert expect in got if method == "fork" else got == expect
