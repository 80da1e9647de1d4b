"""Coalescing of byte-range requests: many ``(key, start, stop)`` requests -> few backend requests.

:func:`coalesce_ranges` is pure: it turns a batch of range requests (see :mod:`altarr.stores.base` for
their meaning) into a :class:`CoalescePlan` whose :attr:`~CoalescePlan.requests` are the merged requests
to send to the backend, and whose :meth:`~CoalescePlan.split` cuts each original result back out of the
merged results.

Rules, per key:

* a whole-object request (``(key, None, None)`` or ``(key, 0, None)``) absorbs every other request of
  the key;
* suffix requests (``(key, -n, None)``) are merged into one suffix request of the largest ``n`` (a
  shorter suffix lies inside a longer one); they never merge with positive ranges, because the object
  size is unknown;
* positive ranges, sorted by start, are merged while the gap between the merged span and the next range
  is at most ``gap`` bytes and the merged span stays within ``max_size`` bytes (a range that lies inside
  the span is always absorbed). An open-ended range ``(key, start, None)`` makes its span open-ended.

Merged requests use the same tuple form as the originals and only four shapes: ``(key, None, None)``
(whole object), ``(key, s, e)`` with ``0 <= s <= e`` (``s == e`` only for an empty original range, so the
backend can still tell a missing key), ``(key, s, None)`` with ``s > 0``, and ``(key, -n, None)``.

Negative stops are supported where they can be served without knowing the object size (``(key, 5, -2)``
is the object from byte 5 up to its last 2 bytes; ``(key, -10, -2)`` likewise); a negative start with a
non-negative stop cannot and raises :class:`~altarr.errors.InvalidKeyError`.

Example:
    >>> plan = coalesce_ranges([("k", 0, 4), ("k", 10, 12), ("k", -3, None), ("j", None, None)], gap=16)
    >>> plan.requests
    [('k', -3, None), ('k', 0, 12), ('j', None, None)]
    >>> data = b"0123456789abcdefXYZ"
    >>> plan.split([data[-3:], data[0:12], b"whole"])
    [b'0123', b'ab', b'XYZ', b'whole']
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import index as _index

from ..errors import InvalidKeyError
from .base import DEFAULT_COALESCE_GAP, RangeRequest, normalize_key

__all__ = ["CoalescePlan", "coalesce_ranges", "DEFAULT_COALESCE_GAP", "DEFAULT_MAX_COALESCED_SIZE"]

#: A merged span of positive ranges is not grown past this many bytes by default.
DEFAULT_MAX_COALESCED_SIZE = 16 * 1024 * 1024

_INF = float("inf")
Buffer = bytes | bytearray | memoryview


class CoalescePlan:
    """The merged requests of a batch and the way back to the original requests.

    ``requests`` - merged backend requests, grouped by key in first-seen key order.
    ``parts`` - one entry per original request: ``(merged_index, lo, hi, identity)``; the original result
    is ``merged_result[lo:hi]`` (Python slice semantics), or the merged result itself when ``identity``.
    """

    __slots__ = ("requests", "parts")

    def __init__(self, requests: list[RangeRequest], parts: list[tuple[int, int | None, int | None, bool]]):
        self.requests = requests
        self.parts = parts

    def __len__(self) -> int:
        return len(self.requests)

    def __repr__(self) -> str:
        return f"CoalescePlan({len(self.parts)} requests -> {len(self.requests)}: {self.requests!r})"

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
        if len(results) != len(self.requests):
            raise ValueError(f"expected {len(self.requests)} results, got {len(results)}")
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
        one per merged request), ``None`` where :meth:`split` gave ``None``.

        >>> plan = coalesce_ranges([("k", 1, 3), ("j", 0, 1)])
        >>> plan.versions(plan.split([b"12", None]), ["v7", None])
        ['v7', None]
        """
        return [None if r is None else merged[p[0]] for r, p in zip(out, self.parts, strict=True)]


def coalesce_requests(requests: Sequence[RangeRequest], gap: int, max_size: int) -> CoalescePlan:
    """:func:`coalesce_ranges` after checking and normalizing every key (what each store does first).

    >>> coalesce_requests([("a//b", 0, 4), ("a/b", 4, 8)], 0, 1 << 20).requests
    [('a/b', 0, 8)]
    """
    return coalesce_ranges([(normalize_key(k), s, e) for k, s, e in requests], gap, max_size)


