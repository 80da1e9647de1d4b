"""Build altarr's optional native kernel (``altarr._native``, one C file linked to libzstd and c-blosc 1.x).

Everything else is in ``pyproject.toml``. The kernel needs a C compiler, the Python headers and the
development files of libzstd (>= 1.4) and c-blosc 1.x (>= 1.16), found with ``pkg-config`` or else in the
compiler's default paths (Debian/Ubuntu: ``apt-get install libzstd-dev libblosc-dev``; docs/engine.md
names the others). When something is missing the install goes on with the pure-Python path and says why
in one line. That line is also recorded beside the package (``altarr/_native_build.json``), so that
``altarr --version`` and ``altarr.native_status()`` tell it after a ``pip install`` that hid the build's
output.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

RECORD = "_native_build.json"

#: pkg-config name -> (header, library, what to install)
LIBRARIES = {
    "libzstd": (
        "zstd.h",
        "zstd",
        "libzstd-dev on Debian/Ubuntu, libzstd-devel on Fedora, zstd on Homebrew and conda-forge",
    ),
    "blosc": (
        "blosc.h",
        "blosc",
        "libblosc-dev on Debian/Ubuntu, blosc-devel on Fedora, c-blosc on Homebrew, blosc on conda-forge",
    ),
}

#: what the headers must say (the checks of ``_native.c``, probed one by one to name the one that fails)
VERSIONS = {
    "zstd.h": ("ZSTD_VERSION_NUMBER < 10400", "libzstd is older than 1.4.0"),
    "blosc.h": ("BLOSC_VERSION_MAJOR != 1 || BLOSC_VERSION_MINOR < 16", "c-blosc is not 1.x (>= 1.16)"),
}


class NotBuilt(Exception):
    """What keeps the kernel from being built, in one line."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The compiler's complaints about a probe that fails on purpose stay off the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _pkg_config(name: str) -> tuple[list[str], list[str], list[str]]:
    """Include dirs, library dirs and libraries of ``name`` from pkg-config (empty when it does not know)."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return [], [], []
    out = subprocess.run([exe, "--cflags", "--libs", name], capture_output=True, text=True)
    if out.returncode != 0:
        return [], [], []
    flags = out.stdout.split()
    return (
        [f[2:] for f in flags if f.startswith("-I")],
        [f[2:] for f in flags if f.startswith("-L")],
        [f[2:] for f in flags if f.startswith("-l")],
    )


class OptionalBuildExt(build_ext):
    """``build_ext`` that finds the codec libraries first, turns a failed build of the kernel into one
    line on stderr, and records the outcome (see the module docstring)."""

    def run(self) -> None:
        self._reason: str | None = None
        try:
            super().run()
        except Exception as e:  # no compiler at all (setuptools' errors are Exception subclasses)
            self._skip(e)
        self._record()

    def build_extension(self, ext: Extension) -> None:
        try:
            self._find_libraries(ext)
            super().build_extension(ext)
        except Exception as e:  # a missing library, a compile or link error
            self._skip(e)

    def _find_libraries(self, ext: Extension) -> None:
        """Add each library's flags to ``ext``, and probe its header, version and library: the first that
        is missing raises :class:`NotBuilt` naming it."""
        if not self._compiles("int probe;\n", ext):
            raise NotBuilt(f"no working C compiler ({' '.join(self.compiler.compiler_so[:1])} fails)")
        for name, (header, lib, install) in LIBRARIES.items():
            inc, libdirs, libs = _pkg_config(name)
            ext.include_dirs += [d for d in inc if d not in ext.include_dirs]
            ext.library_dirs += [d for d in libdirs if d not in ext.library_dirs]
            ext.libraries += [x for x in libs or [lib] if x not in ext.libraries]
            if not self._compiles(f"#include <{header}>\n", ext):
                raise NotBuilt(f"{header} not found (install {install})")
            check, message = VERSIONS[header]
            if not self._compiles(f"#include <{header}>\n#if {check}\n#error too old\n#endif\n", ext):
                raise NotBuilt(message)
            if not self._links(f"#include <{header}>\nint main(void) {{ return 0; }}\n", ext, libs or [lib]):
                raise NotBuilt(f"the {lib} library was not found to link against (install {install})")

    def _compiles(self, code: str, ext: Extension) -> bool:
        with tempfile.TemporaryDirectory() as d, _quiet():
            path = os.path.join(d, "probe.c")
            with open(path, "w") as f:
                f.write(code)
            try:
                self.compiler.compile([path], output_dir=d, include_dirs=ext.include_dirs)
            except Exception:  # CompileError, or no compiler to run
                return False
        return True

    def _links(self, code: str, ext: Extension, libs: list[str]) -> bool:
        with tempfile.TemporaryDirectory() as d, _quiet():
            path = os.path.join(d, "probe.c")
            with open(path, "w") as f:
                f.write(code)
            try:
                objects = self.compiler.compile([path], output_dir=d, include_dirs=ext.include_dirs)
                self.compiler.link_executable(
                    objects, "probe", output_dir=d, libraries=libs, library_dirs=ext.library_dirs
                )
            except Exception:  # CompileError, LinkError
                return False
        return True

    def _skip(self, e: BaseException) -> None:
        text = str(e).strip()
        self._reason = text.splitlines()[-1] if text else type(e).__name__
        print(
            f"altarr: native kernel not built ({self._reason}); the pure-Python path is used instead",
            file=sys.stderr,
        )

    def _record(self) -> None:
        """Write the outcome beside the package: where the build puts it, and into the source tree
        too for in-place and editable builds."""
        record = json.dumps({"built": self._reason is None, "reason": self._reason or ""}) + "\n"
        dirs = [os.path.join(self.build_lib, "altarr")]
        if self.inplace:
            dirs.append(self.get_finalized_command("build_py").get_package_dir("altarr"))
        for d in dirs:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, RECORD), "w") as f:
                f.write(record)


setup(
    ext_modules=[
        Extension(
            "altarr._native",
            sources=["src/altarr/_native.c"],
            extra_compile_args=["-std=c11", "-D_GNU_SOURCE"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
