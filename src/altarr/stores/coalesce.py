"""Coalescing of typed byte-range requests into few backend requests, per key: a whole request absorbs
all, suffixes merge into the longest, ranges within ``gap`` merge into spans up to ``max_size``.

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

from .ranges import WHOLE, Offset, Range, ReadRequest, Suffix, Whole

__all__ = [
    "CoalescePlan",
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

    def __len__(self) -> int:
        return len(self.merged)

    def __repr__(self) -> str:
        return f"CoalescePlan({len(self.parts)} requests -> {len(self.merged)}: {self.merged!r})"

    def split(self, results: Sequence[Buffer | None], views: bool = False) -> list[Buffer | None]:
        """Cut the original results out of ``results`` (one per merged request, ``None`` = missing key).

        Slices are taken through a ``memoryview`` (no intermediate copy) and returned as ``bytes``; an
        original request identical to its merged request gets the merged ``bytes`` object itself.

        >>> plan_reads([("k", Range(1, 3)), ("k", Offset(4))]).split([b"0123456"[1:]])
        [b'12', b'456']

        With ``views=True`` a request merged with others gets a zero-copy ``memoryview`` slice of the merged
        read instead of a ``bytes`` copy (for the engine's chunk reads, where copying megabytes of chunk
        bytes out of a merged range cost more than reading them).
        """
        if len(results) != len(self.merged):
            raise ValueError(f"expected {len(self.merged)} results, got {len(results)}")
        out: list[Buffer | None] = []
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

        >>> plan = plan_reads([("k", Range(1, 3)), ("j", Range(0, 1))])
        >>> plan.versions(plan.split([b"12", None]), ["v7", None])
        ['v7', None]
        """
        return [None if r is None else merged[p[0]] for r, p in zip(out, self.parts, strict=True)]


def plan_reads(
    requests: Sequence[ReadRequest],
    gap: int = DEFAULT_COALESCE_GAP,
    max_size: int = DEFAULT_MAX_COALESCED_SIZE,
) -> CoalescePlan:
    """Merge the typed read requests of a batch into few backend requests (see the module docstring).
    Keys are used as given (check them first: :func:`~altarr.stores.ranges.normalize_requests`).

    >>> plan_reads([("a", Range(0, 10)), ("a", Range(20, 30)), ("a", Range(1000, 1010))], gap=100).merged
    [('a', Range(0, 30)), ('a', Range(1000, 1010))]
    """
    if all(type(r[1]) is Whole for r in requests):
        return _wholes(requests)
    by_key, norm = _by_key(requests)
    merged: list[ReadRequest] = []
    parts: list = [None] * len(requests)
    for key, (wholes, suffixes, ranges) in by_key.items():
        if wholes:  # the whole object: every request of the key is a part of it
            m = len(merged)
            merged.append((key, WHOLE))
            for i in wholes:
                parts[i] = (m, None, None, True)
            for i in suffixes:
                parts[i] = (m, -norm[i][1], None, False)
            for i in ranges:
                parts[i] = (m, norm[i][1], norm[i][2], False)
            continue
        if suffixes:  # the longest suffix holds every shorter one
            m = len(merged)
            longest = max(norm[i][1] for i in suffixes)
            merged.append((key, Suffix(longest)))
            for i in suffixes:
                parts[i] = (m, -norm[i][1], None, norm[i][1] == longest)
        if ranges:
            _merge_ranges(key, ranges, norm, gap, max_size, merged, parts)
    return CoalescePlan(merged, parts)


def _wholes(requests: Sequence[ReadRequest]) -> CoalescePlan:
    """The plan of a batch of whole objects only (unsharded reads): one request per distinct key."""
    first: dict[str, int] = {}
    wholes: list[ReadRequest] = []
    parts: list[tuple[int, int | None, int | None, bool]] = []
    for r in requests:
        m = first.get(r[0])
        if m is None:
            m = first[r[0]] = len(wholes)
            wholes.append((r[0], WHOLE))
        parts.append((m, None, None, True))
    return CoalescePlan(wholes, parts)


def _by_key(
    requests: Sequence[ReadRequest],
) -> tuple[dict[str, list[list[int]]], list[tuple[int, int, int | None]]]:
    """Per key, the positions of its whole-object, suffix and range requests; and per request its form
    ``(kind, a, b)``: 0 the whole object, 1 a suffix of length ``a``, 2 the range from ``a`` to ``b``
    (``None``: to the end)."""
    by_key: dict[str, list[list[int]]] = {}
    norm: list[tuple[int, int, int | None]] = []
    for i, (key, req) in enumerate(requests):
        groups = by_key.get(key)
        if groups is None:
            groups = by_key[key] = [[], [], []]
        if type(req) is Range:
            norm.append((2, req.start, req.stop if req.stop > req.start else req.start))
            groups[2].append(i)
        elif type(req) is Offset and req.start > 0:
            norm.append((2, req.start, None))
            groups[2].append(i)
        elif type(req) is Suffix and req.length > 0:
            norm.append((1, req.length, None))
            groups[1].append(i)
        elif type(req) is Suffix:  # an empty suffix: existence only
            norm.append((2, 0, 0))
            groups[2].append(i)
        else:  # the whole object, or Offset(0)
            norm.append((0, 0, None))
            groups[0].append(i)
    return by_key, norm


def _merge_ranges(
    key: str, ranges: list[int], norm: list, gap: int, max_size: int, merged: list, parts: list
) -> None:
    """The ranges ``ranges`` of ``key``, sorted by start, merged into spans while the gap to the next one
    is at most ``gap`` and the span stays within ``max_size`` (a range inside the span always joins it)."""
    if len(ranges) > 1:
        ranges.sort(key=lambda i: norm[i][1])
    span: list[int] = []
    cs, ce = 0, 0.0
    for i in ranges:
        _, a, b = norm[i]
        end = _INF if b is None else b
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


def _emit(key: str, cs: int, ce: float, span: list[int], norm: list, merged: list, parts: list) -> None:
    m = len(merged)
    open_ended = ce == _INF
    # (an open span from 0: an empty suffix, existence only, joined an offset's span)
    merged.append((key, (Offset(cs) if cs else WHOLE) if open_ended else Range(cs, int(ce))))
    for i in span:
        _, a, b = norm[i]
        if b is None:
            parts[i] = (m, a - cs, None, a == cs and open_ended)
        else:
            parts[i] = (m, a - cs, b - cs, a == cs and b == ce)
