"""Planned indexing equals NumPy's on the same data, for every form, and fetches exactly the touched
chunks in one call (none for an empty selection)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import chunk_ids, lazy, outer_reference, positions, touched, vector_reference
from altarr.errors import SelectionError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def geometry(draw, max_dims: int = 3, max_side: int = 9, allow_empty: bool = False):
    ndim = draw(st.integers(1, max_dims))
    lo = 0 if allow_empty else 1
    shape = tuple(draw(st.integers(lo, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, max(1, n) + 1)) for n in shape)
    return shape, chunks


@st.composite
def a_slice(draw, n: int):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(-4, 4).filter(lambda s: s != 0))
    return slice(draw(bound), draw(bound), draw(step))


def an_int(n: int):
    return st.integers(-n, n - 1)


@st.composite
def int_array(draw, n: int, shape: tuple[int, ...]):
    size = int(np.prod(shape))
    vals = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
    return np.asarray(vals, dtype=draw(st.sampled_from(["int64", "int32", "intp"]))).reshape(shape)


@st.composite
def small_shape(draw, max_dims: int = 2):
    return tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=max_dims)))


def _with_ellipsis_and_newaxis(draw, items: list, kinds: list[str]):
    # replace a run of full slices by an Ellipsis, maybe; insert a few None
    if items and draw(st.booleans()):
        p = draw(st.integers(0, len(items)))
        m = draw(st.integers(0, len(items) - p))
        if all(k == "slice" for k in kinds[p : p + m]):
            items = items[:p] + [Ellipsis] + items[p + m :]
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 2))):
            items.insert(draw(st.integers(0, len(items))), None)
    return items


@st.composite
def numpy_case(draw):
    shape, chunks = draw(geometry())
    ndim = len(shape)
    mode = draw(st.sampled_from(["basic", "basic", "ints", "bool"]))
    items: list = []
    kinds: list[str] = []
    if mode == "bool":
        d0 = draw(st.integers(0, ndim - 1))
        k = draw(st.integers(1, ndim - d0))
        mshape = shape[d0 : d0 + k]
        mask = np.asarray(
            draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))
        )
        for d in range(d0):
            pick = draw(st.sampled_from(["slice", "int"]))
            items.append(draw(a_slice(shape[d])) if pick == "slice" else draw(an_int(shape[d])))
            kinds.append(pick)
        items.append(mask.reshape(mshape))
        kinds.append("adv")
        for d in range(d0 + k, ndim):
            items.append(draw(a_slice(shape[d])))
            kinds.append("slice")
    else:
        bshape = draw(small_shape())
        for d in range(ndim):
            choices = ["slice", "int"] + (["array", "array"] if mode == "ints" else [])
            pick = draw(st.sampled_from(choices))
            if pick == "slice":
                items.append(draw(a_slice(shape[d])))
            elif pick == "int":
                items.append(draw(an_int(shape[d])))
            else:
                # a shape that broadcasts to bshape: drop leading dims / put 1s
                sub = list(bshape[draw(st.integers(0, len(bshape))) :])
                sub = [1 if draw(st.booleans()) else s for s in sub]
                arr = draw(int_array(shape[d], tuple(sub)))
                items.append(arr if draw(st.booleans()) else arr.tolist())
            kinds.append(pick)
        cut = draw(st.integers(0, ndim))
        while len(items) > cut and kinds[-1] == "slice":
            items.pop()
            kinds.pop()
    items = _with_ellipsis_and_newaxis(draw, items, kinds)
    key = tuple(items) if (len(items) != 1 or draw(st.booleans())) else items[0]
    return shape, chunks, key


def _check(x, fetch, data, cids, key, result, expected_ids):
    expected = data[key] if not callable(expected_ids) else None
    return expected


@SETTINGS
@given(numpy_case())
def test_numpy_indexing_matches_numpy(case):
    shape, chunks, key = case
    data = positions(shape)
    try:
        expected = data[key]
    except IndexError:
        with pytest.raises(IndexError):
            lazy(data, chunks)[0][key]
        return
    x, fetch = lazy(data, chunks)
    got = x[key]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)
    assert np.shape(got) == np.shape(expected)
    want = touched(shape, chunks, chunk_ids(shape, chunks)[key])
    assert len(fetch.calls) == (1 if np.size(expected) else 0)
    assert set(fetch.fetched) == want and len(fetch.fetched) == len(want)
    # a repeated selection costs no fetch
    np.testing.assert_array_equal(x[key], expected)
    assert len(fetch.calls) == (1 if np.size(expected) else 0)


@st.composite
def outer_case(draw):
    shape, chunks = draw(geometry())
    items = []
    kinds = []
    for d in range(len(shape)):
        n = shape[d]
        pick = draw(st.sampled_from(["slice", "int", "array", "array2d", "bool"]))
        if pick == "slice":
            items.append(draw(a_slice(n)))
        elif pick == "int":
            items.append(draw(an_int(n)))
        elif pick == "array":
            items.append(draw(int_array(n, (draw(st.integers(0, 6)),))))
        elif pick == "array2d":
            items.append(draw(int_array(n, (draw(st.integers(1, 2)), draw(st.integers(0, 3))))))
        else:
            items.append(np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        kinds.append(pick)
    cut = draw(st.integers(0, len(items)))
    items = items[:cut] if all(k == "slice" for k in kinds[cut:]) else items
    if items and len(items) == len(shape) and draw(st.booleans()):
        # an Ellipsis stands for exactly that one slice only when every dimension has an item
        p = draw(st.integers(0, len(items) - 1))
        items = items[:p] + [Ellipsis] + items[p + 1 :] if kinds[p] == "slice" else items
    return shape, chunks, tuple(items)


@SETTINGS
@given(outer_case())
def test_oindex_matches_reference(case):
    shape, chunks, key = case
    data = positions(shape)
    expected = outer_reference(data, key)
    x, fetch = lazy(data, chunks)
    got = x.oindex[key]
    np.testing.assert_array_equal(got, expected)
    assert np.shape(got) == np.shape(expected)
    want = touched(shape, chunks, outer_reference(chunk_ids(shape, chunks), key))
    assert set(fetch.fetched) == want and len(fetch.fetched) == len(want)
    assert len(fetch.calls) == (1 if want else 0)


@st.composite
def vector_case(draw):
    shape, chunks = draw(geometry())
    ndim = len(shape)
    if draw(st.integers(0, 4)) == 0:  # one full-shape boolean mask
        mask = np.asarray(
            draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        )
        return shape, chunks, mask.reshape(shape)
    bshape = draw(small_shape())
    items = []
    for d in range(ndim):
        pick = draw(st.sampled_from(["slice", "int", "array", "array"]))
        if pick == "slice":
            items.append(draw(a_slice(shape[d])))
        elif pick == "int":
            items.append(draw(an_int(shape[d])))
        else:
            sub = list(bshape[draw(st.integers(0, len(bshape))) :])
            items.append(draw(int_array(shape[d], tuple(sub))))
    return shape, chunks, tuple(items)


@SETTINGS
@given(vector_case())
def test_vindex_matches_reference(case):
    shape, chunks, key = case
    data = positions(shape)
    expected = vector_reference(data, key)
    x, fetch = lazy(data, chunks)
    got = x.vindex[key]
    np.testing.assert_array_equal(got, expected)
    assert np.shape(got) == np.shape(expected)
    want = touched(shape, chunks, vector_reference(chunk_ids(shape, chunks), key))
    assert set(fetch.fetched) == want and len(fetch.fetched) == len(want)
    assert len(fetch.calls) == (1 if want else 0)


@st.composite
def flat_case(draw):
    shape, chunks = draw(geometry())
    size = int(np.prod(shape))
    pick = draw(st.sampled_from(["int", "slice", "array", "bool"]))
    if pick == "int":
        key = draw(an_int(size))
    elif pick == "slice":
        key = draw(a_slice(size))
    elif pick == "array":
        key = draw(int_array(size, draw(small_shape())))
    else:
        key = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    return shape, chunks, key


@SETTINGS
@given(flat_case())
def test_flat_matches_numpy(case):
    shape, chunks, key = case
    data = positions(shape)
    expected = data.flat[key]
    x, fetch = lazy(data, chunks)
    got = x.flat[key]
    np.testing.assert_array_equal(got, expected)
    assert np.shape(got) == np.shape(expected)
    want = touched(shape, chunks, chunk_ids(shape, chunks).flat[key])
    assert set(fetch.fetched) == want and len(fetch.fetched) == len(want)


@pytest.mark.parametrize(
    "key",
    [
        (0, slice(None), [1, 2]),  # advanced indices separated by a slice: broadcast dims first
        (slice(None), [0], Ellipsis, [1]),  # ... separates even when it expands to nothing
        (slice(None), [1, 0], [2, 2], slice(None)),  # adjacent: in place
        ([1, 0], None, [2, 0]),  # None separates
        (True,),
        (0, True),
        ([1, 0], True),
        (Ellipsis, False),
        (np.array(1), 2, 3),  # 0-d integer arrays are integers: a scalar result
        (1, 2, 3, Ellipsis),  # with an ellipsis: a 0-d array
        (),
        ([],),
        (slice(None, None, -1), slice(5, None, -2), [3, -1, 3]),
        (np.array([True, False]), slice(None), [1, 2]),  # a mask broadcast with an integer array
        ([[0], [1]], np.array([False, True, True]), 2),
        (1, np.array([[True, False, True, False], [False, False, True, True], [True] * 4])),
    ],
)
def test_numpy_corner_cases(key):
    data = positions((2, 3, 4, 5))
    x, fetch = lazy(data, (1, 2, 3, 2))
    got = x[key]
    expected = data[key]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)
    assert np.shape(got) == expected.shape


def test_edge_chunks_and_negative_steps_and_chunk_larger_than_array():
    data = positions((10, 7))
    x, fetch = lazy(data, (4, 3))
    np.testing.assert_array_equal(x[::-1, ::-3], data[::-1, ::-3])
    np.testing.assert_array_equal(x[9:2:-4, -1], data[9:2:-4, -1])
    y, _ = lazy(data, (16, 20))
    np.testing.assert_array_equal(y[::-2, 1:], data[::-2, 1:])


def test_flat_fetched_form_is_accepted():
    data = positions((5, 4))
    x, _ = lazy(data, (2, 3), flat=True)
    np.testing.assert_array_equal(x[...], data)


def test_empty_selections_never_fetch():
    data = positions((6, 5))
    x, fetch = lazy(data, (4, 3))
    assert x[2:2].shape == (0, 5)
    assert x[[]].shape == (0, 5)
    assert x[:, np.zeros(5, bool)].shape == (6, 0)
    assert x.oindex[[], 1:3].shape == (0, 2)
    assert x.vindex[np.zeros((0, 2), int), 1].shape == (0, 2)
    assert x.flat[5:5].shape == (0,)
    assert aa.extract(x, slice(0, 0)).shape == (0, 5)
    assert fetch.calls == []


def test_out_of_bounds_and_malformed_keys_raise_index_errors():
    x, fetch = lazy(positions((4, 5)), 2)
    for key in [4, (0, -6), ([0, 4],), (0, 0, 0), (Ellipsis, Ellipsis), 1.5, (np.ones(3, bool),), "a"]:
        with pytest.raises(IndexError):
            x[key]
    with pytest.raises(SelectionError):
        x.oindex[[0], [5]]
    with pytest.raises(SelectionError, match="broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(SelectionError):
        x.vindex[None, 0]
    with pytest.raises(SelectionError):
        x.flat[20]
    assert fetch.calls == []


def test_lazy_boolean_mask_index():
    data = positions((5, 6)) - 10
    x, _ = lazy(data, (2, 4))
    np.testing.assert_array_equal(x[x > 3], data[data > 3])


def test_planning_a_thousand_chunks_is_vectorized():
    """Planning is per chunk, never per element: the number of Python function calls made while planning
    1000 chunks from 100 000 points is far below the number of points (a count, not a time, so it
    holds on any machine and under any load)."""
    import sys

    from altarr.selection import normalize, plan

    shape, chunks = (1000, 1000), (10, 100)
    rng = np.random.default_rng(0)
    points = (rng.integers(0, 1000, 100_000), rng.integers(0, 1000, 100_000))
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        p = plan(normalize((slice(None), slice(None, None, 2)), shape), chunks)
        q = plan(normalize(points, shape, "vector"), chunks)
    finally:
        sys.setprofile(None)
    assert len(p) == 1000 and len(q) == 1000
    # measured: 3 164 calls (about 3 per chunk); per-element planning would make at least 100 000
    assert calls < 20 * len(q), calls
    assert q.points is not None and q.points.npoints == 100_000 and q.work_shape == (100_000,)


def test_iteration_and_len_fetch_one_chunk_row_at_a_time():
    data = positions((5, 3))
    x, fetch = lazy(data, (2, 3))
    assert len(x) == 5
    rows = list(x)
    np.testing.assert_array_equal(np.stack(rows), data)
    assert len(fetch.calls) == 3
    assert 7.0 in x and 99.0 not in x


@pytest.mark.parametrize(
    "key",
    [
        np.s_[2:9:3],  # forward steps: each chunk's piece starts inside it and keeps the stride
        np.s_[1:40:5, 3:29:4],
        np.s_[20:0:-1],  # backwards, stopping above 0: a chunk's piece ends at an offset >= 1
        np.s_[15:7:-1],  # ... ending at offset 1 of its first chunk
        np.s_[30:2:-3, ::-2],
        np.s_[36:7:-7, 29:0:-5],
    ],
)
def test_stepped_and_backward_slices_take_each_chunks_own_stride_and_stop(key):
    """Each chunk's piece of a stepped or backward slice is its own slice of the chunk (start, stop
    and step inside it): a stop that overran, or a lost step, reads a piece of another shape."""
    data = positions((40, 30), "int64")
    x, _ = lazy(data, (7, 8))
    np.testing.assert_array_equal(np.asarray(x[key]), data[key])
