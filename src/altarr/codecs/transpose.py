"""The Zarr v3 ``transpose`` codec (array -> array): ``encoded.shape[i] == decoded.shape[order[i]]``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError, MetadataError
from ._config import check_int, check_keys
from .base import ArrayArrayCodec
from .registry import register_codec

__all__ = ["TransposeCodec"]


@register_codec
class TransposeCodec(ArrayArrayCodec):
    """Permute the dimensions: ``order`` is a permutation of ``0..ndim-1``.

    Encoding and decoding return views (no copy); the codec chain makes the final result contiguous.

    >>> TransposeCodec((2, 0, 1)).resolve((4, 5, 6), np.dtype("f4"))[0]
    (6, 4, 5)
    """

    name: ClassVar[str] = "transpose"

    def __init__(self, order: Sequence[int]) -> None:
        if isinstance(order, str) or not isinstance(order, Sequence):
            raise MetadataError(
                f"codec 'transpose': field 'order' must be a list of integers, got {order!r}", codec=self.name
            )
        order = tuple(check_int(self.name, "order", o, lo=0) for o in order)
        if sorted(order) != list(range(len(order))):
            raise MetadataError(
                f"codec 'transpose': field 'order' must be a permutation of 0..{len(order) - 1}, got {list(order)}",
                codec=self.name,
            )
        self.order = order
        self.inverse = tuple(int(i) for i in np.argsort(order))

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> TransposeCodec:
        return cls(**check_keys(cls.name, configuration, ["order"], ["order"]))

    def configuration(self) -> dict[str, Any]:
        return {"order": list(self.order)}

    def _check_ndim(self, ndim: int) -> None:
        if ndim != len(self.order):
            raise MetadataError(
                f"codec 'transpose': order {list(self.order)} has {len(self.order)} dimensions, "
                f"the array has {ndim}",
                codec=self.name,
            )

    def validate(self, shape: tuple[int, ...], dtype: Any) -> None:
        """Check that ``order`` fits arrays of ``shape``."""
        self._check_ndim(len(shape))

    def resolve(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        self._check_ndim(len(shape))
        return tuple(shape[i] for i in self.order), dtype

    def encode(self, array: np.ndarray) -> np.ndarray:
        self._check_ndim(array.ndim)
        return np.transpose(array, self.order)

    def decode(self, array: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        self._check_ndim(array.ndim)
        result = np.transpose(array, self.inverse)
        if result.shape != tuple(shape):
            raise CodecError(
                f"transpose: decoded shape {result.shape} differs from the expected {tuple(shape)}",
                codec=self.name,
            )
        return result
