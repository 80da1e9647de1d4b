"""altarr.selection: every index expression normalized once into one canonical Selection, and the chunk
planner over it. The planners' results against NumPy are tested through LazyArray and Dataset in
test_lazy_indexing.py, test_dataset_regions.py and test_numpy_*.py; here the canonical form itself, the
shared chunk arithmetic against a brute-force count, and NumPy's zero-length boolean mask rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import lazy, positions
from altarr.errors import GridError, SelectionError
from altarr.selection import (
    DimSelection,
    Item,
    RegionPlan,
    chunk_users,
    hyperslab_key,
    nchunks_of,
    normalize,
    plan,
    plan_dim,
    plan_selections,
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
    assert s.items[0].value == DimSelection(4, 1, 1)
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
        slice(2, 9),
        slice(3, None, 2),
        slice(1, 10, 4),
        slice(9, 2, -3),
        slice(6, None, -3),  # backwards, its stop exactly on index 0
        slice(5, 1),
    ],
)
def test_dim_selection_round_trips_every_slice(key):
    a = np.arange(11)
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
    with pytest.raises(SelectionError, match="too many indices for flat iterator"):
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
    normalize(([0, 9], 1), (3, 4), resolve=False)
    deferred = normalize(([0, 9], 1), (3, 4), resolve=False)
    assert not deferred.resolved
    with pytest.raises(SelectionError, match="index 9 is out of bounds"):
        deferred.resolve()
    with pytest.raises(SelectionError, match="index 7 is out of bounds for axis 1"):
        normalize(([0, 9], 7), (3, 4), resolve=False)
    # a mask's shape is NumPy's before the values: checked even unresolved
    with pytest.raises(SelectionError, match="boolean index did not match indexed array along axis 1"):
        normalize((Ellipsis, np.array([False])), (3, 0), resolve=False)
    assert (
        normalize((Ellipsis, np.array([False] * 4)), (3, 4), resolve=False).resolve().items[1].kind == "mask"
    )


def test_region_plans_take_only_basic_selections():
    with pytest.raises(SelectionError, match="datasets take basic selections .* got list"):
        RegionPlan(normalize((0, [1]), (3, 3)), (2, 2))
    r = RegionPlan(normalize((slice(None, None, -1), None, 2), (5, 4)), (2, 3))
    assert r.shape == (5, 1) and r.work_shape == (5, 1)
    work = np.arange(5).reshape(5, 1)
    assert r.finish(work).ravel().tolist() == [4, 3, 2, 1, 0]
    assert r.unfinish(r.finish(work)).tolist() == work.tolist()


# --- the chunk arithmetic both planners share -----------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 7, 12])
@pytest.mark.parametrize("chunk", [1, 3, 5])
def test_plan_dim_against_brute_force(size, chunk):
    for key in [slice(None), slice(1, None, 2), slice(None, None, -3), slice(2, 11, 4), slice(5, 1)]:
        d = DimSelection.of_slice(key, size)
        idx = list(range(d.start, d.start + d.step * d.n, d.step))
        expect = {}
        for k, i in enumerate(idx):
            expect.setdefault(i // chunk, []).append(k)
        pieces = plan_dim(d, chunk)
        assert [p[0] for p in pieces] == sorted(expect)
        for j, src, dst in pieces:
            assert list(range(dst.start, dst.stop)) == expect[j] and src.step == d.step
            assert list(range(size))[j * chunk : (j + 1) * chunk][src] == idx[dst]


def test_pieces_far_out_on_a_huge_dimension_are_exact():
    """A selection near the end of a dimension of 2**53+200 elements, chunks of 1: the first and last
    chunk ids are not floats' neighbours (2**53+3 and 2**53+101 round to 2**53+4 and 2**53+100), and
    only the touched chunks are enumerated (never the 2**53 before them)."""
    size = 2**53 + 200
    d = DimSelection(2**53 + 3, 1, 99)
    ids = list(range(2**53 + 3, 2**53 + 102))
    assert plan_dim(d, 1) == [(j, slice(0, 1, 1), slice(k, k + 1)) for k, j in enumerate(ids)]
    p = plan(normalize(slice(2**53 + 3, 2**53 + 102), (size,)), (1,))
    assert p.coords[:, 0].tolist() == ids and p.result_shape == (99,)
    # a few chunks far out are walked one by one from the first touched chunk, not from chunk 0
    q = plan(normalize(slice(2**53 + 3, 2**53 + 8, 2), (size,)), (1,))
    assert q.coords[:, 0].tolist() == [2**53 + 3, 2**53 + 5, 2**53 + 7]
    # a step past the chunk size visits only the touched chunks (one a selected element)
    assert [j for j, _, _ in plan_dim(DimSelection(5, 10**12, 3), 4)] == [1, 250000000001, 500000000001]


def test_plans_of_one_selection_agree_across_forms():
    shape, chunks = (9, 8), (4, 3)
    rows = np.array([0, 8, 4])
    a = normalize((rows, slice(None)), shape)
    o = normalize((rows, slice(None)), shape, "outer")
    v = normalize((rows, slice(None)), shape, "vector")
    assert (
        plan(a, chunks).coords.tolist() == plan(o, chunks).coords.tolist() == plan(v, chunks).coords.tolist()
    )
    assert plan(normalize(2, shape, "outer"), chunks, keep_dims=True).result_shape == (1, 8)
    assert plan(normalize(([1, 2], [3, 4]), shape, "vector"), chunks).result_shape == (2,)


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
        plan(normalize((slice(None), np.zeros(2, bool)), (4, 3)), (2, 2))
    with pytest.raises(
        SelectionError, match="axis 1; size of axis is 3 but size of corresponding boolean axis is 5"
    ):
        plan(normalize(np.zeros((0, 5), bool), (4, 3)), (2, 2))  # the length-0 axis is skipped, not the other
    with pytest.raises(SelectionError, match="boolean index did not match"):
        plan(normalize((slice(None), np.zeros(0, bool)), (4, 3), "outer"), (2, 2))
    with pytest.raises(SelectionError, match="boolean index did not match"):
        plan(normalize((slice(None), np.zeros(0, bool)), (4, 3), "vector"), (2, 2))


# --- hyperslab keys ------------------------------------------------------------------------------------
def test_hyperslab_subscripts_one_per_dimension_none_for_whole():
    x = aa.altarr((4, 5), (2, 2), lambda c: [np.arange(4.0).reshape(2, 2)] * len(c))
    assert hyperslab_key((1, [0, 3]), 2) == (1, [0, 3])  # a subscript for every dimension is fine
    assert hyperslab_key((None, 2), 2) == (slice(None), 2)
    assert hyperslab_key((), 2) == (slice(None), slice(None))
    assert aa.extract(x, None, 1).shape == (4,)
    assert aa.extract(x, 1, 1).shape == ()
    with pytest.raises(GridError) as e:
        aa.extract(x, 0, 0, 0)
    assert str(e.value) == "3 subscripts for a 2-dimensional array"
    with pytest.raises(GridError) as e:
        aa.plan(x, Ellipsis, 0)
    assert str(e.value) == "extract/plan take one subscript per dimension; use None for a whole dimension"


# --- writes through a plan: values laid out as the work array (unfinish) and scattered into chunks ------
@pytest.mark.parametrize(
    ("form", "key"),
    [
        ("numpy", (slice(None), [2, 0, 3], slice(1, None))),  # an index array in the middle: stays in place
        ("numpy", (1, slice(None), [[0, 4], [2, 2]])),  # separated: the broadcast axes go first
        ("numpy", (slice(None, None, -1), np.array([True, False, True, True]), 3)),
        ("oindex", (slice(2, None), 0, [4, 0, 1])),  # a dropped integer between two kept axes
        ("oindex", ([3, 1], np.array([False, True, True, False]), slice(None, None, -2))),
        ("vindex", ([0, 3, 2], slice(None), [1, 1, 4])),
    ],
)
def test_planned_writes_put_every_value_where_numpy_would(form, key):
    shape, chunks = (4, 4, 5), (3, 2, 2)
    full = np.arange(80, dtype="i4").reshape(shape)
    ds = aa.create_dataset(
        "memory://sel-planned-write", shape=shape, dtype="i4", chunks=chunks, overwrite=True
    )
    ds[...] = full
    expect = full.copy()
    if form == "numpy":
        target = expect[key]
        values = -1 - np.arange(target.size, dtype="i4").reshape(target.shape)
        expect[key] = values
        ds[key] = values
    elif form == "oindex":
        target = ds.oindex[key]
        values = -1 - np.arange(target.size, dtype="i4").reshape(target.shape)
        idx = [np.arange(n)[k] if not isinstance(k, int) else k for k, n in zip(key, shape, strict=True)]
        expect[np.ix_(*[np.atleast_1d(i) for i in idx])] = values.reshape(
            [np.atleast_1d(i).size for i in idx]
        )
        ds.oindex[key] = values
    else:
        target = ds.vindex[key]
        values = -1 - np.arange(target.size, dtype="i4").reshape(target.shape)
        expect[key[0], :, key[2]] = values
        ds.vindex[key] = values
    assert len({int(v) for v in values.ravel()}) == values.size  # every value distinct
    np.testing.assert_array_equal(ds[...], expect)


# --- per-chunk element counts (aa.plan's "elements") ---------------------------------------------------
@pytest.mark.parametrize(
    ("form", "key"),
    [
        ("numpy", (slice(1, 9, 3), [0, 7, 7, 2])),  # repeated points count twice
        ("numpy", (np.array([[True, False] * 4] * 9),)),
        ("numpy", (4, slice(None, None, -1))),
        ("outer", ([8, 0, 1], slice(2, 7))),
        ("vector", ([0, 8, 8, 3], [7, 1, 1, 0])),
        ("flat", [70, 3, 3, 0, 71]),
        ("flat", slice(5, 60, 7)),
    ],
)
def test_row_elements_count_the_selected_elements_of_every_touched_chunk(form, key):
    shape, chunks = (9, 8), (4, 3)
    ids = np.arange(3 * 3).reshape(3, 3)
    chunk_of = ids[np.arange(9)[:, None] // 4, np.arange(8)[None, :] // 3]  # chunk id of every element
    if form == "outer":
        picked = chunk_of[np.ix_(key[0], np.arange(8)[key[1]])]
    elif form == "vector":
        picked = chunk_of[tuple(key)]
    elif form == "flat":
        picked = chunk_of.flat[key]
    else:
        picked = chunk_of[key]
    p = plan(normalize(key, shape, form), chunks)
    counts = dict(zip(*np.unique(np.ravel(picked), return_counts=True), strict=True))
    got = p.row_elements()
    assert got.dtype == np.int64
    assert {int(ids[tuple(c)]): int(n) for c, n in zip(p.coords.tolist(), got, strict=True)} == counts
    assert int(got.sum()) == np.size(picked)


def test_row_elements_of_an_empty_selection_is_empty():
    for p in (
        plan(normalize((slice(2, 2),), (9, 8)), (4, 3)),
        plan(normalize(([], []), (9, 8), "vector"), (4, 3)),
    ):
        got = p.row_elements()
        assert got.dtype == np.int64 and got.tolist() == []


# --- many selections at once -------------------------------------------------------------------------
def test_plan_selections_plans_each_in_its_mode_and_chunk_users_merges_them():
    shape, chunks = (8, 6), (2, 3)
    sels = [np.s_[0:3, 1], np.s_[[7, 1], 4], np.s_[1, 2:]]
    plans = plan_selections(sels, shape, chunks)
    assert [p.coords.tolist() for p in plans] == [
        plan(normalize(s, shape), chunks).coords.tolist() for s in sels
    ]
    assert [p.result_shape for p in plans] == [np.empty(shape)[s].shape for s in sels]
    assert chunk_users(plans) == {
        (0, 0): [(0, 0), (2, 0)],
        (1, 0): [(0, 1)],
        (0, 1): [(1, 0), (2, 1)],
        (3, 1): [(1, 1)],
    }
    (o,) = plan_selections([([0, 5], [0, 5])], shape, chunks, "oindex")
    (v,) = plan_selections([([0, 5], [0, 5])], shape, chunks, "vindex")
    assert o.result_shape == (2, 2) and v.result_shape == (2,)
    assert o.coords.tolist() == [[0, 0], [0, 1], [2, 0], [2, 1]] and v.coords.tolist() == [[0, 0], [2, 1]]
    assert plan_selections([], shape, chunks) == [] and chunk_users([]) == {}


def test_plan_selections_refuses_an_unknown_mode_and_a_single_selection():
    with pytest.raises(ValueError) as e:
        plan_selections([np.s_[0]], (4,), (2,), "points")
    assert str(e.value) == "mode must be one of ['numpy', 'oindex', 'vindex'], got 'points'"
    for not_a_list in [np.s_[0:2, 1], "0:2", np.s_[0:2], 3]:
        with pytest.raises(TypeError) as e:
            plan_selections(not_a_list, (4, 4), (2, 2))
        assert str(e.value) == (
            "read_regions/read_many take a list of selections (one per region), e.g. [np.s_[0:4, 2], ...]"
        )


# --- NumPy's exact errors for index arrays and for the flat iterator -----------------------------------
def _numpy_error(index, key):
    with pytest.raises(IndexError) as e:
        index(key)
    return str(e.value)


@pytest.mark.parametrize(
    "key",
    [
        [5, 21, 22],
        [3, 20, 25],  # exactly the size is the first offender
        [30, -25],
        [-25, 30],
        [-20, 30],  # minus the size is in bounds
        np.array([[3, 21], [22, 0]]),
        np.array([5, 21, 22], np.uint8),
        np.array([3, 20, 25], np.uint8),
        np.array([1, 2**63], np.uint64),  # cast as NumPy casts it (to -2**63)
    ],
)
def test_an_index_array_out_of_bounds_names_numpys_first_offender(key):
    data = np.zeros((20, 3))
    with pytest.raises(SelectionError) as e:
        normalize((key, 0), data.shape)
    assert str(e.value) == _numpy_error(data.__getitem__, (key, 0))
    with pytest.raises(SelectionError) as e:
        normalize((0, key), data.T.shape)
    assert str(e.value) == _numpy_error(data.T.__getitem__, (0, key))


@pytest.mark.parametrize(
    "key",
    [
        20,
        -21,
        [3, 21, 22],
        [30, -25],
        np.array([[3, 21], [22, 0]]),
        (0, 1),
        (0, 1, 2),
        np.zeros((4, 5), bool),
        np.zeros(21, bool),
        np.zeros(19, bool),
        "a",
        None,
    ],
)
def test_flat_errors_are_numpys(key):
    data = positions((4, 5))
    x, fetch = lazy(data, (2, 3))
    with pytest.raises(SelectionError) as e:
        x.flat[key]
    assert str(e.value) == _numpy_error(data.flat.__getitem__, key)
    assert fetch.calls == []


@pytest.mark.parametrize("key", [(), Ellipsis, 7, -1, slice(None, None, -3), slice(3, 11), [19, 0, 19]])
def test_flat_selects_like_numpy_and_normalizes_to_one_canonical_item(key):
    data = positions((4, 5))
    x, _ = lazy(data, (2, 3))
    expected = data.flat[key]
    got = x.flat[key]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)
    assert plan(normalize(key, (4, 5), "flat"), (2, 3)).chunks == (2, 3)
    assert normalize(key, (4, 5), "flat").form == "flat"
    (item,) = normalize(key, (4, 5), "flat").items
    if isinstance(key, int):
        assert item == Item("int", (0,), DimSelection(key % 20, 1, 1), 0)
    elif isinstance(key, list):
        assert item.kind == "array" and item.dims == (0,) and item.number == 0
        assert item.value.tolist() == key and item.value.dtype == np.int64
        mask = np.isin(np.arange(20), key)
        (m,) = normalize(mask, (4, 5), "flat").items  # a mask is its positions
        assert m.kind == "array" and m.dims == (0,) and m.number == 0
        assert m.value.tolist() == sorted(set(key)) and m.value.dtype == np.int64
    else:
        whole = slice(None) if key in ((), Ellipsis) else key
        assert item == Item("slice", (0,), DimSelection.of_slice(whole, 20), 0)


# --- grouping points by chunk (_runs): the plan, not only the values ----------------------------------
def test_touched_chunks_are_listed_in_order_whatever_the_order_of_the_points():
    for form in ("numpy", "outer", "vector"):
        assert plan(normalize(([7, 1],), (9,), form), (3,)).coords.tolist() == [[0], [2]]
        assert plan(normalize(([8, 2, 4],), (9,), form), (3,)).coords.tolist() == [[0], [1], [2]]
    assert plan(normalize([7, 1], (9,), "flat"), (3,)).coords.tolist() == [[0], [2]]


def test_points_already_in_chunk_order_are_copied_by_slices():
    """Ascending points need no sort: every chunk's points are a slice of the result (a basic copy, no
    gather), for point dimensions and for an orthogonal index array alike."""
    v = plan(normalize(([0, 1, 1, 5, 7], [0, 2, 2, 1, 0]), (9, 3), "vector"), (3, 3))
    assert v.coords.tolist() == [[0, 0], [1, 0], [2, 0]]
    assert v.points.pidx == [slice(0, 3), slice(3, 4), slice(4, 5)]
    o = plan(normalize(([0, 1, 2, 5, 7], slice(None)), (9, 3), "outer"), (3, 3))
    assert o.ortho[0].out_sel == [slice(0, 3), slice(3, 4), slice(4, 5)]
    assert o.ortho[0].in_sel == [slice(0, 3), slice(2, 3), slice(1, 2)]


def test_repeated_points_written_the_last_value_wins_as_in_numpy():
    """Many repeated, unsorted points (a stable sort keeps each chunk's points in request order)."""
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 12, 300)
    values = np.arange(300, dtype="i4")
    expect = np.zeros(12, "i4")
    expect[idx] = values
    ds = aa.create_dataset(
        "memory://sel-repeated-points", shape=(12,), dtype="i4", chunks=(4,), overwrite=True
    )
    ds[idx] = values
    np.testing.assert_array_equal(ds[...], expect)
    ds2 = aa.create_dataset(
        "memory://sel-repeated-points2", shape=(12,), dtype="i4", chunks=(4,), overwrite=True
    )
    ds2.vindex[idx] = values
    np.testing.assert_array_equal(ds2[...], expect)


