"""Image pyramids: building (:func:`build_pyramid`), reading (:func:`open_multiscale`) and converting
(:func:`convert_pyramid`) multiscale datasets in OME-Zarr 0.5/0.4 and N5 (n5-viewer, BigDataViewer)
layouts (docs/pyramids.md).

Example:
    >>> import numpy as np, altarr as aa
    >>> ms = aa.build_pyramid(np.zeros((32, 64, 64), "uint16"), "memory://doc-ms/p.ome.zarr",
    ...                       scale=(2.0, 0.5, 0.5), unit="micrometer", chunks=(16, 16, 16))
    >>> [lv.shape for lv in ms.levels]
    [(32, 64, 64), (32, 32, 32), (32, 16, 16), (16, 8, 8)]
    >>> ms.levels[3].scale, ms.axes[0]
    ((4.0, 4.0, 4.0), Axis(name='z', type='space', unit='micrometer'))
"""

from .build import Downsampled, build_pyramid, convert_pyramid
from .downsample import METHODS, downsample
from .layouts import LAYOUTS, get_layout
from .levels import Level, Multiscale
from .plan import Axis, normalize_axes, plan_factors
from .read import is_multiscale, open_multiscale

__all__ = [
    "Axis",
    "Downsampled",
    "LAYOUTS",
    "Level",
    "METHODS",
    "Multiscale",
    "build_pyramid",
    "convert_pyramid",
    "downsample",
    "get_layout",
    "is_multiscale",
    "normalize_axes",
    "open_multiscale",
    "plan_factors",
]
