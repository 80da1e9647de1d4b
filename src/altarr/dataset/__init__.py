"""The block engine's dataset layer: chunk grids, batched shard-grouped chunk I/O, regions, groups.

Example:
    >>> import altarr as aa
    >>> ds = aa.create_dataset("memory://doc-pkg", shape=(4, 4), dtype="f8", chunks=(2, 2))
    >>> ds.read_chunk((0, 0)) is None
    True
"""

from .access import DatasetAccess, Merge
from .api import create_dataset, create_group, create_like, open_dataset, open_group
from .chunk_codec import check_chunk_room
from .consolidated import is_consolidated
from .dataset import Dataset
from .grid import NestedGrid
from .group import Group
from .members import Attributes

__all__ = [
    "Attributes",
    "Dataset",
    "DatasetAccess",
    "Group",
    "Merge",
    "NestedGrid",
    "check_chunk_room",
    "create_dataset",
    "create_group",
    "create_like",
    "is_consolidated",
    "open_dataset",
    "open_group",
]
