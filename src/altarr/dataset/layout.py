"""Where chunks live: :class:`ShardLayout`, the nested shard layout of one array (grid, each level's
sharding codec, store keys, grouping by stored object), and the carving and assembling of shards as raw
chunk bytes through nested levels, without I/O or decoding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import mod
from typing import Any

import numpy as np

from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..errors import AltarrError, UnsupportedError
from ..formats._common import check_spec_limits, join_key
from ..formats.base import DatasetSpec
from .grid import NestedGrid

__all__ = ["Chunk", "ShardLayout"]

Chunk = tuple[int, ...]


def _levels_of(spec: DatasetSpec) -> tuple[list[tuple[int, ...]], list[ShardingCodec], CodecChain]:
    """Block shapes (outermost first), the sharding codec of each shard level, and the chunk chain."""
    chain = spec.codecs
    shapes = [tuple(spec.outer_chunks)]
    shardings: list[ShardingCodec] = []
    while isinstance(chain.array_bytes, ShardingCodec):
        if chain.array_array or chain.bytes_bytes:
            names = [c.name for c in (*chain.array_array, *chain.bytes_bytes)]
            raise UnsupportedError(
                f"codecs {names} around sharding_indexed would need whole-shard decoding; altarr supports "
                "array->array codecs inside the shard's own codec chain only",
                codec="sharding_indexed",
            )
        sc = chain.array_bytes
        shardings.append(sc)
        shapes.append(tuple(sc.chunk_shape))
        chain = sc.codecs
    return shapes, shardings, chain


class ShardLayout:
    """The nested shard layout of one array: grid, sharding codec per level, keys and grouping.

    ``sharding[l]`` splits a level-``l`` block into level-``l - 1`` blocks (index 0 unused; level 0 is a
    chunk). ``max_block_bytes[l]`` is the most bytes a stored level-``l`` block can have: index entries
    claiming more are refused before anything is read or allocated for them."""

    @classmethod
    def of(cls, spec: DatasetSpec, prefix: str) -> ShardLayout:
        """The layout of ``spec`` at ``prefix``, made once per codec chain, shape, block shape, dtype,
        prefix and chunk-key function (memoized by the chain, which every open of a memoized metadata
        parse shares: a layout is never changed once made)."""
        key = ("layout", tuple(spec.shape), tuple(spec.outer_chunks), spec.dtype, prefix, spec.chunk_key)
        return spec.codecs.derive(key, lambda: cls(spec, prefix))

    def __init__(self, spec: DatasetSpec, prefix: str) -> None:
        self.chunk_key = spec.chunk_key
        self.prefix = prefix
        self.dtype = np.dtype(spec.dtype)
        shapes, shardings, chunk_chain = _levels_of(spec)
        meta_key = join_key(prefix, next(iter(spec.metadata), "")) if spec.metadata else (prefix or None)
        check_spec_limits(spec.shape, shapes[::-1], self.dtype, key=meta_key)
        self.grid = NestedGrid(spec.shape, shapes[::-1])
        self.sharding: list[ShardingCodec | None] = [None, *shardings[::-1]]
        #: The codec chain of one chunk (inside the innermost shard).
        self.chunk_chain = chunk_chain
        self.max_block_bytes: list[int] = [chunk_chain.max_encoded_size(self.grid.chunks, self.dtype)]
        for level in range(1, self.grid.nlevels):
            sc, cps = self.level_codec(level)
            self.max_block_bytes.append(sc.index_nbytes(cps) + math.prod(cps) * self.max_block_bytes[-1])

    # --- keys and grouping -----------------------------------------------------------------------------
    @property
    def sharded(self) -> bool:
        return self.grid.nlevels > 1

    def key(self, outer_pos: Sequence[int]) -> str:
        """The store key of the outermost block at ``outer_pos`` (a shard, or a chunk when unsharded)."""
        return join_key(self.prefix, self.chunk_key(tuple(int(p) for p in outer_pos)))

    def shard_of(self, chunk: Sequence[int]) -> Chunk:
        return self.grid.position(chunk, self.grid.nlevels - 1)

    def object_key(self, chunk: Chunk) -> str:
        """The key of the stored object holding ``chunk``."""
        return self.key(self.shard_of(chunk))

    def group_by_shard(self, chunks: Sequence[Chunk]) -> dict[Chunk, list[Chunk]]:
        """The chunks by the outermost block holding them (first-seen order, both levels)."""
        return self.grid.group_by_block(chunks, self.grid.nlevels - 1)

    def clipped(self, chunk: Chunk) -> tuple[int, ...]:
        """The shape of ``chunk`` clipped at the array edge."""
        return self.grid.block_clipped_shape(chunk, 0)

    # --- shard bytes <-> raw chunk bytes (no decoding) ---------------------------------------------------
    def level_codec(self, level: int) -> tuple[ShardingCodec, tuple[int, ...]]:
        """The sharding codec of ``level`` and its children per dimension."""
        sc = self.sharding[level]
        assert sc is not None
        return sc, self.grid.per_block(level)

    def _entries(self, mem: memoryview, level: int, key: str) -> list[Any]:
        """The children of the level-``level`` block ``mem`` (raw bytes or ``None``), errors naming ``key``."""
        sc, cps = self.level_codec(level)
        try:
            return list(sc.split(mem, cps))
        except AltarrError as e:
            raise e.with_context(key=key) from e

    def _by_child(self, chunks: Iterable[Chunk], level: int) -> dict[int, list[Chunk]]:
        """The level-0 ``chunks`` by the index of the child of a level-``level`` block holding them."""
        cps = self.grid.per_block(level)
        blocks = self.grid.group_by_block(chunks, level - 1)
        return {self.grid.flat_index(map(mod, pos, cps), level): g for pos, g in blocks.items()}

    def split_down(
        self, mem: memoryview, level: int, chunks: set[Chunk], key: str
    ) -> dict[Chunk, memoryview]:
        """Raw bytes of the stored ``chunks`` (level-0 coords) inside the level-``level`` block ``mem``."""
        entries = self._entries(mem, level, key)
        found: dict[Chunk, memoryview] = {}
        for i, group in self._by_child(chunks, level).items():
            if entries[i] is None:
                continue
            if level == 1:
                found[group[0]] = entries[i]
            else:
                found.update(self.split_down(entries[i], level - 1, set(group), key))
        return found

    def empty(self, level: int) -> bytes:
        """A level-``level`` block holding no chunk (:meth:`ShardingCodec.empty_shard`)."""
        sc, cps = self.level_codec(level)
        return sc.empty_shard(cps)

    def build(
        self, level: int, old: memoryview | None, new: dict[Chunk, Any], key: str, parts: bool = False
    ) -> Any:
        """Assemble a level-``level`` block: old entries carried over as bytes, ``new``
        (level-0 chunk -> encoded bytes or None) applied. ``None`` when the block ends up empty; with
        ``parts`` the block is returned as the list of its parts (see ``ShardingCodec.assemble_parts``)."""
        sc, cps = self.level_codec(level)
        entries = self._entries(old, level, key) if old is not None else [None] * math.prod(cps)
        for i, group in self._by_child(new, level).items():
            if level == 1:
                entries[i] = new[group[0]]
            else:
                entries[i] = self.build(level - 1, entries[i], {c: new[c] for c in group}, key)
        return sc.assemble_parts(entries, cps) if parts else sc.assemble(entries, cps)