@pytest.mark.parametrize("key", [0, -1, [0, 0], Ellipsis, slice(None), slice(1, None)])
def test_flat_of_a_zero_d_array_like_numpy(key):
    data = np.array(5.0)
    x = aa.altarr((), (), lambda c: [data] * len(c))
    expected = data.flat[key]
    got = x.flat[key]
    assert type(got) is type(expected) and np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)
    p = plan(normalize(key, (), "flat"), ())
    assert p.chunks == () and p.coords.tolist() == ([[]] if np.size(expected) else [])


# --- integers and slices normalize to the canonical items ----------------------------------------------
def test_integers_and_slices_normalize_to_the_canonical_items():
    s = normalize((np.int64(3), slice(4, 1, -1), 2), (5, 6, 7, 8))
    assert s.items == (
        Item("int", (0,), DimSelection(3, 1, 1), 0),
        Item("slice", (1,), DimSelection(2, 1, 3, reverse=True), 1),
        Item("int", (2,), DimSelection(2, 1, 1), 2),
        Item("slice", (3,), DimSelection(0, 1, 8), 3),
    )
    assert s.form == "numpy" and s.basic and not s.ellipsis and s.resolved
    deferred = normalize((np.int64(3), slice(4, 1, -1), 2), (5, 6, 7, 8), resolve=False)
    assert deferred.items == s.items and deferred.resolved is False  # as documented for resolve=False
    assert s.result_shape == np.empty((5, 6, 7, 8))[3, 4:1:-1, 2].shape
    # the same items as the general path gives them (an item it must classify: a 0-d index array)
    g = normalize((np.array(3), slice(4, 1, -1), 2), (5, 6, 7, 8))
    assert g.items == s.items


