"""One pool-size policy: ``altarr.set_options(threads=N)``, else ``ALTARR_THREADS`` (read once), else the
cores this process may use; the engine's shared pool and every LocalStore without ``max_workers`` follow
it at their next use."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from altarr import _threads
from altarr._threads import get_threads, pmap
from altarr.stores import LocalStore, Range

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _threads_used_by_pmap(n_items: int = 64) -> set[int]:
    used: set[int] = set()
    lock = threading.Lock()

    def f(x):
        with lock:
            used.add(threading.get_ident())
        return x

    assert pmap(f, list(range(n_items))) == list(range(n_items))
    return used


def test_set_options_threads_sizes_pmap_and_is_restored():
    before = aa.get_options()["threads"]
    assert before == _threads.get_threads()
    with aa.set_options(threads=1):
        assert aa.get_options()["threads"] == 1 == get_threads()
        assert _threads_used_by_pmap() == {threading.get_ident()}  # inline on the calling thread
    assert aa.get_options()["threads"] == before
    with aa.set_options(threads=3):
        used = _threads_used_by_pmap()
        assert 1 <= len(used) <= 3
    assert get_threads() == before


def test_pmap_never_uses_more_threads_than_set():
    """Eight items, each blocking until all runners started: exactly ``threads`` runners exist."""
    for n in (2, 4):
        with aa.set_options(threads=n):
            lock = threading.Lock()
            seen: set[int] = set()
            ready = threading.Barrier(n, timeout=10)

            def f(x, seen=seen, lock=lock, ready=ready):
                with lock:
                    first = threading.get_ident() not in seen
                    seen.add(threading.get_ident())
                if first:
                    ready.wait()  # breaks (BrokenBarrierError) if fewer than n runners exist
                return x

            assert pmap(f, list(range(8))) == list(range(8))
            assert len(seen) == n


def test_local_store_follows_the_policy_unless_given_max_workers(tmp_path):
    s = LocalStore(tmp_path / "a")
    fixed = LocalStore(tmp_path / "b", max_workers=2)
    with aa.set_options(threads=5):
        assert s.max_workers == 5 and fixed.max_workers == 2
        assert s._executor()._max_workers == 5
    with aa.set_options(threads=1):
        assert s.max_workers == 1
        s.set_many([(f"k{i}", bytes([i]) * 10) for i in range(4)])  # inline: no pool involved
        assert s.get_ranges([(f"k{i}", Range(0, 2)) for i in range(4)]) == [bytes([i]) * 2 for i in range(4)]
    with aa.set_options(threads=3):
        assert s._executor()._max_workers == 3  # resized at its next use
    # pickling keeps "follow the policy" rather than freezing today's size
    import pickle

    clone = pickle.loads(pickle.dumps(s))
    with aa.set_options(threads=7):
        assert clone.max_workers == 7
    assert pickle.loads(pickle.dumps(fixed)).max_workers == 2


def test_results_do_not_depend_on_the_pool_size(tmp_path):
    data = np.arange(40 * 40, dtype="uint16").reshape(40, 40)
    got = []
    for n in (1, 2, 8):
        with aa.set_options(threads=n):
            path = tmp_path / f"t{n}.zarr"
            ds = aa.create_dataset(
                str(path), shape=data.shape, dtype="uint16", chunks=(4, 4), shards=(20, 20)
            )
            ds[...] = data
            got.append(ds[3:37, 1:39])
            assert aa.open(str(path))[::3, ::2].sum() == data[::3, ::2].sum()
    for g in got:
        np.testing.assert_array_equal(g, data[3:37, 1:39])


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True, None])
def test_bad_thread_counts_are_refused(bad):
    before = aa.get_options()["threads"]
    with pytest.raises((ValueError, TypeError), match="threads"):
        aa.set_options(threads=bad)
    assert aa.get_options()["threads"] == before


def _run(code: str, env_value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != _threads.ENV_VAR}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    if env_value is not None:
        env[_threads.ENV_VAR] = env_value
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_environment_variable_sets_the_default_and_is_read_once():
    code = (
        "import os, altarr as aa\n"
        "from altarr._threads import get_threads\n"
        "from altarr.stores import LocalStore\n"
        "import tempfile\n"
        "os.environ['ALTARR_THREADS'] = '9'  # read once, at import: changing it now does nothing\n"
        "print(aa.get_options()['threads'], get_threads(), LocalStore(tempfile.mkdtemp()).max_workers)\n"
    )
    out = _run(code, "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3", "3"]
    default = _run(code.replace("os.environ['ALTARR_THREADS'] = '9'", "pass"), None)
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == [str(len(os.sched_getaffinity(0)))] * 3


def test_a_bad_environment_value_is_reported_by_name():
    out = _run("import altarr as aa; aa.get_options()", "many")
    assert out.returncode != 0
    assert "ALTARR_THREADS must be a whole number >= 1, got 'many'" in out.stderr


def test_the_pool_size_is_read_only_where_it_can_matter():
    """``_threads.reads`` tells the pool matrix which tests to run again at 1 and 8 workers: a ``pmap``
    of one item (inline whatever the size) does not read the size, one of two items does."""
    before = _threads.reads
    assert pmap(lambda x: x + 1, [1]) == [2]
    assert _threads.reads == before
    assert pmap(lambda x: x + 1, [1, 2]) == [2, 3]
    assert _threads.reads > before
