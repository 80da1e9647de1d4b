"""Coalescing of typed byte-range requests into few backend requests, per key: a whole request absorbs
all, suffixes merge into the longest, ranges within ``gap`` merge into spans up to ``max_size``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .ranges import WHOLE, Offset, Range, ReadRequest, Suffix, Whole

__all__ = [
    "CoalescePlan",
    "plan_reads",
    "DEFAULT_COALESCE_GAP",
    "DEFAULT_MAX_COALESCED_SIZE",
]

DEFAULT_COALESCE_GAP = 64 * 1024
DEFAULT_MAX_COALESCED_SIZE = 16 * 1024 * 1024

_INF = float("inf")
Buffer = bytes | bytearray | memoryview


class CoalescePlan(NamedTuple):
    """The ``merged`` requests of a batch, and per original request its ``parts`` entry ``(merged_index,
    lo, hi, identity)``: ``merged_result[lo:hi]``, or the merged result itself when ``identity``."""

    merged: list[ReadRequest]
    parts: list[tuple[int, int | None, int | None, bool]]

    def split(self, results: Sequence[Buffer | None], views: bool = False) -> list[Buffer | None]:
        """Cut the original results out of ``results`` (one per merged request, ``None`` = missing key).

        Slices are taken through a ``memoryview`` (no intermediate copy) and returned as ``bytes``; an
        original request identical to its merged request gets the merged ``bytes`` object itself.

        >>> plan_reads([("k", Range(1, 3)), ("k", Offset(4))]).split([b"0123456"[1:]])
        [b'12', b'456']

        ``views=True``: zero-copy ``memoryview`` slices instead of ``bytes`` copies.
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
        per-object fact of a merged read (the object sizes of :attr:`~altarr.stores.base.Fetched.sizes`)."""
        return [None if r is None else merged[p[0]] for r, p in zip(out, self.parts, strict=True)]


def plan_reads(
    requests: Sequence[ReadRequest],
    gap: int = DEFAULT_COALESCE_GAP,
    max_size: int = DEFAULT_MAX_COALESCED_SIZE,
) -> CoalescePlan:
    """Merge the typed read requests of a batch (keys already checked) into few backend requests.

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
                parts[i] = (m, -norm[i][0], None, False)
            for i in ranges:
                parts[i] = (m, norm[i][0], norm[i][1], False)
            continue
        if suffixes:  # the longest suffix holds every shorter one
            m = len(merged)
            longest = max(norm[i][0] for i in suffixes)
            merged.append((key, Suffix(longest)))
            for i in suffixes:
                parts[i] = (m, -norm[i][0], None, norm[i][0] == longest)
        if ranges:
            _merge_ranges(key, ranges, norm, gap, max_size, merged, parts)
    return CoalescePlan(merged, parts)


def _wholes(requests: Sequence[ReadRequest]) -> CoalescePlan:
    """The plan of a batch of whole objects only: one request per distinct key."""
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
) -> tuple[dict[str, list[list[int]]], list[tuple[int, int | None]]]:
    """Per key, the positions of its whole (0), suffix (1) and range (2) requests; per request its
    ``(start, stop)`` (a suffix: ``(length, None)``)."""
    by_key: dict[str, list[list[int]]] = {}
    norm: list[tuple[int, int | None]] = []
    for i, (key, req) in enumerate(requests):
        groups = by_key.get(key)
        if groups is None:
            groups = by_key[key] = [[], [], []]
        if type(req) is Range:
            kind, a, b = 2, req.start, max(req.stop, req.start)
        elif type(req) is Offset and req.start > 0:
            kind, a, b = 2, req.start, None
        elif type(req) is Suffix and req.length > 0:
            kind, a, b = 1, req.length, None
        elif type(req) is Suffix:  # an empty suffix: existence only
            kind, a, b = 2, 0, 0
        else:  # the whole object, or Offset(0)
            kind, a, b = 0, 0, None
        norm.append((a, b))
        groups[kind].append(i)
    return by_key, norm


def _merge_ranges(
    key: str, ranges: list[int], norm: list, gap: int, max_size: int, merged: list, parts: list
) -> None:
    ranges.sort(key=lambda i: norm[i][0])
    span: list[int] = []
    cs, ce = 0, 0.0
    for i in ranges:
        a, b = norm[i]
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
    merged.append((key, (Offset(cs) if cs else WHOLE) if open_ended else Range(cs, int(ce))))
    for i in span:
        a, b = norm[i]
        if b is None:
            parts[i] = (m, a - cs, None, a == cs and open_ended)
        else:
            parts[i] = (m, a - cs, b - cs, a == cs and b == ce)