@pytest.mark.parametrize("key", [5, -6, (0, 9), (np.int64(-7), 0), (slice(None), np.uint8(200))])
def test_an_integer_out_of_bounds_raises_numpys_message(key):
    data = np.zeros((5, 7))
    with pytest.raises(SelectionError) as e:
        normalize(key, data.shape)
    assert str(e.value) == _numpy_error(data.__getitem__, key)


def test_index_arrays_become_int64_positions_whatever_their_dtype():
    keys = ([], np.array([], np.uint8), np.array([1, 4], np.uint8), np.array([-1, 2], np.int16))
    for key in keys + (np.array([1, 2**64 - 1], np.uint64),):  # NumPy reads 2**64-1 as -1
        (item,) = normalize((key,), (5,)).items
        assert item.value.dtype == np.int64 and item.value.tolist() == np.arange(5)[key].tolist()
        (item,) = normalize((key,), (5,), "outer").items
        assert item.value.dtype == np.int64


# --- mutation gaps: normalize and regions -----------------------------------------------------------------
class _ArrayLike:
    """Not a list nor an integer, but convertible by ``__array__`` (NumPy indexes with it)."""

    def __array__(self, dtype=None, copy=None):
        return np.array([0, 2])


_BASIC_ONLY = (
    "datasets take basic selections (integers, slices, '...'); got {}. For integer-array, boolean or point "
    "selections use the lazy array: altarr.open(path).oindex[...] / .vindex[...] / x[...]"
)


