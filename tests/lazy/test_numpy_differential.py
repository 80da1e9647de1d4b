"""Differential tests against NumPy (issues 12 and 33): NumPy's answer, or NumPy's exception type, from
lazy arrays and datasets, over every axis of variation at once.

Every example draws a NumPy array (0-d to 4-d, axes of length 0 included, one of 13 dtypes, NaN,
infinities, ``-0.0`` and the dtype's extremes) and objects that stand for it: a lazy array over a fetch
of random chunks, a dataset holding it (Zarr v2, Zarr v3, N5, sharded Zarr v3 and N5, nested shards) and
a lazy array over such a dataset. Then one family of calls runs on NumPy and on each object, and the
outcomes must be identical (kind, dtype, shape, values, or the exception type; reductions that add in
another order within a rounding tolerance):

* reads of every index form (``x[...]``, ``.oindex``, ``.vindex``, ``.flat``), valid or refused;
* writes of every form into datasets, of values of every dtype and kind, in and out of range;
* reductions with ``axis``/``keepdims``/``where``/``initial``/``ddof``/``dtype``, as functions, methods
  and ``np.<ufunc>.reduce``, under ``max_materialize=0`` (they must stream);
* chains of NumPy calls (views, casts, operators with every kind of scalar, ``**``, joins, reshapes)
  ending in a reduction, a read, a comparison function or a conversion;
* the comparison functions NumPy runs inside ``try``/``except`` (they must stream).

The deliberate differences from NumPy are listed in one table in ``docs/lazy-arrays.md``, checked by
``tests/lazy/test_numpy_differences.py``; the calls drawn here avoid them. Every test takes its seed from
``ALTARR_FUZZ_SEED`` (printed in the header and in a failure's example; ``tests/conftest.py`` fixes it for
the default suite, so that the README's test command is reproducible); ``test_*_many`` run the same checks
with 20,000 examples in all behind the ``slow`` marker (``.ci/run``'s soak, from a fresh seed each run,
which it prints).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, seed, settings
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import lazy
from _numpy_calls import (
    CONVERSIONS,
    ORDER_FREE,
    chain_step,
    compare_call,
    comparison_calls,
    reduce_call,
    reduction_calls,
)
from _numpy_differential import (
    FORMATS,
    Raised,
    _same_bits,
    arrays,
    assert_same,
    forget_memory_urls,
    fuzz_seed,
    index_keys,
    lazy_subject,
    make_dataset,
    make_values,
    numpy_read,
    numpy_write,
    orthogonal_keys,
    reduction_rounding,
    run,
    subject_read,
    subject_write,
    written_values,
)

SEED = fuzz_seed()


def fuzz(examples: int):
    """``@given(st.data())`` with ``examples`` examples, no deadline, from the run's seed."""

    def deco(fn):
        test = given(st.data())(fn)
        test = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))(test)
        return seed(SEED)(test)

    return deco


#: Examples per family: the default suite, and the slow soak (20,000 in all).
DEFAULT = {"reads": 40, "writes": 40, "reductions": 40, "chains": 30, "comparisons": 20}
SOAK = {"reads": 5000, "writes": 5000, "reductions": 5000, "chains": 4000, "comparisons": 1000}


# --- reads -----------------------------------------------------------------------------------------------
def _deprecated_by_numpy(arr, form, key) -> bool:
    """Whether NumPy warns that ``key`` is deprecated in ``form``: NumPy 2.4 deprecates 0-d booleans and
    indices other than integers, slices and arrays in ``.flat``, which altarr refuses (the docs' table)."""
    _, warned = run(lambda: numpy_read(arr, form, key))
    return any(issubclass(category, DeprecationWarning) for category, _ in warned)


def _read_check(data, chunks, form, key, subjects) -> None:
    expected, _ = run(lambda: numpy_read(data, form, key))
    for name, x in subjects:
        got, _ = run(lambda x=x: subject_read(x, form, key))
        assert_same(
            expected, got, what=f"{name} {form}[{key!r}] of {data.dtype} {data.shape} chunks {chunks}"
        )


