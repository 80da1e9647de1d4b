"""Region (basic selection) planning moved to :mod:`altarr.selection.regions` (one selection module below
the dataset and lazy layers); this module re-exports it for existing imports."""

from ..selection.normalize import DimSelection, is_basic_selection
from ..selection.regions import flip_reversed, normalize_selection, plan_dim

__all__ = ["DimSelection", "flip_reversed", "is_basic_selection", "normalize_selection", "plan_dim"]
