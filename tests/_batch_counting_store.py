"""A memory store that records the keys of each ``get_ranges`` call (a batch), for tests that assert how
many batches (rounds) a metadata probe or fetch costs, not only how many backend reads."""

from __future__ import annotations

from altarr.stores import MemoryStore


class CountingStore(MemoryStore):
    """``batches`` holds the keys of every ``get_ranges`` call, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def get_ranges(self, requests):
        self.batches.append([r[0] for r in requests])
        return super().get_ranges(requests)
