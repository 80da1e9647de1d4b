"""Typed byte-range requests: :data:`WHOLE`, :class:`Range` ``(start, stop)``, :class:`Offset`
``(start)``, :class:`Suffix` ``(length)``; no bound is negative.

Example:
    >>> from altarr.stores import MemoryStore
    >>> s = MemoryStore(); s.set("k", b"0123456789")
    >>> s.get_ranges([("k", Range(2, 4)), ("k", Suffix(3)), ("k", Offset(8)), ("k", WHOLE)])
    [b'23', b'789', b'89', b'0123456789']
    >>> Suffix(3).bounds(10), Range(4, 99).bounds(10)
    ((7, 10), (4, 10))
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import index as _index
from typing import SupportsIndex, Union, cast, final

from .keys import normalize_key

__all__ = [
    "ByteRequest",
    "Offset",
    "Range",
    "ReadRequest",
    "Suffix",
    "WHOLE",
    "Whole",
    "legacy_bounds",
    "normalize_requests",
]


_set = object.__setattr__


def _check(value: object, what: str) -> int:
    if type(value) is int:
        n = value
    else:
        try:
            n = _index(cast(SupportsIndex, value))  # operator.index raises TypeError for the rest
        except TypeError:
            raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{what} must be >= 0, got {n}")
    return n


class _Request:
    """What the four request types share, derived from their ``__slots__``: immutable, equal and hashed
    by type and fields, shown as ``Name(fields)``, pickled by their constructor."""

    __slots__ = ()

    def _fields(self) -> tuple[int, ...]:
        names: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in names)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("byte requests are immutable")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._fields()))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Request) and type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash((type(self), *self._fields()))

    def __reduce__(self) -> tuple[type[_Request], tuple[int, ...]]:
        return (type(self), self._fields())


@final
class Whole(_Request):
    """The whole object (use the constant :data:`WHOLE`)."""

    __slots__ = ()

    def bounds(self, size: int) -> tuple[int, int]:
        """``[off, end)`` of this request in an object of ``size`` bytes."""
        return 0, size

    def __repr__(self) -> str:
        return "WHOLE"


#: The whole object.
WHOLE = Whole()


@final
class Range(_Request):
    """Bytes ``[start, stop)`` (clipped at the end of the object; empty when ``stop <= start``).

    >>> Range(2, 5), Range(2, 5).bounds(4)
    (Range(2, 5), (2, 4))
    """

    __slots__ = ("start", "stop")
    start: int
    stop: int

    def __init__(self, start: int, stop: int) -> None:
        if type(start) is not int or type(stop) is not int or start < 0 or stop < 0:
            start, stop = _check(start, "Range start"), _check(stop, "Range stop")
        _set(self, "start", start)
        _set(self, "stop", stop)

    def bounds(self, size: int) -> tuple[int, int]:
        off = min(self.start, size)
        return off, max(off, min(self.stop, size))


@final
class Offset(_Request):
    """From byte ``start`` to the end of the object.

    >>> Offset(8).bounds(10), Offset(20).bounds(10)
    ((8, 10), (10, 10))
    """

    __slots__ = ("start",)
    start: int

    def __init__(self, start: int) -> None:
        _set(self, "start", start if type(start) is int and start >= 0 else _check(start, "Offset start"))

    def bounds(self, size: int) -> tuple[int, int]:
        off = min(self.start, size)
        return off, size


@final
class Suffix(_Request):
    """The last ``length`` bytes of the object (all of it when it is shorter): an HTTP suffix range.

    >>> Suffix(3).bounds(10), Suffix(30).bounds(10)
    ((7, 10), (0, 10))
    """

    __slots__ = ("length",)
    length: int

    def __init__(self, length: int) -> None:
        _set(
            self, "length", length if type(length) is int and length >= 0 else _check(length, "Suffix length")
        )

    def bounds(self, size: int) -> tuple[int, int]:
        return max(size - self.length, 0), size


#: What part of one object a read asks for.
ByteRequest = Union[Whole, Range, Offset, Suffix]  # noqa: UP007 - a runtime alias usable in isinstance
#: One read request of a batch: the key and the part of its object.
ReadRequest = tuple[str, ByteRequest]

_TYPES = (Whole, Range, Offset, Suffix)


def normalize_requests(requests: Sequence[ReadRequest]) -> list[ReadRequest]:
    """Check every key (:func:`~altarr.stores.keys.normalize_key`) and request type of a batch: each
    request is a ``(key, ByteRequest)`` pair.

    >>> normalize_requests([("a//b", Range(0, 4)), ("c", Suffix(2))])
    [('a/b', Range(0, 4)), ('c', Suffix(2))]
    >>> normalize_requests([("c", -2, None)])
    Traceback (most recent call last):
    TypeError: a read request is a (key, WHOLE | Range | Offset | Suffix) pair, got ('c', -2, None)
    """
    out: list[ReadRequest] = []
    append = out.append
    keys: dict[str, str] = {}  # a batch names few keys many times: check each once
    for r in requests:
        if len(r) != 2 or type(r[1]) not in _TYPES:
            raise TypeError(f"a read request is a (key, WHOLE | Range | Offset | Suffix) pair, got {r!r}")
        key = r[0]
        nkey = keys.get(key) if type(key) is str else None
        if nkey is None:
            nkey = keys[key] = normalize_key(key)
        append((nkey, r[1]))
    return out


def legacy_bounds(req: ByteRequest) -> tuple[int | None, int | None]:
    """``req`` as ``(start, stop)`` slice bounds, as an error's ``byte_range`` shows them (a suffix as
    ``(-length, None)``) and fsspec's ``cat_ranges`` takes them; nothing reads a request back from them.

    >>> legacy_bounds(Range(2, 5)), legacy_bounds(Offset(4)), legacy_bounds(Suffix(3)), legacy_bounds(WHOLE)
    ((2, 5), (4, None), (-3, None), (None, None))
    """
    if type(req) is Range:
        return req.start, req.stop
    if type(req) is Offset:
        return req.start, None
    if type(req) is Suffix:
        return -req.length, None
    return None, None
