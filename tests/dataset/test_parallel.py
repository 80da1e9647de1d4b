"""The shared decode/encode pool: every item runs, results keep item order, the first failing item's
exception propagates, nested calls run inline (no deadlock)."""

import threading

import pytest

from altarr._threads import get_threads, pmap, set_threads


@pytest.fixture(autouse=True, params=[1, 2, 8], ids=lambda n: f"threads={n}")
def pool_size(request):
    """Every contract below holds at every pool size (1 runs inline on the calling thread)."""
    import altarr as aa

    with aa.set_options(threads=request.param):
        yield request.param


def test_results_in_order_and_every_item_runs():
    seen = []
    lock = threading.Lock()

    def f(x):
        with lock:
            seen.append(x)
        return x * x

    assert pmap(f, list(range(100))) == [x * x for x in range(100)]
    assert sorted(seen) == list(range(100))


def test_first_failing_item_in_order_propagates_after_all_ran():
    ran = []

    def f(x):
        ran.append(x)
        if x in (7, 3):
            raise KeyError(x)
        return x

    with pytest.raises(KeyError) as info:
        pmap(f, list(range(20)))
    assert info.value.args == (3,)
    assert sorted(ran) == list(range(20))


def test_nested_calls_run_inline_and_threads_are_bounded():
    threads = set()

    def inner(x):
        threads.add(threading.get_ident())
        return x

    def outer(x):
        return sum(pmap(inner, list(range(5))))

    assert pmap(outer, list(range(8))) == [10] * 8
    assert len(threads) <= get_threads()


def test_one_worker_runs_inline():
    before = set_threads(1)
    try:
        assert pmap(lambda x: threading.get_ident(), [1, 2, 3]) == [threading.get_ident()] * 3
    finally:
        set_threads(before)


def test_spawn_runs_in_the_background_and_its_wait_reraises_after_every_runner_ended(pool_size):
    """``spawn(fn, n)`` starts ``min(workers, n)`` runs of ``fn`` and returns at once (with one worker:
    runs it first); ``wait()`` returns after all of them, raising the first exception."""
    from altarr._threads import spawn

    release = threading.Event()
    runs, ended = [], []
    lock = threading.Lock()

    def f():
        with lock:
            runs.append(threading.get_ident())
        if pool_size > 1:
            assert release.wait(10)  # the caller goes on meanwhile
        with lock:
            ended.append(1)
        raise ValueError("boom")

    wait = spawn(f, 5)
    assert threading.get_ident() not in runs or pool_size == 1
    release.set()
    with pytest.raises(ValueError, match="boom"):
        wait()
    assert len(ended) == len(runs) == min(pool_size, 5)
    assert spawn(f, 0)() is None  # nothing to run

    # inside a pool runner it runs inline, before it returns
    inner = []

    def outer(_):
        w = spawn(lambda: inner.append(threading.get_ident()), 3)
        assert inner[-1] == threading.get_ident()
        w()

    pmap(outer, [1, 2])


def test_spawn_wait_can_drop_the_runners_no_thread_started(pool_size):
    """``wait(skip_unstarted=True)`` (for a caller that did the work itself first) drops the runners still
    queued behind busy pool threads instead of waiting for them; plain ``wait()`` runs them. Runners
    already running are waited for either way."""
    from altarr._threads import spawn

    if pool_size == 1:  # no pool: spawn ran it inline, nothing is queued
        ran = []
        spawn(lambda: ran.append(1), 1)(skip_unstarted=True)
        assert ran == [1]
        return
    release, started = threading.Event(), threading.Semaphore(0)
    busy_ran = []

    def busy():
        started.release()
        assert release.wait(10)
        busy_ran.append(1)

    hold = spawn(busy, pool_size)  # every pool thread is taken
    for _ in range(pool_size):
        assert started.acquire(timeout=10)
    queued = []
    dropped = spawn(lambda: queued.append("dropped"), 1)
    kept = spawn(lambda: queued.append("kept"), 1)
    dropped(skip_unstarted=True)  # returns at once: its runner had not started
    assert queued == []
    release.set()
    kept()  # waits for its runner, which runs once a thread is free
    hold(skip_unstarted=True)  # started runners are waited for
    assert queued == ["kept"] and len(busy_ran) == pool_size


@pytest.mark.parametrize("call", ["pmap", "spawn"])
def test_a_failed_call_frees_its_buffers_without_the_garbage_collector(call):
    """The exception a pool call raises holds no cycle back to that call's frames: once the caller drops
    it, what the failed item held is freed at once (a 2 GiB chunk must not wait for the collector)."""
    import gc
    import weakref

    from altarr._threads import spawn

    class Buffer:
        pass

    held = []

    def fail(_x=None):
        buf = Buffer()
        held.append(weakref.ref(buf))
        raise ValueError("no room")

    gc.disable()
    try:
        with pytest.raises(ValueError, match="no room"):
            if call == "pmap":
                pmap(fail, [0, 1])
            else:
                spawn(fail, 1)()
        assert held and all(ref() is None for ref in held)
    finally:
        gc.enable()
