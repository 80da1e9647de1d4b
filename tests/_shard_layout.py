"""Where a stored shard's bytes are, parsed from the object, so request tests can assert exact
``bytes_read`` as well as request counts."""

from __future__ import annotations

from altarr.stores import WHOLE


class Layout:
    """Where a stored shard's bytes are (one level of sharding), parsed from the object itself so a test
    can state the exact ``bytes_read`` a plan costs: ``size`` (the object), ``index`` (its index's
    bytes) and ``ranges[chunk] = (offset, nbytes)``. Read before ``store.stats.reset()``."""

    def __init__(self, ds, store, shard):
        access = ds._access
        sc, cps = access.layout.sharding[1], access.grid.per_block(1)
        obj = bytes(store.get_ranges([(access.layout.key(shard), WHOLE)])[0])
        index = sc.read_index(obj, cps)
        self.size, self.index = len(obj), sc.index_nbytes(cps)
        self.ranges = {}
        for c in ds.chunks_in_shard(shard):
            entry = index[tuple(ci % n for ci, n in zip(c, cps, strict=True))]
            self.ranges[c] = (int(entry[0]), int(entry[1]))

    def chunk_bytes(self, chunks) -> int:
        """Bytes of these chunks' own ranges (each read on its own: no coalescing)."""
        return sum(self.ranges[c][1] for c in chunks)

    def span(self, chunks) -> int:
        """Bytes of the one coalesced request covering these chunks (first offset to last end)."""
        return max(sum(self.ranges[c]) for c in chunks) - min(self.ranges[c][0] for c in chunks)