@pytest.mark.parametrize(
    ("key", "shape", "form", "message"),
    [
        ((..., ...), (3, 3), "numpy", "an index can only have a single ellipsis ('...')"),
        (np.array([1.0]), (5,), "numpy", "arrays used as indices must be of integer (or boolean) type"),
        ((None,), (3,), "outer", "orthogonal and vectorized indexing do not accept None or a 0-d boolean"),
        ((True,), (3,), "outer", "orthogonal and vectorized indexing do not accept None or a 0-d boolean"),
        ((None,), (3,), "vector", "vectorized indexing does not accept None or a 0-d boolean"),
        ((True,), (3,), "vector", "vectorized indexing does not accept None or a 0-d boolean"),
        ((np.ones((2, 2), bool),), (2, 2), "outer", "orthogonal boolean indices must be 1-dimensional"),
    ],
)
def test_refused_index_expressions_give_their_exact_message(key, shape, form, message):
    with pytest.raises(SelectionError) as err:
        normalize(key, shape, form)
    assert str(err.value) == message
    if form == "numpy":
        with pytest.raises(IndexError) as np_err:
            np.zeros(shape)[key]
        assert str(np_err.value) == message


@pytest.mark.parametrize("key", [[1.0], [1.5, 2], [[1.0]], ["a"]])
def test_a_non_empty_list_that_is_not_integers_is_refused_with_numpys_message(key):
    """A list is refused with NumPy's message for a bad item, not the one for a float array."""
    with pytest.raises(IndexError) as np_err:
        np.arange(5)[key]
    with pytest.raises(SelectionError) as err:
        normalize(key, (5,))
    assert (
        str(err.value)
        == str(np_err.value)
        == (
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
            "are valid indices"
        )
    )


