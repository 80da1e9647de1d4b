"""The range-coalescing planner: merged requests, and slicing every original result back out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from altarr.errors import InvalidKeyError
from altarr.stores import coalesce_ranges


def execute(objects: dict[str, bytes], requests):
    """Serve merged requests the way a backend does: Python slicing, None for a missing key."""
    out = []
    for key, start, stop in requests:
        obj = objects.get(key)
        out.append(None if obj is None else obj[start:stop])
    return out


def expected(objects: dict[str, bytes], requests):
    return [None if objects.get(k) is None else objects[k][s:e] for k, s, e in requests]


KEYS = ["a", "b/c", "missing"]

bound = st.one_of(st.none(), st.integers(-40, 120))


@st.composite
def request(draw):
    key = draw(st.sampled_from(KEYS))
    start = draw(bound)
    stop = draw(bound)
    if start is not None and start < 0 and stop is not None and stop >= 0:
        stop = None  # the one unsupported form; tested separately
    return key, start, stop


@settings(max_examples=400, deadline=None)
@given(
    sizes=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    requests=st.lists(request(), min_size=0, max_size=25),
    gap=st.integers(0, 50),
    max_size=st.integers(1, 200),
)
def test_any_request_set_matches_direct_slicing(sizes, requests, gap, max_size):
    objects = {"a": bytes(range(sizes[0])), "b/c": bytes(range(100, 100 + sizes[1]))}
    plan = coalesce_ranges(requests, gap=gap, max_size=max_size)
    got = plan.split(execute(objects, plan.requests))
    assert got == expected(objects, requests)
    assert all(r is None or type(r) is bytes for r in got)
    assert len(plan.requests) <= len(requests)
    # Merged requests use only the four documented shapes.
    for _, s, e in plan.requests:
        assert (
            (s is None and e is None) or (s is not None and s < 0 and e is None) or (s is not None and s >= 0)
        )
        if s is not None and s >= 0 and e is not None:
            assert e >= s


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 300),
    requests=st.lists(
        st.tuples(st.integers(0, 250), st.integers(0, 60)).map(lambda t: ("k", t[0], t[0] + t[1])),
        max_size=20,
    ),
    gap=st.integers(0, 40),
    max_size=st.integers(10, 400),
)
def test_positive_ranges_merge_within_gap_and_size(size, requests, gap, max_size):
    objects = {"k": bytes(i % 251 for i in range(size))}
    plan = coalesce_ranges(requests, gap=gap, max_size=max_size)
    assert plan.split(execute(objects, plan.requests)) == expected(objects, requests)
    spans = sorted((s, e) for _, s, e in plan.requests)
    for (s1, e1), (s2, e2) in zip(spans, spans[1:], strict=False):
        # Two merged spans are either further apart than `gap`, or merging them would exceed max_size.
        assert s2 - e1 > gap or max(e1, e2) - s1 > max_size
    for (s, e), idx in _members(plan).items():
        # A span grows past max_size only by absorbing ranges contained in one oversized range.
        longest = max(requests[i][2] - requests[i][1] for i in idx)
        assert e - s <= max(max_size, longest)


def _members(plan):
    out: dict = {}
    for i, (m, *_rest) in enumerate(plan.parts):
        _, s, e = plan.requests[m]
        out.setdefault((s, e), []).append(i)
    return out


def test_ten_nearby_ranges_make_one_request():
    reqs = [("k", i * 1000, i * 1000 + 100) for i in range(10)]
    plan = coalesce_ranges(reqs)
    assert plan.requests == [("k", 0, 9100)]


def test_far_apart_ranges_stay_separate():
    reqs = [("k", i * 10**6, i * 10**6 + 100) for i in range(5)]
    plan = coalesce_ranges(reqs, gap=64 * 1024)
    assert len(plan.requests) == 5


def test_gap_boundary_is_inclusive():
    assert len(coalesce_ranges([("k", 0, 10), ("k", 20, 30)], gap=10).requests) == 1
    assert len(coalesce_ranges([("k", 0, 10), ("k", 21, 30)], gap=10).requests) == 2


def test_max_size_splits_but_contained_ranges_are_absorbed():
    plan = coalesce_ranges([("k", 0, 60), ("k", 60, 120), ("k", 10, 20)], gap=0, max_size=100)
    assert plan.requests == [("k", 0, 60), ("k", 60, 120)]
    # A single range larger than max_size is sent as it is.
    assert coalesce_ranges([("k", 0, 500)], max_size=100).requests == [("k", 0, 500)]


def test_a_range_inside_the_span_never_costs_a_request_even_past_max_size():
    """A range that ends inside the merged span is served by it, however large the span already is: an
    extra request would fetch bytes already on their way (a mutant that applies max_size to it sends
    ``('k', 60, 70)`` a second time)."""
    plan = coalesce_ranges([("k", 0, 100), ("k", 60, 70)], gap=0, max_size=50)
    assert plan.requests == [("k", 0, 100)]
    data = bytes(range(100))
    assert plan.split([data]) == [data, data[60:70]]
    # also when the inner range ends exactly where the span ends
    assert coalesce_ranges([("k", 0, 100), ("k", 90, 100)], max_size=10).requests == [("k", 0, 100)]


def test_whole_object_absorbs_ranges_and_suffixes():
    plan = coalesce_ranges([("k", 5, 9), ("k", None, None), ("k", -3, None), ("k", 2, None)])
    assert plan.requests == [("k", None, None)]
    data = b"0123456789AB"
    assert plan.split([data]) == [b"5678", data, b"9AB", data[2:]]
    assert plan.split([data])[1] is data  # identical request: no copy


def test_suffixes_merge_only_with_suffixes():
    plan = coalesce_ranges([("k", -4, None), ("k", -10, None), ("k", 0, 4), ("k", -6, -2)])
    assert sorted(plan.requests, key=repr) == sorted([("k", -10, None), ("k", 0, 4)], key=repr)
    data = b"abcdefghijklmnop"
    results = execute({"k": data}, plan.requests)
    assert plan.split(results) == [b"mnop", data[-10:], b"abcd", data[-6:-2]]
    # A suffix longer than the object gives the whole object.
    short = b"xyz"
    assert plan.split(execute({"k": short}, plan.requests)) == [b"xyz", b"xyz", b"xyz", b"x"]


def test_open_ended_range_absorbs_later_ranges():
    plan = coalesce_ranges([("k", 100, None), ("k", 150, 160), ("k", 90, 95)])
    assert plan.requests == [("k", 90, None)]


def test_clipping_past_the_end():
    data = b"0123456789"
    reqs = [("k", 8, 20), ("k", 15, 30), ("k", 10, None), ("k", 3, 3), ("k", 7, 2)]
    plan = coalesce_ranges(reqs)
    assert plan.split(execute({"k": data}, plan.requests)) == [b"89", b"", b"", b"", b""]


def test_empty_range_alone_still_reaches_the_backend():
    plan = coalesce_ranges([("k", 5, 5)])
    assert plan.requests == [("k", 5, 5)]
    assert plan.split([None]) == [None]
    assert plan.split([b""]) == [b""]


def test_results_in_request_order_across_keys():
    reqs = [("b", 0, 2), ("a", 0, 1), ("b", 4, 6), ("a", None, None)]
    objects = {"a": b"AAAA", "b": b"0123456"}
    plan = coalesce_ranges(reqs)
    assert plan.split(execute(objects, plan.requests)) == [b"01", b"AAAA"[:1], b"45", b"AAAA"]


def test_memoryview_and_bytearray_results():
    plan = coalesce_ranges([("k", 0, 2), ("k", 3, 5)])
    buf = bytearray(b"012345")
    out = plan.split([memoryview(buf)[0:5]])
    assert out == [b"01", b"34"] and all(type(r) is bytes for r in out)
    assert plan.split([buf[0:5]]) == [b"01", b"34"]


def test_numpy_integer_bounds():
    np = pytest.importorskip("numpy")
    plan = coalesce_ranges([("k", np.int64(2), np.uint32(5))])
    assert plan.split(execute({"k": b"0123456"}, plan.requests)) == [b"234"]


@pytest.mark.parametrize("bad", [("k", -5, 3), ("k", -1, 0), ("k", 1.5, None), ("k", 0, "9")])
def test_unsupported_ranges_raise(bad):
    with pytest.raises(InvalidKeyError) as info:
        coalesce_ranges([bad])
    assert info.value.key == "k"


def test_split_checks_result_count():
    plan = coalesce_ranges([("k", 0, 1), ("j", 0, 1)])
    with pytest.raises(ValueError):
        plan.split([b"x"])