def _reads(data) -> None:
    note(f"ALTARR_FUZZ_SEED={SEED}")
    arr, chunks = data.draw(arrays())
    form = data.draw(st.sampled_from(["numpy", "numpy", "outer", "vector", "flat"]))
    if form == "flat":
        key = data.draw(index_keys((int(np.prod(arr.shape)),)))
        key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        assume(not _deprecated_by_numpy(arr, form, key))
    elif form == "numpy":
        key = data.draw(index_keys(arr.shape))
    else:
        key = data.draw(orthogonal_keys(arr.shape, form))
    fmt = data.draw(st.sampled_from(FORMATS))
    subjects = [("lazy", lazy(arr, chunks)[0])]
    try:
        if form != "flat":
            subjects.append((f"Dataset[{fmt}]", make_dataset(arr, chunks, fmt)))
        if data.draw(st.integers(0, 3)) == 0:
            subjects.append((f"aa.open[{fmt}]", lazy_subject(arr, chunks, fmt)))
        _read_check(arr, chunks, form, key, subjects)
    finally:
        forget_memory_urls()


@fuzz(DEFAULT["reads"])
def test_reads_of_every_index_form_give_numpys_result(data):
    _reads(data)


@pytest.mark.slow
@fuzz(SOAK["reads"])
def test_reads_of_every_index_form_give_numpys_result_many(data):
    _reads(data)


# --- writes ----------------------------------------------------------------------------------------------
def _write_check(data, chunks, fmt, key, value, form="numpy") -> None:
    ds = make_dataset(data, chunks, fmt)
    ref = data.copy()
    expected, _ = run(lambda: numpy_write(ref, form, key, value))
    got, _ = run(lambda: subject_write(ds, form, key, value))
    what = f"Dataset[{fmt}] {form}[{key!r}] = {value!r} ({data.dtype} {data.shape} chunks {chunks})"
    assert_same(expected, got, what=what)
    # written as NumPy wrote it; where NumPy refused, nothing at all (NumPy itself may have written some
    # values before it refused one: a documented difference)
    want = data if isinstance(expected, Raised) else ref
    stored = ds[...]
    assert _same_bits(stored, want), f"after {what}:\n got {stored!r}\nwant {want!r}"


def _writes(data) -> None:
    note(f"ALTARR_FUZZ_SEED={SEED}")
    arr, chunks = data.draw(arrays(max_ndim=3))
    fmt = data.draw(st.sampled_from(FORMATS))
    form = data.draw(st.sampled_from(["numpy", "numpy", "outer", "vector"]))
    key = data.draw(index_keys(arr.shape) if form == "numpy" else orthogonal_keys(arr.shape, form))
    sel = run(lambda: numpy_read(arr, form, key))[0]
    shape = () if isinstance(sel, Raised) or data.draw(st.integers(0, 3)) == 0 else np.shape(sel)
    _write_check(arr, chunks, fmt, key, data.draw(written_values(shape)), form)


@fuzz(DEFAULT["writes"])
def test_writes_of_every_form_cast_and_place_as_numpy_does(data):
    _writes(data)


@pytest.mark.slow
@fuzz(SOAK["writes"])
def test_writes_of_every_form_cast_and_place_as_numpy_does_many(data):
    _writes(data)


# --- reductions ------------------------------------------------------------------------------------------
def _reduce_check(data, chunks, name, kw, how="function", x=None) -> None:
    expected, exp_warn = run(lambda: reduce_call(data, name, kw, how))
    if x is None:
        x = lazy(data, chunks)[0]
    with aa.set_options(max_materialize=0, batch_chunks=2):
        got, got_warn = run(lambda: reduce_call(x, name, kw, how))
    what = f"{how} {name}(x, **{kw}) of {data.dtype} {data.shape} chunks {chunks}"
    assert_same(expected, got, rounding=reduction_rounding(name, data), what=what)
    dof = "Degrees of freedom <= 0"
    if not isinstance(expected, Raised) and any(dof in m for _, m in exp_warn):
        assert any(dof in m for _, m in got_warn), f"{what}: NumPy warned {exp_warn}, got {got_warn}"


def _overflow_differs(name: str, values: np.ndarray) -> bool:
    """Whether NumPy itself answers ``name`` of ``values`` two ways once a product overflows."""
    return name in ("prod", "nanprod") and (values.dtype.kind == "c" or values.dtype == np.float16)


def _past_the_root(values: np.ndarray) -> bool:
    """Whether a finite part of ``values`` lies past the square root of its dtype's range (a product of
    two can overflow)."""
    parts = np.abs(np.concatenate([np.real(values).ravel(), np.imag(values).ravel()]))
    return bool(np.any(parts[np.isfinite(parts)] > np.sqrt(np.finfo(values.dtype).max)))