def test_an_object_with_array_indexes_as_its_array():
    sel = normalize(_ArrayLike(), (5,))
    assert [i.kind for i in sel.items] == ["array"]
    np.testing.assert_array_equal(sel.items[0].value, np.arange(5)[_ArrayLike()])


def test_a_zero_d_boolean_array_is_a_zero_d_boolean():
    for b in (True, False):
        sel = normalize((np.array(b), 1), (3,))
        assert [(i.kind, i.value) for i in sel.items][0] == ("bool0", b)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (slice(5, 2), DimSelection(0, 1, 0)),
        (slice(7, 2, 2), DimSelection(0, 2, 0)),
        (slice(2, 5, -1), DimSelection(0, 1, 0, reverse=True)),
    ],
)
def test_an_empty_slice_starts_at_zero(key, expected):
    assert DimSelection.of_slice(key, 10) == expected


def test_positions_of_an_integer_array_item_are_its_positions():
    (pos,) = normalize([0, -1, 2], (4,)).items[0].positions()
    np.testing.assert_array_equal(pos, np.arange(4)[[0, -1, 2]])


def test_resolved_flag_is_a_bool_and_resolve_sets_it():
    lazy_sel = normalize(([0, 2], 1), (3, 3), resolve=False)
    assert lazy_sel.resolved is False
    assert lazy_sel.resolve().resolved is True
    assert normalize(([0, 2], 1), (3, 3)).resolved is True


