"""The range-coalescing planner: merged requests, and slicing every original result back out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from altarr.stores import WHOLE, Offset, Range, Suffix
from altarr.stores.coalesce import plan_reads


def serve(objects: dict[str, bytes], requests):
    """Typed requests served by slicing with each request's own ``bounds`` (as every store does): None
    for a missing key."""
    return [None if k not in objects else objects[k][slice(*r.bounds(len(objects[k])))] for k, r in requests]


KEYS = ["a", "b/c", "missing"]

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
def test_any_request_set_matches_direct_slicing(sizes, requests, gap, max_size):
    """Whatever the requests merge into, each gets exactly its own bytes, as ``bytes``; the merged
    requests are of the documented shapes only and never more than the requests."""
    objects = {"a": bytes(range(sizes[0])), "b/c": bytes(range(100, 100 + sizes[1]))}
    plan = plan_reads(requests, gap=gap, max_size=max_size)
    got = plan.split(serve(objects, plan.merged))
    assert got == serve(objects, requests)
    assert all(r is None or type(r) is bytes for r in got)
    assert len(plan.merged) <= len(requests)
    for _, r in plan.merged:
        assert (
            r is WHOLE
            or (type(r) is Range and r.start <= r.stop)
            or (type(r) is Offset and r.start > 0)
            or (type(r) is Suffix and r.length > 0)
        ), r


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 300),
    requests=st.lists(
        st.tuples(st.integers(0, 250), st.integers(0, 60)).map(lambda t: ("k", Range(t[0], t[0] + t[1]))),
        max_size=20,
    ),
    gap=st.integers(0, 40),
    max_size=st.integers(10, 400),
)
def test_positive_ranges_merge_within_gap_and_size(size, requests, gap, max_size):
    objects = {"k": bytes(i % 251 for i in range(size))}
    plan = plan_reads(requests, gap=gap, max_size=max_size)
    assert plan.split(serve(objects, plan.merged)) == serve(objects, requests)
    spans = sorted((r.start, r.stop) for _, r in plan.merged)
    for (s1, e1), (s2, e2) in zip(spans, spans[1:], strict=False):
        # Two merged spans are either further apart than `gap`, or merging them would exceed max_size.
        assert s2 - e1 > gap or max(e1, e2) - s1 > max_size
    for (s, e), idx in _members(plan).items():
        # A span grows past max_size only by absorbing ranges contained in one oversized range.
        longest = max(requests[i][1].stop - requests[i][1].start for i in idx)
        assert e - s <= max(max_size, longest)


def _members(plan):
    out: dict = {}
    for i, (m, *_rest) in enumerate(plan.parts):
        r = plan.merged[m][1]
        out.setdefault((r.start, r.stop), []).append(i)
    return out


def test_ten_nearby_ranges_make_one_request():
    plan = plan_reads([("k", Range(i * 1000, i * 1000 + 100)) for i in range(10)])
    assert plan.merged == [("k", Range(0, 9100))]


def test_far_apart_ranges_stay_separate():
    plan = plan_reads([("k", Range(i * 10**6, i * 10**6 + 100)) for i in range(5)], gap=64 * 1024)
    assert len(plan.merged) == 5


def test_gap_boundary_is_inclusive():
    assert len(plan_reads([("k", Range(0, 10)), ("k", Range(20, 30))], gap=10).merged) == 1
    assert len(plan_reads([("k", Range(0, 10)), ("k", Range(21, 30))], gap=10).merged) == 2


def test_max_size_splits_but_contained_ranges_are_absorbed():
    plan = plan_reads([("k", Range(0, 60)), ("k", Range(60, 120)), ("k", Range(10, 20))], gap=0, max_size=100)
    assert plan.merged == [("k", Range(0, 60)), ("k", Range(60, 120))]
    # A single range larger than max_size is sent as it is.
    assert plan_reads([("k", Range(0, 500))], max_size=100).merged == [("k", Range(0, 500))]


def test_a_range_inside_the_span_never_costs_a_request_even_past_max_size():
    """A range that ends inside the merged span is served by it, however large the span already is: an
    extra request would fetch bytes already on their way (a mutant that applies max_size to it sends
    ``Range(60, 70)`` a second time)."""
    plan = plan_reads([("k", Range(0, 100)), ("k", Range(60, 70))], gap=0, max_size=50)
    assert plan.merged == [("k", Range(0, 100))]
    data = bytes(range(100))
    assert plan.split([data]) == [data, data[60:70]]
    # also when the inner range ends exactly where the span ends
    assert plan_reads([("k", Range(0, 100)), ("k", Range(90, 100))], max_size=10).merged == [
        ("k", Range(0, 100))
    ]


def test_whole_object_absorbs_ranges_and_suffixes():
    plan = plan_reads([("k", Range(5, 9)), ("k", WHOLE), ("k", Suffix(3)), ("k", Offset(2))])
    assert plan.merged == [("k", WHOLE)]
    data = b"0123456789AB"
    assert plan.split([data]) == [b"5678", data, b"9AB", data[2:]]
    assert plan.split([data])[1] is data  # identical request: no copy


def test_suffixes_merge_only_with_suffixes():
    plan = plan_reads([("k", Suffix(4)), ("k", Suffix(10)), ("k", Range(0, 4))])
    assert plan.merged == [("k", Suffix(10)), ("k", Range(0, 4))]
    data = b"abcdefghijklmnop"
    assert plan.split(serve({"k": data}, plan.merged)) == [b"mnop", data[-10:], b"abcd"]
    # A suffix longer than the object gives the whole object.
    assert plan.split(serve({"k": b"xyz"}, plan.merged)) == [b"xyz", b"xyz", b"xyz"]


def test_open_ended_range_absorbs_later_ranges():
    plan = plan_reads([("k", Offset(100)), ("k", Range(150, 160)), ("k", Range(90, 95))])
    assert plan.merged == [("k", Offset(90))]


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
    assert plan.split(serve({"k": data}, plan.merged)) == want


def test_clipping_past_the_end():
    data = b"0123456789"
    reqs = [
        ("k", Range(8, 20)),
        ("k", Range(15, 30)),
        ("k", Offset(10)),
        ("k", Range(3, 3)),
        ("k", Range(7, 2)),
    ]
    plan = plan_reads(reqs)
    assert plan.split(serve({"k": data}, plan.merged)) == [b"89", b"", b"", b"", b""]


def test_empty_range_alone_still_reaches_the_backend():
    plan = plan_reads([("k", Range(5, 5))])
    assert plan.merged == [("k", Range(5, 5))]
    assert plan.split([None]) == [None]
    assert plan.split([b""]) == [b""]


def test_results_in_request_order_across_keys():
    reqs = [("b", Range(0, 2)), ("a", Range(0, 1)), ("b", Range(4, 6)), ("a", WHOLE)]
    objects = {"a": b"AAAA", "b": b"0123456"}
    plan = plan_reads(reqs)
    assert plan.split(serve(objects, plan.merged)) == [b"01", b"A", b"45", b"AAAA"]


def test_memoryview_and_bytearray_results():
    plan = plan_reads([("k", Range(0, 2)), ("k", Range(3, 5))])
    buf = bytearray(b"012345")
    out = plan.split([memoryview(buf)[0:5]])
    assert out == [b"01", b"34"] and all(type(r) is bytes for r in out)
    assert plan.split([buf[0:5]]) == [b"01", b"34"]


def test_split_checks_result_count():
    plan = plan_reads([("k", Range(0, 1)), ("j", Range(0, 1))])
    with pytest.raises(ValueError, match="expected 2 results, got 1"):
        plan.split([b"x"])


# --- found by mutation testing (tools/mutation.py coalesce; see docs/development.md) ---------------------


def test_an_identical_request_gets_the_merged_bytes_object_itself():
    data = b"0123456789"
    whole = plan_reads([("k", WHOLE)])
    assert whole.split([data])[0] is data
    ranged = plan_reads([("k", Range(2, 6)), ("j", Suffix(3))])  # each alone: identical to its merged request
    both = [data[2:6], data[-3:]]
    got = ranged.split(both)
    assert [type(r) for r in got] == [bytes, bytes]
    assert all(a is b for a, b in zip(got, both, strict=True))


def test_views_are_unsigned_zero_copy_slices_of_merged_reads():
    plan = plan_reads([("k", Range(0, 2)), ("k", Range(3, 5))])
    data = bytes([250, 251, 252, 253, 254])  # bytes >= 128 tell an unsigned view from a signed one
    for merged in (data, bytearray(data), memoryview(data)):
        out = plan.split([merged], views=True)
        assert all(type(r) is memoryview and r.format == "B" for r in out), out
        assert [bytes(r) for r in out] == [data[0:2], data[3:5]]
        assert out[0] == data[0:2] and out[1] == data[3:5]  # equal as unsigned bytes
    # without views: bytes copies, also from a bytes result
    assert [type(r) for r in plan.split([data])] == [bytes, bytes]
    # a request identical to its merged one stays a bytes object even with views
    assert type(plan_reads([("k", WHOLE)]).split([bytearray(data)], views=True)[0]) is bytes


def test_a_whole_request_beside_ranges_of_its_key_gets_the_object_itself():
    data = b"0123456789"
    plan = plan_reads([("k", WHOLE), ("k", Range(2, 4)), ("k", Offset(0)), ("k", Suffix(2))])
    assert plan.merged == [("k", WHOLE)]
    out = plan.split([data], views=True)
    assert out[0] is data and out[2] is data  # WHOLE and Offset(0): the merged bytes object itself
    assert type(out[1]) is memoryview and out[1] == data[2:4] and bytes(out[3]) == data[-2:]


def test_versions_follow_the_merged_read_and_none_for_missing():
    plan = plan_reads([("k", Range(1, 3)), ("k", Range(4, 6)), ("j", Range(0, 1))])
    out = plan.split([b"0123456", None])
    assert plan.versions(out, ["v1", "ignored"]) == ["v1", "v1", None]  # j is missing: no version


def test_repeated_whole_requests_of_a_key_cost_one_request():
    for extra in ([], [("k", Offset(0))]):  # whole objects only (the fast path), and mixed with an offset
        plan = plan_reads([("k", WHOLE), ("j", WHOLE), ("k", WHOLE), *extra])
        assert plan.merged == [("k", WHOLE), ("j", WHOLE)]
        assert plan.split([b"kk", b"jj"]) == [b"kk", b"jj", b"kk"] + [b"kk"] * len(extra)


def test_an_empty_range_at_zero_is_not_a_whole_object_read():
    plan = plan_reads([("k", Range(0, 0))])
    assert plan.merged == [("k", Range(0, 0))]  # reaches the backend, which can tell a missing key; 0 bytes
    assert plan.split([b""]) == [b""] and plan.split([None]) == [None]
    assert type(plan.split([b""], views=True)[0]) is bytes  # identical to its merged request: not a view
