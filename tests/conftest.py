"""Shared fixtures: stores of every local kind, a seeded random generator, and a moto S3 server."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The tests live in layer folders (tests/stores/, tests/dataset/, ...); the helpers they share
# (_peers.py, store_conformance.py, ...) live here, importable from every folder whatever pytest's
# import mode (docs/architecture.md, "Tests by layer").
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))


#: The pool matrix (docs/development.md, "The suite at 1, 2 and 8 workers"): with this set, every test
#: during which altarr read its pool size (``altarr._threads.reads`` grew: its own setup and teardown
#: included, fixtures of wider scope too) or which started another process (whose altarr reads
#: ``ALTARR_THREADS`` itself) is written, one node id a line, to ``<path>.<xdist worker>``; `.ci/run`
#: runs exactly those again with the pool forced to 1 and to 8 workers.
_POOL_TESTS = os.environ.get("ALTARR_POOL_TESTS")
_processes_started = [0]


def _counting(start):
    def wrapper(*args, **kwargs):
        _processes_started[0] += 1
        return start(*args, **kwargs)

    return wrapper


if _POOL_TESTS:
    import multiprocessing.process
    import subprocess

    subprocess.Popen.__init__ = _counting(subprocess.Popen.__init__)
    multiprocessing.process.BaseProcess.start = _counting(multiprocessing.process.BaseProcess.start)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _POOL_TESTS:
        yield
        return
    from altarr import _threads

    before = (_threads.reads, _processes_started[0])
    yield
    if (_threads.reads, _processes_started[0]) != before:
        with open(f"{_POOL_TESTS}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "a") as f:
            f.write(item.nodeid + "\n")


@pytest.fixture(autouse=True)
def _pool_size_put_back():
    """A test that sets altarr's pool size puts it back: the matrix's runs force it (1, 8) and every test
    there expects that size, so a leak fails some later, unrelated test (session 9: bench_remote's altarr
    set 2 for the rest of an xdist worker, and test_options_global_and_as_context_manager failed)."""
    from altarr import _threads

    before = _threads._threads  # not get_threads(): that read would put every test in the matrix
    yield
    assert _threads._threads == before, f"the test left the pool size at {_threads._threads}, not {before}"


#: The default suite's fuzz seed (see pytest_configure).
DEFAULT_FUZZ_SEED = 20261205


def pytest_configure(config):
    """One seed for the run's differential fuzz (tests/_numpy_differential.py), in the environment before
    pytest-xdist starts its workers, so all of them use it: ``ALTARR_FUZZ_SEED`` if set, else
    ``DEFAULT_FUZZ_SEED``. The README's test command stays reproducible (a run that fails, fails again,
    and a change is judged by its own effect, not by the examples a seed happened to draw); the search
    for new differences is ``.ci/run``'s soak, with a fresh seed each run that it prints
    (docs/lazy-arrays.md)."""
    os.environ.setdefault("ALTARR_FUZZ_SEED", str(DEFAULT_FUZZ_SEED))


def pytest_report_header(config):
    return f"differential fuzz seed: ALTARR_FUZZ_SEED={os.environ['ALTARR_FUZZ_SEED']}"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    """A fresh store: in memory, or local files under tmp_path."""
    from altarr.stores import LocalStore, MemoryStore

    if request.param == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / "store")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 (a free port) with one bucket (``_s3.BUCKET``); yields its URL."""
    from _s3 import moto_server

    with moto_server() as endpoint:
        yield endpoint


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (soak runs) are deselected unless the marker expression names them
    (``-m slow``); ``.ci/run`` runs them after the default suite."""
    if "slow" in (config.getoption("markexpr", "") or ""):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture(scope="module", params=["native", "python"])
def engine_path(request):
    """Runs a module's tests twice: through the native kernel (``altarr.native``), then through the
    pure-Python path (numcodecs and python-zstandard). Used by the request-contract, interop, region and
    bad-input modules (``pytestmark = pytest.mark.usefixtures("engine_path")``).

    Where the kernel is not active the native run is skipped with its reason, except under
    ``ALTARR_REQUIRE_NATIVE=1`` (``.ci/run`` sets it where the build tools are installed): there it fails."""
    from altarr import native

    if request.param == "native":
        require_native()
    with native.use_native(request.param == "native"):
        yield request.param


@pytest.fixture
def native_required():
    """Skips the test where the native kernel is not active (fails under ``ALTARR_REQUIRE_NATIVE=1``)."""
    require_native()


def require_native() -> None:
    """Fail (under ``ALTARR_REQUIRE_NATIVE=1``) or skip the calling test when the native kernel is not
    active, naming the reason."""
    from altarr import native

    with native.use_native(True):
        status = native.native_status()
    if status.active:
        return
    message = f"{status} (docs/engine.md, 'The native kernel': how to build it)"
    if os.environ.get("ALTARR_REQUIRE_NATIVE", "") not in ("", "0"):
        pytest.fail(message)
    pytest.skip(message)