def test_new_and_zero_d_boolean_items_keep_their_place_and_source():
    sel = normalize((0, None, True), (3,))
    new, bool0 = sel.items[1], sel.items[2]
    assert (new.kind, new.value, new.number) == ("new", None, 1)
    assert (bool0.kind, bool0.value, bool0.number, bool0.raw) == ("bool0", True, 2, True)


@pytest.mark.parametrize(("key", "name"), [(([0, 1],), "list"), ((0, True), "bool")])
def test_region_plans_name_the_refused_item(key, name):
    with pytest.raises(SelectionError) as err:
        RegionPlan(normalize(key, (4,)), (2,))
    assert str(err.value) == _BASIC_ONLY.format(name)


def test_region_plan_needs_one_chunk_length_per_dimension():
    with pytest.raises(ValueError):
        RegionPlan(normalize(np.s_[1:3], (4, 4)), (2,))


@pytest.mark.parametrize("key", [(1, 2), (..., 1, 2), np.s_[1:3, 2]])
def test_region_plans_finish_as_numpy_does(key):
    x = np.arange(16).reshape(4, 4)
    r = RegionPlan(normalize(key, x.shape), (2, 2))
    work = x[tuple(slice(d.start, d.start + d.step * d.n, d.step) for d in r.dims)]  # read forwards
    out = r.finish(work)
    assert type(out) is type(x[key])
    np.testing.assert_array_equal(out, x[key])


@pytest.mark.parametrize("form", ["numpy", "outer", "vector"])
def test_items_keep_the_expression_item_they_came_from(form):
    key = (slice(1, 3), 2, [0, 1])
    sel = normalize(key, (4, 4, 4, 4), form)
    assert [i.raw for i in sel.items] == [slice(1, 3), 2, [0, 1], slice(None)]


