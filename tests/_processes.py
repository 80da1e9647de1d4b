"""A store read in a forked and in a spawned child process, for the stores whose client does not survive
``fork()`` (obstore's Rust runtime).

The process that forks is a fresh interpreter running this file (:func:`fork_and_spawn_in_fresh_process`),
not the pytest worker: a worker that ran thousands of tests holds other libraries' threads, locks and
garbage, which a child forked from it inherits (its garbage collector may run their finalizers). Such a
child hung four times in full-suite runs under load, cause not found (never in ~1,100 forks of a process
holding only the store, the S3 server and altarr's threads, under load too); forking a process that holds
the store alone checks altarr's fork rule, not the worker's history. A child that hangs all the same
prints its stack (``faulthandler``) and fails."""

from __future__ import annotations

import faulthandler
import json
import multiprocessing
import subprocess
import sys
from typing import Any

from altarr.errors import StoreError
from altarr.stores import Range


def _read_in_child(store: Any, key: str, queue: Any) -> None:
    faulthandler.dump_traceback_later(60, exit=True)  # a hung child says where, then exits 1
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
            got = queue.get(timeout=90)
        finally:
            p.join(60)
            if p.is_alive():  # a hung child must not outlive the test (it holds pytest's output pipe)
                p.kill()
        assert p.exitcode == 0, got  # a child that failed says how (_read_in_child)
        assert expect in got if method == "fork" else got == expect


def fork_and_spawn_in_fresh_process(url: str, options: dict[str, Any]) -> None:
    """:func:`read_in_fork_and_spawn` of an ``ObstoreStore(url, **options)`` that a fresh interpreter
    makes and uses (it writes and reads a key) before it forks; its failure is this call's."""
    proc = subprocess.run(
        [sys.executable, __file__, url, json.dumps(options)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


if __name__ == "__main__":
    from altarr.stores import ObstoreStore

    store = ObstoreStore(sys.argv[1], **json.loads(sys.argv[2]))
    store.set("k", b"abcdef")
    assert store.get_ranges([("k", Range(0, 3)), ("k", Range(3, 6))]) == [b"abc", b"def"]
    read_in_fork_and_spawn(store, "k", b"abc")
