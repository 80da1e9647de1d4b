"""altarr.selection: every index expression normalized once into one canonical Selection, and the chunk
planner over it. The planners' results against NumPy are tested through LazyArray and Dataset in
test_lazy_indexing.py, test_dataset_regions.py and test_numpy_*.py; here the canonical form itself, the
shared chunk arithmetic against a brute-force count, and NumPy's zero-length boolean mask rule."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.errors import SelectionError
from altarr.selection import (
    DimSelection,
    check_index_types,
    forward_pieces,
    normalize,
    plan,
    plan_dim,
    plan_numpy,
    plan_outer,
    plan_region,
    plan_vector,
)


def _kinds(sel):
    return [(i.kind, i.dims) for i in sel.items]


# --- the canonical form -------------------------------------------------------------------------------
def test_every_item_kind_normalizes_to_one_canonical_item():
    shape = (5, 6, 7, 8)
    mask = np.zeros((6, 7), bool)
    mask[1, 2] = True
    s = normalize((-1, None, mask, [[0, -1]]), shape)
    assert _kinds(s) == [("int", (0,)), ("new", ()), ("mask", (1, 2)), ("array", (3,))]
    assert s.items[0].value == DimSelection(4, 1, 1, drop=True)
    assert s.items[3].value.tolist() == [[0, 7]]  # nested list -> non-negative int64 positions
    assert s.items[3].value.dtype == np.int64
    assert [p.tolist() for p in s.items[2].positions()] == [[1], [2]]
    assert not s.basic and not s.ellipsis


def test_ellipsis_zero_d_arrays_and_implicit_trailing_slices():
    s = normalize((np.array(2), ..., slice(None, None, -2)), (4, 3, 5))
    assert _kinds(s) == [("int", (0,)), ("slice", (1,)), ("slice", (2,))]
    assert s.items[1].number == 1 and s.items[2].number == 2  # the ellipsis' slice keeps its place
    assert s.items[2].value == DimSelection(0, 2, 3, reverse=True)
    assert s.basic and s.ellipsis and s.result_shape == (3, 3) and not s.scalar
    t = normalize(1, (4, 3))
    assert _kinds(t) == [("int", (0,)), ("slice", (1,))] and t.items[1].number == 1  # one past the key
    assert normalize((1, 2), (4, 3)).scalar and not normalize((1, ..., 2), (4, 3)).scalar


def test_zero_d_booleans_index_no_dimension():
    s = normalize((np.True_, 1), (3,))
    assert _kinds(s) == [("bool0", ()), ("int", (0,))] and not s.basic


@pytest.mark.parametrize(
    "key",
    [
        slice(None),
        slice(None, None, -1),
        slice(7, 1, -3),
        slice(-2, None, -4),
        slice(5, 5, -1),
        slice(20, -20, -7),
        slice(-20, 20, 6),
    ],
)
def test_dim_selection_round_trips_every_slice(key):
    a = np.arange(11)
    d = DimSelection.of_slice(key, 11)
    assert a[d.as_slice()].tolist() == a[key].tolist()
    assert normalize(key, (11,)).items[0].positions()[0].tolist() == a[key].tolist()


def test_forms_normalize_what_they_accept():
    assert _kinds(normalize(([0, 1], [1, 2]), (3, 3), "outer")) == [("array", (0,)), ("array", (1,))]
    assert _kinds(normalize((np.ones((3, 3), bool),), (3, 3), "vector")) == [("mask", (0, 1))]
    flat = normalize(np.array([True, False] * 3), (2, 3), "flat")
    assert _kinds(flat) == [("array", (0,))] and flat.items[0].value.tolist() == [0, 2, 4]
    with pytest.raises(SelectionError, match="orthogonal boolean indices must be 1-dimensional"):
        normalize(np.ones((3, 3), bool), (3, 3), "outer")
    with pytest.raises(SelectionError, match="vectorized indexing does not accept None"):
        normalize((None, 0), (3, 3), "vector")
    with pytest.raises(SelectionError, match="exactly one index"):
        normalize((0, 1), (3, 3), "flat")
    with pytest.raises(ValueError, match="form must be one of"):
        normalize(0, (3,), "points")


def test_errors_in_numpy_order_and_deferred_array_checks():
    with pytest.raises(SelectionError, match="single ellipsis"):
        normalize((..., 0, ...), (3, 3))
    with pytest.raises(SelectionError, match="too many indices for array: array is 2-dimensional, but 3"):
        normalize((0, 0, 0), (3, 3))
    with pytest.raises(SelectionError, match="index 9 is out of bounds for axis 0 with size 3"):
        normalize(([0, 9], 1), (3, 4))
    with pytest.raises(SelectionError, match="arrays used as indices must be of integer"):
        normalize(np.array([0.5]), (3,))
    with pytest.raises(SelectionError, match="only integers, slices"):
        normalize("a", (3,))
    # an assignment's order: integers before the values, arrays after (resolve=False defers them)
    check_index_types(([0, 9], 1), (3, 4))
    deferred = normalize(([0, 9], 1), (3, 4), resolve=False)
    assert not deferred.resolved
    with pytest.raises(SelectionError, match="index 9 is out of bounds"):
        deferred.resolve()
    with pytest.raises(SelectionError, match="index 7 is out of bounds for axis 1"):
        check_index_types(([0, 9], 7), (3, 4))


def test_region_plans_take_only_basic_selections():
    with pytest.raises(SelectionError, match="datasets take basic selections .* got list"):
        plan_region(normalize((0, [1]), (3, 3)), (2, 2))
    r = plan_region(normalize((slice(None, None, -1), None, 2), (5, 4)), (2, 3))
    assert r.shape == (5, 1) and r.work_shape == (5, 1)
    work = np.arange(5).reshape(5, 1)
    assert r.finish(work).ravel().tolist() == [4, 3, 2, 1, 0]
    assert r.unfinish(r.finish(work)).tolist() == work.tolist()


# --- the chunk arithmetic both planners share -----------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 7, 12])
@pytest.mark.parametrize("chunk", [1, 3, 5])
def test_forward_pieces_against_brute_force(size, chunk):
    for key in [slice(None), slice(1, None, 2), slice(None, None, -3), slice(2, 11, 4), slice(5, 1)]:
        d = DimSelection.of_slice(key, size)
        idx = list(range(d.start, d.start + d.step * d.n, d.step))
        expect = {}
        for k, i in enumerate(idx):
            expect.setdefault(i // chunk, []).append((k, i % chunk))
        ids, k0, k1, first = (a.tolist() for a in forward_pieces(d, chunk, size))
        assert ids == sorted(expect)
        for j, a, b, f in zip(ids, k0, k1, first, strict=True):
            assert [k for k, _ in expect[j]] == list(range(a, b)) and expect[j][0][1] == f
        pieces = plan_dim(d, chunk, size)
        assert [p[0] for p in pieces] == ids
        for j, src, dst in pieces:
            assert list(range(size))[j * chunk : (j + 1) * chunk][src] == idx[dst]


def test_plans_of_one_selection_agree_across_forms():
    shape, chunks = (9, 8), (4, 3)
    rows = np.array([0, 8, 4])
    a = normalize((rows, slice(None)), shape)
    o = normalize((rows, slice(None)), shape, "outer")
    v = normalize((rows, slice(None)), shape, "vector")
    assert (
        plan(a, chunks).coords.tolist() == plan(o, chunks).coords.tolist() == plan(v, chunks).coords.tolist()
    )
    assert plan_outer(2, shape, chunks, keep_dims=True).result_shape == (1, 8)
    assert plan_vector(([1, 2], [3, 4]), shape, chunks).result_shape == (2,)


# --- NumPy's zero-length boolean mask rule (a mask axis of length 0 is not compared) -----------------
def _fetch_arange(shape, chunks):
    full = np.arange(int(np.prod(shape)), dtype="f8").reshape(shape)

    def fetch(coords):
        return [
            full[tuple(slice(c * k, (c + 1) * k) for c, k in zip(row, chunks, strict=True))] for row in coords
        ]

    return full, fetch


def test_empty_mask_on_an_empty_stacked_array_like_numpy():
    """The numpy helper's case: ``np.stack([x, x], 0).T.astype(f8)[..., None, <empty bool mask>]`` on an
    empty (0, 0, 0) array raised SelectionError (the mask's length 0 against the stacked axis of 2)."""
    x = aa.altarr((0, 0, 0), (1, 1, 1), lambda c: [np.zeros(0)] * len(c))
    ref = np.stack([np.zeros((0, 0, 0))] * 2, 0).T.astype("f8")
    y = np.stack([x, x], 0).T.astype("f8")
    for mask in (np.zeros(0, bool), np.zeros((0, 0), bool)):
        got = y[..., None, mask]
        assert isinstance(got, np.ndarray) and got.shape == ref[..., None, mask].shape


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), np.zeros(0, bool)),
        (np.zeros(0, bool),),
        (np.zeros((0, 0), bool),),
        (np.zeros((0, 3), bool),),
        (slice(1, None), np.zeros(0, bool)),
        (np.zeros(0, bool), [0]),
    ],
)
def test_zero_length_masks_read_and_write_like_numpy(key):
    shape, chunks = (4, 3), (3, 2)
    full, fetch = _fetch_arange(shape, chunks)
    expect = full[key]
    x = aa.altarr(shape, chunks, fetch, dtype="f8")
    assert x[key].shape == expect.shape
    ds = aa.create_dataset("memory://sel-empty-mask", shape=shape, dtype="f8", chunks=chunks, overwrite=True)
    ds[...] = full
    assert ds[key].shape == expect.shape
    ds[key] = 5.0  # selects nothing: nothing changes, no error
    np.testing.assert_array_equal(ds[...], full)


def test_masks_of_the_wrong_nonzero_length_still_refused_and_oindex_vindex_stay_strict():
    with pytest.raises(SelectionError, match="boolean index did not match indexed array along axis 1"):
        plan_numpy((slice(None), np.zeros(2, bool)), (4, 3), (2, 2))
    with pytest.raises(
        SelectionError, match="axis 1; size of axis is 3 but size of corresponding boolean axis is 5"
    ):
        plan_numpy(np.zeros((0, 5), bool), (4, 3), (2, 2))  # the length-0 axis is skipped, not the other
    with pytest.raises(SelectionError, match="boolean index did not match"):
        plan_outer((slice(None), np.zeros(0, bool)), (4, 3), (2, 2))
    with pytest.raises(SelectionError, match="boolean index did not match"):
        plan_vector((slice(None), np.zeros(0, bool)), (4, 3), (2, 2))
