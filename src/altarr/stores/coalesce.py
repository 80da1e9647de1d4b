"""Coalescing of byte-range requests: many typed requests -> few backend requests.

:func:`plan_reads` is pure: it turns a batch of typed read requests (``(key, ByteRequest)`` pairs, see
:mod:`altarr.stores.ranges`) into a :class:`CoalescePlan` whose :attr:`~CoalescePlan.merged` are the
merged requests to send to the backend, and whose :meth:`~CoalescePlan.split` cuts each original result
back out of the merged results. The store base class runs it once for every store
(:meth:`altarr.stores.Store.get_ranges`); a store only serves the merged requests.

Rules, per key:

* a whole-object request (:data:`WHOLE` or ``Offset(0)``) absorbs every other request of the key;
* :class:`Suffix` requests are merged into one suffix of the largest length (a shorter suffix lies
  inside a longer one); they never merge with ranges, because the object size is unknown;
* :class:`Range`/:class:`Offset` requests, sorted by start, are merged while the gap between the merged
  span and the next one is at most ``gap`` bytes and the merged span stays within ``max_size`` bytes (a
  range that lies inside the span is always absorbed). An :class:`Offset` makes its span open-ended.

Merged requests are :data:`WHOLE`, ``Range(s, e)`` with ``s <= e`` (``s == e`` only for an empty
original range, so the backend can still tell a missing key), ``Offset(s)`` with ``s > 0`` and
``Suffix(n)`` with ``n > 0``.

:func:`coalesce_ranges` is the same planner for the legacy ``(key, start, stop)`` form (converted by
:func:`~altarr.stores.ranges.normalize_requests`); its plan's :attr:`~CoalescePlan.requests` shows the
merged requests in that form too.

Example:
    >>> plan = plan_reads([("k", Range(0, 4)), ("k", Range(10, 12)), ("k", Suffix(3)), ("j", WHOLE)], gap=16)
    >>> plan.merged
    [('k', Suffix(3)), ('k', Range(0, 12)), ('j', WHOLE)]
    >>> data = b"0123456789abcdefXYZ"
    >>> plan.split([data[-3:], data[0:12], b"whole"])
    [b'0123', b'ab', b'XYZ', b'whole']
"""

from __future__ import annotations

from collections.abc import Sequence

from .ranges import WHOLE, Offset, Range, ReadRequest, Suffix, Whole, legacy_bounds, normalize_requests

__all__ = [
    "CoalescePlan",
    "coalesce_ranges",
    "plan_reads",
    "DEFAULT_COALESCE_GAP",
    "DEFAULT_MAX_COALESCED_SIZE",
]

#: Ranges of one key whose gap is at most this many bytes are merged into one request by default.
DEFAULT_COALESCE_GAP = 64 * 1024
#: A merged span of positive ranges is not grown past this many bytes by default.
DEFAULT_MAX_COALESCED_SIZE = 16 * 1024 * 1024

_INF = float("inf")
Buffer = bytes | bytearray | memoryview


