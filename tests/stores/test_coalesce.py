"""The range-coalescing planner: merged requests, and slicing every original result back out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from altarr.errors import InvalidKeyError
from altarr.stores import WHOLE, Offset, Range, Suffix, coalesce_ranges, plan_reads


def execute(objects: dict[str, bytes], requests):
    """Serve merged requests the way a backend does: Python slicing, None for a missing key."""
    out = []
    for key, start, stop in requests:
        obj = objects.get(key)
        out.append(None if obj is None else obj[start:stop])
    return out


def serve_typed(objects: dict[str, bytes], requests):
    """Typed requests served by slicing with each request's own ``bounds`` (as every store does)."""
    return [None if k not in objects else objects[k][slice(*r.bounds(len(objects[k])))] for k, r in requests]


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


typed_request = st.tuples(
    st.sampled_from(KEYS),
    st.one_of(
        st.builds(Range, st.integers(0, 120), st.integers(0, 120)),  # stop < start included: empty
        st.builds(Offset, st.integers(0, 120)),
        st.builds(Suffix, st.integers(0, 120)),  # Suffix(0) included: existence only
        st.just(WHOLE),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    sizes=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    requests=st.lists(typed_request, max_size=25),
    gap=st.integers(0, 50),
    max_size=st.integers(1, 200),
)
def test_any_typed_request_set_matches_direct_slicing(sizes, requests, gap, max_size):
    """The engine's typed requests (the legacy triples above never reach plan_reads with stop < start
    or an empty suffix): whatever they merge into, each gets exactly its own bytes."""
    objects = {"a": bytes(range(sizes[0])), "b/c": bytes(range(100, 100 + sizes[1]))}
    plan = plan_reads(requests, gap=gap, max_size=max_size)
    assert plan.split(serve_typed(objects, plan.merged)) == serve_typed(objects, requests)
    assert len(plan.merged) <= len(requests)


@pytest.mark.parametrize(
    ("requests", "want"),
    [
        # an empty range (stop < start) inside a merged span
        ([("k", Range(3, 10)), ("k", Range(5, 2))], [b"3456789", b""]),
        # an empty suffix (existence only) beside a range of its key
        ([("k", Suffix(0)), ("k", Range(3, 10))], [b"", b"3456789"]),
    ],
)
def test_empty_requests_merged_with_others_stay_empty(requests, want):
    data = b"0123456789abcdef"
    plan = plan_reads(requests)
    assert len(plan.merged) == 1
    assert plan.split(serve_typed({"k": data}, plan.merged)) == want


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


# --- found by mutation testing (tools/mutation.py coalesce; see docs/development.md) ---------------------


def test_split_says_how_many_results_it_expected():
    plan = coalesce_ranges([("k", 0, 1), ("j", 0, 1)])
    with pytest.raises(ValueError, match="expected 2 results, got 1"):
        plan.split([b"x"])


def test_an_identical_request_gets_the_merged_bytes_object_itself():
    data = b"0123456789"
    whole = coalesce_ranges([("k", None, None)])
    assert whole.split([data])[0] is data
    ranged = coalesce_ranges([("k", 2, 6), ("j", -3, None)])  # each alone: identical to its merged request
    got = ranged.split([data[2:6], data[-3:]])
    assert got[0] is not None and got[1] is not None
    assert [type(r) for r in got] == [bytes, bytes]
    both = [data[2:6], data[-3:]]
    assert all(a is b for a, b in zip(ranged.split(both), both, strict=True))


def test_views_are_unsigned_zero_copy_slices_of_merged_reads():
    plan = coalesce_ranges([("k", 0, 2), ("k", 3, 5)])
    data = bytes([250, 251, 252, 253, 254])  # bytes >= 128 tell an unsigned view from a signed one
    for merged in (data, bytearray(data), memoryview(data)):
        out = plan.split([merged], views=True)
        assert all(type(r) is memoryview and r.format == "B" for r in out), out
        assert [bytes(r) for r in out] == [data[0:2], data[3:5]]
        assert out[0] == data[0:2] and out[1] == data[3:5]  # equal as unsigned bytes
    # without views: bytes copies, also from a bytes result
    assert [type(r) for r in plan.split([data])] == [bytes, bytes]
    # a request identical to its merged one stays a bytes object even with views
    assert type(coalesce_ranges([("k", None, None)]).split([bytearray(data)], views=True)[0]) is bytes


def test_a_whole_request_beside_ranges_of_its_key_gets_the_object_itself():
    data = b"0123456789"
    plan = coalesce_ranges([("k", None, None), ("k", 2, 4), ("k", 0, None), ("k", -2, None)])
    assert plan.requests == [("k", None, None)]
    out = plan.split([data], views=True)
    assert out[0] is data and out[2] is data  # whole and (0, None): the merged bytes object itself
    assert type(out[1]) is memoryview and out[1] == data[2:4] and bytes(out[3]) == data[-2:]


def test_versions_follow_the_merged_read_and_none_for_missing():
    plan = coalesce_ranges([("k", 1, 3), ("k", 4, 6), ("j", 0, 1)])
    out = plan.split([b"0123456", None])
    assert plan.versions(out, ["v1", "ignored"]) == ["v1", "v1", None]  # j is missing: no version


def test_repeated_whole_requests_of_a_key_cost_one_request():
    for extra in ([], [("k", 0, None)]):  # whole objects only (the fast path), and mixed with a range
        plan = coalesce_ranges([("k", None, None), ("j", None, None), ("k", None, None), *extra])
        assert plan.requests == [("k", None, None), ("j", None, None)]
        assert plan.split([b"kk", b"jj"]) == [b"kk", b"jj", b"kk"] + [b"kk"] * len(extra)


def test_coalesce_requests_passes_max_size_on():
    from altarr.stores.coalesce import coalesce_requests

    reqs = [("a//b", 0, 8), ("a/b", 8, 16)]
    assert coalesce_requests(reqs, 0, 16).requests == [("a/b", 0, 16)]
    assert coalesce_requests(reqs, 0, 10).requests == [("a/b", 0, 8), ("a/b", 8, 16)]


@pytest.mark.parametrize("req", [("k", 0, 0), ("k", None, 0)])
def test_an_empty_range_at_zero_is_not_a_whole_object_read(req):
    plan = coalesce_ranges([req])
    assert plan.requests == [("k", 0, 0)]  # reaches the backend, which can tell a missing key; 0 bytes
    assert plan.split([b""]) == [b""] and plan.split([None]) == [None]
    assert type(plan.split([b""], views=True)[0]) is bytes  # identical to its merged request: not a view


@pytest.mark.parametrize(
    "bad, message",
    [
        (("k", 1.5, None), "byte range bounds must be integers or None, got float"),
        (("k", 0, "9"), "byte range bounds must be integers or None, got str"),
        (("k", -5, 3), "a negative (suffix) start needs a stop that is None or negative"),
    ],
)
def test_bad_bounds_are_named_with_their_range(bad, message):
    with pytest.raises(InvalidKeyError) as info:
        coalesce_ranges([bad])
    assert info.value.message == message
    assert info.value.key == "k" and info.value.byte_range == bad[1:]