def _reductions(data) -> None:
    note(f"ALTARR_FUZZ_SEED={SEED}")
    arr, chunks = data.draw(arrays(extremes=False))
    name, kw, how = data.draw(reduction_calls(arr))
    # the dtype's extremes where the order is kept; not complex or float16 products, whose overflow NumPy
    # itself answers two ways (docs/lazy-arrays.md, "Differences from NumPy": ... products that overflow)
    if name in ORDER_FREE and not _overflow_differs(name, arr) and data.draw(st.booleans()):
        arr = make_values(arr.dtype, arr.shape, data.draw(st.integers(0, 2**32 - 1)), extremes=True)
    source = data.draw(st.sampled_from(["fetch", "fetch", "fetch", *FORMATS]))
    try:
        x = lazy_subject(arr, chunks, source)
        if (
            isinstance(kw.get("where"), np.ndarray)
            and kw["where"].shape == arr.shape
            and data.draw(st.booleans())
        ):
            kw_lazy = dict(kw, where=lazy(kw["where"], chunks)[0])  # a lazy mask over the same chunks
            expected, _ = run(lambda: reduce_call(arr, name, kw, how))
            with aa.set_options(max_materialize=0, batch_chunks=2):
                got, _ = run(lambda: reduce_call(x, name, kw_lazy, how))
            assert_same(
                expected,
                got,
                rounding=reduction_rounding(name, arr),
                what=f"{name}(x, **{kw}) with a lazy where",
            )
        else:
            _reduce_check(arr, chunks, name, kw, how, x)
    finally:
        forget_memory_urls()


@fuzz(DEFAULT["reductions"])
def test_reductions_give_numpys_result(data):
    _reductions(data)


@pytest.mark.slow
@fuzz(SOAK["reductions"])
def test_reductions_give_numpys_result_many(data):
    _reductions(data)


# --- comparison functions --------------------------------------------------------------------------------
def _compare_check(data, chunks, func, other, swap) -> None:
    x, _ = lazy(data, chunks)
    expected, _ = run(lambda: compare_call(func, data, other, swap))
    # the functions NumPy runs inside try/except must stream (isclose is lazy elementwise, or materialized
    # under the guard when the other operand is bigger: it raises loudly then, so it needs no such check)
    guard = 0 if func != "isclose" else aa.get_options()["max_materialize"]
    with aa.set_options(max_materialize=guard, batch_chunks=2):
        got, _ = run(lambda: compare_call(func, x, other, swap))
    assert_same(expected, got, what=f"np.{func}({'other, x' if swap else 'x, other'})")


def _comparisons(data) -> None:
    note(f"ALTARR_FUZZ_SEED={SEED}")
    arr, chunks = data.draw(arrays())
    func, other, swap = data.draw(comparison_calls(arr))
    _compare_check(arr, chunks, func, other, swap)


@fuzz(DEFAULT["comparisons"])
def test_comparison_functions_give_numpys_answer_without_materializing(data):
    _comparisons(data)


@pytest.mark.slow
@fuzz(SOAK["comparisons"])
def test_comparison_functions_give_numpys_answer_many(data):
    _comparisons(data)


# --- chains of NumPy calls -------------------------------------------------------------------------------
def _chain_end(data, ref, x, done) -> None:
    """The last call of a chain: a reduction, a read, a comparison function or a conversion."""
    end = data.draw(st.sampled_from(["reduce", "reduce", "read", "compare", "convert"]))
    if end == "reduce":
        name, kw, how = data.draw(reduction_calls(ref))
        # a chain can make the extremes _reductions leaves out of these products (nan_to_num: inf -> max),
        # where NumPy answers two ways (seed 1085422169: its 2-D product nan+nanj, its 1-D product of the
        # same values in the same order -0j, altarr's)
        assume(not (_overflow_differs(name, ref) and _past_the_root(ref)))
        expected, _ = run(lambda: reduce_call(ref, name, kw, how))
        with aa.set_options(max_materialize=0, batch_chunks=2):
            got, _ = run(lambda: reduce_call(x, name, kw, how))
        assert_same(
            expected,
            got,
            rounding=reduction_rounding(name, ref),
            what=" -> ".join([*done, f"{how} {name}(**{kw})"]),
        )
    elif end == "read":
        form = data.draw(st.sampled_from(["numpy", "outer", "vector"]))
        key = data.draw(index_keys(ref.shape) if form == "numpy" else orthogonal_keys(ref.shape, form))
        expected, _ = run(lambda: numpy_read(ref, form, key))
        got, _ = run(lambda: subject_read(x, form, key))
        assert_same(expected, got, what=" -> ".join([*done, f"{form}[{key!r}]"]))
    elif end == "compare":
        func, other, swap = data.draw(comparison_calls(ref))
        expected, _ = run(lambda: compare_call(func, ref, other, swap))
        got, _ = run(lambda: compare_call(func, x, other, swap))
        assert_same(expected, got, what=" -> ".join([*done, func]))
    else:
        name = data.draw(st.sampled_from(sorted(CONVERSIONS)))
        expected, _ = run(lambda: CONVERSIONS[name](ref))
        got, _ = run(lambda: CONVERSIONS[name](x))
        assert_same(expected, got, what=" -> ".join([*done, name]))