# --- plan tables gathered against NumPy ------------------------------------------------------------------
def _gather(p, x: np.ndarray):
    """The plan ``p`` executed over the chunks of ``x``: every touched chunk placed once, in plan order."""
    work = p.new_work(x.dtype)
    for i, c in enumerate(p.coords.tolist()):
        chunk = x[tuple(slice(j * s, (j + 1) * s) for j, s in zip(c, p.chunks, strict=True))]
        p.place(work, i, chunk)
    return p.finish(work)


def _touched(x_shape, chunks, key) -> list[list[int]]:
    """Brute force: the chunks holding an element NumPy's outer-indexed result takes (sorted)."""
    grid = np.indices(x_shape).reshape(len(x_shape), -1).T
    owner = np.arange(len(grid)).reshape(x_shape)
    picked = owner[np.ix_(*[np.arange(n)[k].reshape(-1) for k, n in zip(key, x_shape, strict=True)])]
    return sorted(
        {tuple(int(v) // c for v, c in zip(grid[i], chunks, strict=True)) for i in picked.reshape(-1)}
    )


@pytest.mark.parametrize(
    "shape, chunks, key",
    [
        # a second chunk whose points are not step 1 inside it: its output slice starts past 0
        ((10,), (4,), (np.array([0, 5, 7]),)),
        # index arrays on the last two of three axes (non step 1 inside the chunk) next to a slice
        ((4, 5, 6), (2, 4, 4), (slice(None), np.array([0, 2]), np.array([1, 3]))),
        ((4, 5, 6), (2, 4, 4), (np.array([3, 0]), slice(1, 5), np.array([5, 1, 3]))),
        # an empty index array touches no chunk at all
        ((10, 3), (4, 2), (np.array([], dtype=np.int64), slice(None))),
    ],
)
def test_oindex_plan_gathers_like_numpy_from_only_the_touched_chunks(shape, chunks, key):
    x = np.arange(int(np.prod(shape))).reshape(shape)
    p = plan(normalize(key, shape, "outer"), chunks)
    assert p.coords.tolist() == [list(c) for c in _touched(shape, chunks, key)]
    got = _gather(p, x)
    want = x[np.ix_(*[np.arange(n)[k].reshape(-1) for k, n in zip(key, shape, strict=True)])]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "form, key, scalar",
    [
        ("outer", (1, 2), True),
        ("outer", (Ellipsis, 1, 2), False),
        ("vector", (1, 2), True),
        ("vector", (1, Ellipsis, 2), False),
        ("numpy", (1, np.array(2)), True),
        ("numpy", (Ellipsis, np.array(1), [2]), False),
    ],
)
def test_a_zero_d_result_is_a_numpy_scalar_unless_an_ellipsis_was_given(form, key, scalar):
    x = np.arange(16).reshape(4, 4)
    got = _gather(plan(normalize(key, (4, 4), form), (2, 2)), x)
    if scalar:
        assert type(got) is np.int64 and got == x[1, 2]
    else:
        want = x[Ellipsis, 1, 2] if form != "numpy" else x[Ellipsis, np.array(1), [2]]
        assert type(got) is np.ndarray and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)


def test_index_arrays_that_do_not_broadcast_name_their_shapes():
    with pytest.raises(SelectionError) as e:
        plan(normalize(([0, 1], [0, 1, 2]), (4, 4)), (2, 2))
    assert (
        str(e.value)
        == "shape mismatch: indexing arrays could not be broadcast together with shapes (2,) (3,)"
    )


def test_plan_drops_the_dimension_of_an_outer_integer_by_default():
    assert plan(normalize((1,), (8,), "outer"), (2,)).result_shape == ()
    assert plan(normalize((1,), (8,), "outer"), (2,), keep_dims=True).result_shape == (1,)


def test_nchunks_of_refuses_a_chunk_shape_of_another_rank():
    assert nchunks_of((10, 0, 7), (4, 2, 7)) == (3, 0, 1)
    for chunks in [(4,), (4, 2, 7, 1)]:
        with pytest.raises(ValueError, match=r"^zip\(\) argument 2 is (shorter|longer) than argument 1$"):
            nchunks_of((10, 0, 7), chunks)


# --- point groups: empty selections, 0-d booleans, astronomically large chunk grids ------------------
def test_point_groups_of_an_empty_selection_are_empty_and_int64():
    p = plan(normalize(([], []), (9, 8), "vector"), (4, 3))
    pts = p.points
    assert p.shape == (9, 8) and len(p) == 0 and p.result_shape == (0,)
    assert pts.chunk_ids.dtype == np.int64 and pts.chunk_ids.shape == (0, 2)
    assert pts.pidx == [] and pts.offsets == []
    assert pts.sizes.dtype == np.int64 and pts.sizes.shape == (0,)


