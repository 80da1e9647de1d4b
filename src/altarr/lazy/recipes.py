"""The rebuild function of lazy arrays pickled before it moved to :mod:`altarr.lazy.array` (a pickle names
it by module), so that they still load (docs/lazy-arrays.md, "Recipes: pickling a lazy array").
"""

from .array import RECIPE_VERSION, rebuild_lazy_array

__all__ = ["rebuild_lazy_array", "RECIPE_VERSION"]