def _chains(data) -> None:
    note(f"ALTARR_FUZZ_SEED={SEED}")
    arr, chunks = data.draw(arrays(max_side=3, extremes=False))
    source = data.draw(st.sampled_from(["fetch", "fetch", "fetch", *FORMATS]))
    try:
        x = lazy_subject(arr, chunks, source)
        ref = arr
        done: list[str] = []
        for _ in range(data.draw(st.integers(1, 4))):
            what, f, stays_lazy = chain_step(data.draw, ref.shape, ref.dtype)
            done.append(what)
            was_lazy = aa.is_altarr(x)
            expected, _ = run(lambda f=f, ref=ref: f(ref))
            got, _ = run(lambda f=f, x=x: f(x))
            assert_same(expected, got, rounding=True, what=" -> ".join(done))
            if isinstance(expected, Raised):
                return
            if was_lazy and stays_lazy:
                assert aa.is_altarr(got), f"{' -> '.join(done)} should stay lazy"
            # a lazy array stands for a C-ordered ndarray (NumPy's reductions follow the memory layout:
            # a documented difference); NumPy's 0-d results are scalars
            ref, x = (np.array(expected) if aa.is_altarr(got) else expected), got
            if not aa.is_altarr(x):
                return
        _chain_end(data, ref, x, done)
    finally:
        forget_memory_urls()


@fuzz(DEFAULT["chains"])
def test_chains_of_numpy_calls_match(data):
    _chains(data)


@pytest.mark.slow
@fuzz(SOAK["chains"])
def test_chains_of_numpy_calls_match_many(data):
    _chains(data)


def test_the_soak_runs_twenty_thousand_examples():
    assert sum(SOAK.values()) >= 20_000 and SOAK.keys() == DEFAULT.keys()


# --- cases found by the searches, and the issues' own --------------------------------------------------
def _index_check(data, chunks, key, fmt):
    _read_check(
        data, chunks, "numpy", key, [("lazy", lazy(data, chunks)[0]), (fmt, make_dataset(data, chunks, fmt))]
    )


def as_dataset(data, chunks, fmt):
    return make_dataset(data, chunks, fmt)


def test_index_forms_of_the_issue():
    data = np.arange(24.0).reshape(4, 6)
    for key in [
        range(3),
        [[0, 1], [2, 3]],
        (np.array([0, 3]), np.array([5, 1])),
        data > 20,
        (slice(None, None, -1), 2),
        (Ellipsis, None, 1),
        np.array(2),
        (1, 2),
        ([True, False, True, False],),
    ]:
        _index_check(data, (3, 4), key, "zarr3")
    x, _ = lazy(data, (3, 4))
    assert type(x[1, 2]) is np.float64 and type(as_dataset(data, (3, 4), "zarr2")[1, 2]) is np.float64