class CoalescePlan:
    """The merged requests of a batch and the way back to the original requests.

    ``merged`` - merged backend requests (``(key, ByteRequest)``), grouped by key in first-seen key order.
    ``parts`` - one entry per original request: ``(merged_index, lo, hi, identity)``; the original result
    is ``merged_result[lo:hi]`` (a slice of the merged bytes), or the merged result itself when
    ``identity``.
    """

    __slots__ = ("merged", "parts")

    def __init__(self, merged: list[ReadRequest], parts: list[tuple[int, int | None, int | None, bool]]):
        self.merged = merged
        self.parts = parts

    @property
    def requests(self) -> list[tuple[str, int | None, int | None]]:
        """The merged requests in the legacy ``(key, start, stop)`` form (a suffix as ``(key, -n, None)``).

        >>> coalesce_ranges([("k", -3, None), ("k", 0, 4)]).requests
        [('k', -3, None), ('k', 0, 4)]
        """
        return [(k, *legacy_bounds(r)) for k, r in self.merged]

    def __len__(self) -> int:
        return len(self.merged)

    def __repr__(self) -> str:
        return f"CoalescePlan({len(self.parts)} requests -> {len(self.merged)}: {self.merged!r})"

    def split(self, results: Sequence[Buffer | None], views: bool = False) -> list[Buffer | None]:
        """Cut the original results out of ``results`` (one per merged request, ``None`` = missing key).

        Slices are taken through a ``memoryview`` (no intermediate copy) and returned as ``bytes``; an
        original request identical to its merged request gets the merged ``bytes`` object itself.

        >>> coalesce_ranges([("k", 1, 3), ("k", 4, None)]).split([b"0123456"[1:]])
        [b'12', b'456']

        With ``views=True`` a request merged with others gets a zero-copy ``memoryview`` slice of the merged
        read instead of a ``bytes`` copy (for the engine's chunk reads, where copying megabytes of chunk
        bytes out of a merged range cost more than reading them).
        """
        if len(results) != len(self.merged):
            raise ValueError(f"expected {len(self.merged)} results, got {len(results)}")
        out: list[bytes | None] = []
        append = out.append
        casts: dict[int, memoryview] = {}
        for m, lo, hi, identity in self.parts:
            r = results[m]
            if r is None:
                append(None)
            elif identity:
                append(r if type(r) is bytes else bytes(r))
            elif type(r) is bytes and not views:
                append(r[lo:hi])
            else:
                mv = casts.get(m)
                if mv is None:
                    mv = casts[m] = memoryview(r).cast("B")
                append(mv[lo:hi] if views else bytes(mv[lo:hi]))
        return out

    def versions(self, out: Sequence[Buffer | None], merged: Sequence[object]) -> list[object]:
        """Per original request, the version of the object its merged read came from (``merged`` holds
        one per merged request), ``None`` where :meth:`split` gave ``None``. The same spreads any other
        per-object fact of a merged read (the object sizes of :attr:`~altarr.stores.base.Fetched.sizes`).

        >>> plan = coalesce_ranges([("k", 1, 3), ("j", 0, 1)])
        >>> plan.versions(plan.split([b"12", None]), ["v7", None])
        ['v7', None]
        """
        return [None if r is None else merged[p[0]] for r, p in zip(out, self.parts, strict=True)]


def coalesce_requests(requests: Sequence, gap: int, max_size: int) -> CoalescePlan:
    """:func:`coalesce_ranges` after checking and normalizing every key.

    >>> coalesce_requests([("a//b", 0, 4), ("a/b", 4, 8)], 0, 1 << 20).requests
    [('a/b', 0, 8)]
    """
    return coalesce_ranges(requests, gap, max_size)


def coalesce_ranges(
    requests: Sequence,
    gap: int = DEFAULT_COALESCE_GAP,
    max_size: int = DEFAULT_MAX_COALESCED_SIZE,
) -> CoalescePlan:
    """:func:`plan_reads` for requests in either form, typed or legacy ``(key, start, stop)``.

    Ranges of one key whose gap is at most ``gap`` bytes are merged, up to ``max_size`` bytes per merged
    span. Results come back in request order through :meth:`CoalescePlan.split`.

    >>> coalesce_ranges([("a", 0, 10), ("a", 20, 30), ("a", 1000, 1010)], gap=100).requests
    [('a', 0, 30), ('a', 1000, 1010)]
    """
    typed, cuts = normalize_requests(requests)
    return plan_reads(typed, gap, max_size, cuts)


