"""Build altarr's optional native shard kernel (``altarr.dataset._kernel``, one C file).

Everything else is in ``pyproject.toml``. The kernel needs only a C compiler and the Python headers: it
includes no codec headers and links no codec library (zstd and blosc are reached at run time through the
libraries numcodecs and python-zstandard ship). When it cannot be built, the install goes on with the
pure-Python engine and says so in one line instead of a compiler traceback.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """``build_ext`` that turns a failed build of the kernel into one line on stderr."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all (setuptools' errors are Exception subclasses)
            self._skip(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # compile or link error
            self._skip(e)

    @staticmethod
    def _skip(e: BaseException) -> None:
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        print(
            f"altarr: native kernel not built ({reason}); the pure-Python engine is used instead",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "altarr.dataset._kernel",
            sources=["src/altarr/dataset/_kernel.c"],
            extra_compile_args=["-std=c11", "-D_GNU_SOURCE"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