def test_a_zero_length_mask_matches_any_axis_as_in_numpy():
    """Found by the slow search: ``np.stack([x, x], 0).T.astype('f8')[..., None, mask0]`` on an empty
    array. NumPy does not compare a mask axis of length 0 with the axis it indexes (only a non-empty mask
    must have the axis' length); integer indices out of bounds are refused even when nothing is read."""
    empty = np.zeros(0, dtype=bool)
    cases = [
        (np.zeros((0, 0, 2)), (Ellipsis, None, empty)),
        (np.zeros((0, 2)), (slice(None), empty)),
        (np.zeros((2, 0)), (empty,)),
        (np.arange(6.0).reshape(2, 3), (empty,)),
        (np.arange(6.0).reshape(2, 3), (empty, 1)),
        (np.arange(6.0).reshape(2, 3), (np.zeros((0, 3), dtype=bool),)),
        (np.arange(6.0).reshape(2, 3), (np.zeros((0, 0), dtype=bool), None)),
        (np.arange(6.0).reshape(2, 3), (np.zeros(1, dtype=bool), slice(0, 0))),  # IndexError in NumPy
        (np.zeros((0, 2)), (np.zeros((1, 0), dtype=bool),)),  # IndexError in NumPy
        (np.zeros((0, 2)), (slice(None), np.array([5]))),  # IndexError in NumPy
    ]
    for data, key in cases:
        for fmt in ("zarr2", "zarr3"):
            _index_check(data, (1,) * data.ndim, key, fmt)
    x, _ = lazy(np.zeros((2, 0, 0)), (1, 1, 1))
    got = np.stack([x, x], 0).T.astype("f8")[..., None, empty]
    assert got.shape == (0, 0, 2, 1, 0) == np.stack([np.zeros((2, 0, 0))] * 2, 0).T[..., None, empty].shape


@pytest.mark.parametrize("name", ["prod", "nanprod"])
def test_complex_products_with_inf_multiply_in_numpys_order(name):
    """Found by the slow search: a complex product with an infinite factor depends on the order of the
    multiplications. NumPy multiplies from ``1+0j`` (or ``initial``) left to right in C order of the
    reduced axes, skipping ``where=False``; chunk partials multiplied together give ``nan+nanj`` for
    ``[1+.5j, 1+.5j, inf+1j]`` where NumPy gives ``inf+infj``. Each case must be NumPy's answer."""
    inf, nan = np.inf, np.nan
    triple = np.array([1 + 0.5j, 1 + 0.5j, complex(inf, 1)])
    for dt in ("c8", "c16"):
        _reduce_check(triple.astype(dt), (1,), name, {})
        _reduce_check(triple.astype(dt), (2,), name, {"initial": 2})
        _reduce_check(triple.astype(dt), (1,), name, {"where": np.array([True, False, True])})
    assert np.prod(lazy(triple.astype("c8"), (1,))[0]) == complex(inf, inf)
    # a single factor is multiplied into 1+0j too: inf+1j gives inf+nanj, as in NumPy
    _reduce_check(np.array([complex(inf, 1)]), (1,), name, {})
    grid = np.array(
        [
            [1 + 0.5j, complex(inf, 1), -1j, 0.5],
            [1 + 0.5j, 1 + 0.5j, complex(nan, 1), 2j],
            [complex(inf, 1), 1 + 0.5j, complex(1, inf), -1 + 1j],
        ]
    )
    for axis in (None, 0, 1, (0, 1), -1):
        _reduce_check(grid, (2, 3), name, {"axis": axis})
        _reduce_check(grid, (1, 1), name, {"axis": axis, "keepdims": True, "initial": -1})
        _reduce_check(grid, (2, 1), name, {"axis": axis, "where": np.array([True, False, True, True])})
    _reduce_check(grid.real.copy(), (1, 1), name, {"axis": 0, "dtype": "c16"})


def test_complex_products_read_again_only_when_a_result_is_not_finite():
    """The recomputation in NumPy's order is a second walk of the chunks, only when some output element
    came out non-finite; finite products are read once."""
    values = np.arange(1, 13).reshape(3, 4).astype("c16")
    x, fetch = lazy(values, (1, 2))
    with aa.set_options(batch_chunks=2):
        assert np.prod(x, axis=0).tolist() == np.prod(values, axis=0).tolist()
        first = len(fetch.calls)
        values[0, 0] = complex(np.inf, 1)
        y, fetch_y = lazy(values, (1, 2))
        np.testing.assert_array_equal(np.prod(y, axis=0), np.prod(values, axis=0))
    assert first == 3 and len(fetch_y.calls) == 6