def test_a_zero_d_boolean_makes_one_point_group_of_every_point():
    """``x[True]`` and ``x[False]`` on a 2-d array: no point dimension, the whole array once (or not)."""
    full = np.arange(72.0).reshape(9, 8)
    p = plan(normalize((np.True_,), (9, 8)), (4, 3))
    pts = p.points
    assert pts.chunk_ids.dtype == np.int64 and pts.chunk_ids.shape == (1, 0)
    assert pts.pidx == [slice(0, 1)] and pts.sizes.tolist() == [1] and pts.sizes.dtype == np.int64
    assert p.row_elements().tolist() == [12, 12, 8, 12, 12, 8, 3, 3, 2]
    work = p.new_work(full.dtype)
    for i, c in enumerate(p.coords.tolist()):
        p.place(work, i, full[c[0] * 4 : c[0] * 4 + 4, c[1] * 3 : c[1] * 3 + 3])
    np.testing.assert_array_equal(p.finish(work), full[np.True_])


def test_points_on_a_chunk_grid_of_more_than_2_63_chunks_are_grouped_exactly():
    """A grid of 2**86 chunks (chunks of 1): the chunk count overflows int64 and cannot be raveled, so
    points are grouped by their unique chunk rows; a chunk id past 2**53 stays exact (not a float)."""
    shape = (2**54, 2**32)
    rows = np.array([2**53 + 1, 5, 2**53 + 1, 0])
    cols = np.array([3, 2**32 - 1, 3, 7])
    p = plan(normalize((rows, cols), shape, "vector"), (1, 1))
    assert p.coords.tolist() == [[0, 7], [5, 2**32 - 1], [2**53 + 1, 3]]
    assert p.coords.dtype == np.int64 and p.points.chunk_ids.dtype == np.int64
    assert p.row_elements().tolist() == [1, 1, 2]
    work = p.new_work(np.dtype(object))
    for i, (r, c) in enumerate(p.coords.tolist()):
        chunk = np.empty((1, 1), dtype=object)
        chunk[0, 0] = (r, c)
        p.place(work, i, chunk)
    assert p.finish(work).tolist() == [(2**53 + 1, 3), (5, 2**32 - 1), (2**53 + 1, 3), (0, 7)]


@pytest.mark.parametrize(
    "key",
    [
        ([0, 5, 2], [0, 7, 2]),  # chunk (0, 0): in- and out-selectors index arrays on both axes
        ([0, 5, 2], [1, 6, 3]),  # out-selector arrays on one axis only
        ([0, 2], [0, 2]),  # one chunk, in-selectors arrays on both axes, out-selectors slices
        ([0, 2], slice(1, 7)),  # an array on one axis, slices on the other
    ],
)
def test_outer_index_arrays_on_two_axes_take_the_cartesian_block_like_numpy(key):
    full, fetch = _fetch_arange((9, 8), (4, 3))
    p = plan(normalize(key, (9, 8), "outer"), (4, 3))
    work = p.new_work(full.dtype)
    for i, chunk in enumerate(fetch(p.coords.tolist())):
        p.place(work, i, chunk)
    np.testing.assert_array_equal(
        p.finish(work), full[np.ix_(*(np.arange(n)[k] for n, k in zip((9, 8), key, strict=True)))]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_selections_result_shape_is_its_plans_and_numpys(data):
    """``Selection.result_shape`` (known before the index arrays' bounds, for an assignment's values) is
    the planned result's shape and NumPy's, for every form; ``resolve`` refuses what NumPy refuses."""
    from _numpy_differential import arrays, index_keys, numpy_read, orthogonal_keys

    arr, chunks = data.draw(arrays(extremes=False))
    form = data.draw(st.sampled_from(["numpy", "outer", "vector"]))
    key = data.draw(index_keys(arr.shape) if form == "numpy" else orthogonal_keys(arr.shape, form))
    try:
        want = np.shape(numpy_read(arr, form, key))
    except (IndexError, ValueError, TypeError):
        with pytest.raises((IndexError, ValueError, TypeError)):
            plan(normalize(key, arr.shape, form), chunks)
        return
    sel = normalize(key, arr.shape, form, resolve=False)
    assert sel.result_shape == want == plan(sel, chunks).result_shape