def plan_reads(
    requests: Sequence[ReadRequest],
    gap: int = DEFAULT_COALESCE_GAP,
    max_size: int = DEFAULT_MAX_COALESCED_SIZE,
    cuts: Sequence[int | None] | None = None,
) -> CoalescePlan:
    """Merge the typed read requests of a batch into few backend requests (see the module docstring).

    Keys are used as given (normalize them first). ``cuts`` (from
    :func:`~altarr.stores.ranges.normalize_requests`, legacy requests with a negative stop only) drops
    that many bytes off the end of a request's result.

    >>> plan_reads([("a", Range(0, 10)), ("a", Range(20, 30)), ("a", Range(1000, 1010))], gap=100).merged
    [('a', Range(0, 30)), ('a', Range(1000, 1010))]
    """
    n = len(requests)
    if cuts is None and all(type(r[1]) is Whole for r in requests):
        # Fast path (unsharded reads): whole objects only; one request per distinct key.
        first: dict[str, int] = {}
        wholes: list[ReadRequest] = []
        whole_parts: list[tuple[int, int | None, int | None, bool]] = []
        for r in requests:
            m = first.get(r[0])
            if m is None:
                m = first[r[0]] = len(wholes)
                wholes.append((r[0], WHOLE))
            whole_parts.append((m, None, None, True))
        return CoalescePlan(wholes, whole_parts)
    # Per key, the original indices by kind: whole, suffix, range.
    by_key: dict[str, list] = {}
    # Normalized form of each original: (kind, a, b) with kind 0 = whole-like (the slice [0:b] of the
    # whole object), 1 = suffix of length a (then cut at b), 2 = range from a to b (b >= a, or None for
    # open-ended, or < 0: open-ended then cut).
    norm: list[tuple[int, int, int | None]] = []
    for i in range(n):
        key, req = requests[i]
        cut = None if cuts is None else cuts[i]
        groups = by_key.get(key)
        if groups is None:
            groups = by_key[key] = [[], [], []]
        t = type(req)
        if t is Range:
            norm.append((2, req.start, req.stop if req.stop > req.start else req.start))
            groups[2].append(i)
        elif t is Whole or (t is Offset and req.start == 0):
            norm.append((0, 0, cut))
            groups[0].append(i)
        elif t is Offset:
            norm.append((2, req.start, cut))
            groups[2].append(i)
        elif req.length == 0:  # an empty suffix: existence only
            norm.append((2, 0, 0))
            groups[2].append(i)
        else:
            norm.append((1, req.length, cut))
            groups[1].append(i)

    merged: list[ReadRequest] = []
    parts: list = [None] * n
    for key, (wholes, suffixes, ranges) in by_key.items():
        if wholes:
            m = len(merged)
            merged.append((key, WHOLE))
            for idxs in (wholes, suffixes, ranges):
                for i in idxs:
                    kind, a, b = norm[i]
                    if kind == 0:
                        parts[i] = (m, None, b, b is None)
                    elif kind == 1:
                        parts[i] = (m, -a, b, False)
                    else:
                        parts[i] = (m, a, b, False)
            continue
        if suffixes:
            m = len(merged)
            longest = max(norm[i][1] for i in suffixes)
            merged.append((key, Suffix(longest)))
            for i in suffixes:
                _, k, stop = norm[i]
                parts[i] = (m, -k, stop, k == longest and stop is None)
        if ranges:
            if len(ranges) > 1:
                ranges.sort(key=lambda i: norm[i][1])
            span: list[int] = []
            cs = ce = 0
            for i in ranges:
                _, a, b = norm[i]
                end = _INF if b is None or b < 0 else b
                if span and a - ce <= gap and (end <= ce or end - cs <= max_size or end == _INF):
                    span.append(i)
                    if end > ce:
                        ce = end
                    continue
                if span:
                    _emit(key, cs, ce, span, norm, merged, parts)
                span = [i]
                cs, ce = a, end
            _emit(key, cs, ce, span, norm, merged, parts)
    return CoalescePlan(merged, parts)


def _emit(key: str, cs: int, ce: float, span: list[int], norm: list, merged: list, parts: list) -> None:
    m = len(merged)
    open_ended = ce == _INF
    merged.append((key, Offset(cs) if open_ended else Range(cs, int(ce))))
    for i in span:
        _, a, b = norm[i]
        if b is None:
            parts[i] = (m, a - cs, None, a == cs and open_ended)
        elif b < 0:
            parts[i] = (m, a - cs, b, False)
        else:
            parts[i] = (m, a - cs, b - cs, a == cs and b == ce)