@pytest.mark.parametrize(
    "name", ["mean", "var", "nanmean", "nanvar", "sum", "nansum", "max", "nanmin", "any"]
)
def test_reductions_check_where_and_axes_in_numpys_order(name):
    """Found by the soak (seed 1305776819): ``np.mean(x, axis=1, where=np.array(0, "i1"))`` of a 0-d array
    raised the where's TypeError before NumPy's AxisError; ufunc reductions (and ``nan*`` moments of
    floats) check a where's dtype, the axes, then its shape, ``mean``/``var`` its shape, the axes, then
    its dtype."""
    fn = getattr(np, name)
    kw = {"initial": 0} if name in ("max", "nanmin") else {}
    for data in (np.array(False), np.array(1.5), np.arange(3.0), np.arange(3)):
        for where in (np.array(0, np.int8), [[1, 0], [0, 1]], np.array([True, False]), [1, 0, 1]):
            for axis in (1, 0, None):
                expected, _ = run(lambda w=where, a=axis, d=data: fn(d, axis=a, where=w, **kw))
                x = lazy(data, (2,) * data.ndim)[0]
                got, _ = run(lambda w=where, a=axis, x=x: fn(x, axis=a, where=w, **kw))
                assert_same(expected, got, what=f"{name}(axis={axis}, where={where!r}) of {data!r}")


def test_nanmin_of_a_0d_array_with_where_is_the_ndarray_answer():
    """Found by the slow search (seed 1): ``np.isnan(x).astype('f8')`` of a 0-d array is a NumPy scalar
    on the NumPy side, and ``np.nanmin(scalar, where=False, initial=0)`` is ``nan`` (NumPy's path for
    non-ndarrays) while it is ``0.0`` for a 0-d ndarray. A 0-d LazyArray answers as the ndarray."""
    x, _ = lazy(np.array(False), ())
    y = np.isnan(x).astype("f8")
    assert aa.is_altarr(y)
    for name, initial in (("nanmin", 0), ("nanmax", 7)):
        _reduce_check(np.array(0.0), (), name, {"where": np.array(False), "initial": initial})
        with aa.set_options(max_materialize=0):
            got = getattr(np, name)(y, where=np.array(False), initial=initial)
        assert got == getattr(np, name)(np.array(0.0), where=np.array(False), initial=initial) == initial

    data = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 4.0]])
    for name in ("var", "std", "nanvar", "nanstd"):
        for kw in ({"ddof": 5}, {"ddof": 5, "axis": 0}, {"ddof": 3, "axis": 0, "keepdims": True}):
            _reduce_check(data, (2, 1), name, kw)
    x, _ = lazy(data, (2, 1))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert np.all(np.isinf(x.var(axis=0, ddof=5)))


def test_array_equal_of_the_issue_streams_instead_of_answering_false():
    x = aa.altarr((2000, 1000), (500, 500), lambda c: [np.zeros((500, 500))] * len(c))
    assert np.array_equal(x, np.zeros((2000, 1000))) is True
    assert np.array_equiv(x, 0.0) is True and np.allclose(x, np.zeros((2000, 1000))) is True
    assert aa.stats(x)["materialize"] == 0


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3", "n5"])
def test_a_mask_of_the_wrong_shape_is_refused_before_the_value_is_cast(fmt):
    # found by test_writes_cast_as_numpy_casts: NumPy checks a mask's shape before converting the value
    _write_check(np.zeros((3, 0), dtype="i1"), (2, 1), fmt, (Ellipsis, np.array([False])), 128)
    _write_check(np.zeros((3, 4), dtype="i1"), (2, 2), fmt, (0, np.array([False, True, False])), 128)
    _write_check(np.zeros((3, 4), dtype="i1"), (2, 2), fmt, (np.array([5]), 0), 128)  # bounds: after


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3", "n5"])
def test_writes_of_the_issue(fmt):
    data = np.zeros(4, dtype="u2")
    for value in (70000, -1, float("nan"), float("inf"), [1, 70000], np.array([np.nan, 1.0]), 3.7):
        _write_check(data, (2,), fmt, 0 if np.ndim(value) == 0 else slice(0, 2), value)
    ds = as_dataset(data, (2,), fmt)
    with pytest.raises(OverflowError):
        ds.write_chunks([(0,), (1,)], [[1, 2], [3, 70000]])  # the second chunk is bad: nothing written
    assert ds[...].tolist() == [0, 0, 0, 0] and not list(ds.stored_chunks())
    ds.write_chunks([(0,), (1,)], [[1.9, 2], np.array([3, 4], dtype="i8")])
    assert ds[...].tolist() == [1, 2, 3, 4]