def _as_int(v: object, key: str, req: tuple) -> int:
    try:
        return _index(v)
    except TypeError:
        raise InvalidKeyError(
            f"byte range bounds must be integers or None, got {type(v).__name__}", key=key, byte_range=req
        ) from None


def coalesce_ranges(
    requests: Sequence[RangeRequest],
    gap: int = DEFAULT_COALESCE_GAP,
    max_size: int = DEFAULT_MAX_COALESCED_SIZE,
) -> CoalescePlan:
    """Merge the range requests of a batch into few backend requests (see the module docstring).

    Ranges of one key whose gap is at most ``gap`` bytes are merged, up to ``max_size`` bytes per merged
    span. Keys are used as given (normalize them first). Results come back in request order through
    :meth:`CoalescePlan.split`.

    >>> coalesce_ranges([("a", 0, 10), ("a", 20, 30), ("a", 1000, 1010)], gap=100).requests
    [('a', 0, 30), ('a', 1000, 1010)]
    """
    n = len(requests)
    if n == 0 or all(r[1] is None and r[2] is None for r in requests):
        # Fast path (unsharded reads): whole objects only; one request per distinct key.
        first: dict[str, int] = {}
        wholes: list[RangeRequest] = []
        whole_parts: list[tuple[int, int | None, int | None, bool]] = []
        for r in requests:
            m = first.get(r[0])
            if m is None:
                m = first[r[0]] = len(wholes)
                wholes.append((r[0], None, None))
            whole_parts.append((m, None, None, True))
        return CoalescePlan(wholes, whole_parts)
    # Per key, the original indices by kind: whole, suffix, positive range.
    by_key: dict[str, list] = {}
    # Normalized form of each original: (kind, a, b) with kind 0 = whole-like (served from a whole object
    # with the original slice), 1 = suffix n=a with stop b (None or < 0), 2 = positive start a, stop b
    # (b >= a, or None for open-ended, or < 0 meaning open-ended then cut).
    norm: list[tuple[int, int | None, int | None]] = []
    for i, req in enumerate(requests):
        key, start, stop = req
        if start is not None and type(start) is not int:
            start = _as_int(start, key, (start, stop))
        if stop is not None and type(stop) is not int:
            stop = _as_int(stop, key, (start, stop))
        groups = by_key.get(key)
        if groups is None:
            groups = by_key[key] = [[], [], []]
        if start is None or start == 0:
            if stop is None or stop < 0:
                norm.append((0, 0, stop))
                groups[0].append(i)
                continue
            start = 0
        if start < 0:
            if stop is not None and stop >= 0:
                raise InvalidKeyError(
                    "a negative (suffix) start needs a stop that is None or negative",
                    key=key,
                    byte_range=(start, stop),
                )
            norm.append((1, -start, stop))
            groups[1].append(i)
        else:
            if stop is not None and 0 <= stop < start:
                stop = start
            norm.append((2, start, stop))
            groups[2].append(i)

    merged: list[RangeRequest] = []
    parts: list = [None] * len(norm)
    for key, (wholes, suffixes, ranges) in by_key.items():
        if wholes:
            m = len(merged)
            merged.append((key, None, None))
            for idxs in (wholes, suffixes, ranges):
                for i in idxs:
                    start, stop = requests[i][1], requests[i][2]
                    ident = (start is None or start == 0) and stop is None
                    parts[i] = (m, start, stop, ident)
            continue
        if suffixes:
            m = len(merged)
            n = max(norm[i][1] for i in suffixes)
            merged.append((key, -n, None))
            for i in suffixes:
                _, k, stop = norm[i]
                parts[i] = (m, -k, stop, k == n and stop is None)
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
    merged.append((key, cs, None) if open_ended else (key, cs, int(ce)))
    for i in span:
        _, a, b = norm[i]
        if b is None:
            parts[i] = (m, a - cs, None, a == cs and open_ended)
        elif b < 0:
            parts[i] = (m, a - cs, b, False)
        else:
            parts[i] = (m, a - cs, b - cs, a == cs and b == ce)
