"""Whether the native kernel is active and, if not, why (``altarr.native_status()``, ``altarr --version``):
active, switched off, and not built, each seen in a process of its own; and the build's one-line reason,
recorded where ``pip install`` hid it.

"Not built" is made for real: ``setup.py`` builds a copy of the package with a compiler that cannot see
``blosc.h`` (or ``zstd.h``), or with no working compiler at all, and that copy is then imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import altarr
from altarr import native

ROOT = Path(__file__).resolve().parents[1]

#: in a child: the status, and a region read and write on whichever path is active
CHILD = """
import json, numpy as np, altarr as aa
from altarr import native
ds = aa.create_dataset("memory://probe", shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), compressor="blosc", checksum=False)
ds[...] = np.arange(64, dtype="u2").reshape(8, 8)
assert (ds[1:7, ::3] == np.arange(64).reshape(8, 8)[1:7, ::3]).all()
s = aa.native_status()
print(json.dumps({"active": s.active, "reason": s.reason, "libraries": s.libraries, "text": str(s),
                  "plan": ds._access.codec.native is not None, "loaded": native.loaded() is not None}))
"""


def _child(src: Path, **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**os.environ, "PYTHONPATH": str(src), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _version(src: Path, **env: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "altarr.cli", "--version"],
        env={**os.environ, "PYTHONPATH": str(src), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_active_here(native_required):
    """Where it is built (CI: `.ci/run` installs libzstd-dev and libblosc-dev), it is active, names the
    libraries it runs on, and the build's record says built."""
    status = altarr.native_status()
    assert status.active and status.reason == ""
    assert status.libraries == {"libzstd": native.ext.ZSTD_VERSION, "c-blosc": native.ext.BLOSC_VERSION}
    assert status.libraries["c-blosc"].startswith("1.")
    assert (
        str(status)
        == f"native kernel active (libzstd {native.ext.ZSTD_VERSION}, c-blosc {native.ext.BLOSC_VERSION})"
    )
    assert json.loads(native.BUILD_RECORD.read_text()) == {"built": True, "reason": ""}
    assert _version(ROOT / "src") == [f"altarr {altarr.__version__}", str(status), status.zstd]


def test_switched_off_at_run_time(native_required):
    with native.use_native(False):
        status = altarr.native_status()
        assert not status.active and native.ext is None
        assert status.reason == "switched off by altarr.native.set_enabled(False)"
        assert status.libraries  # still loaded: the versions are known
    assert altarr.native_status().active


def test_switched_off_by_the_environment(native_required):
    """``ALTARR_NATIVE=0``: the extension is not even loaded; reads and writes take the Python path."""
    got = _child(ROOT / "src", ALTARR_NATIVE="0")
    assert got == {
        "active": False,
        "reason": "switched off by ALTARR_NATIVE=0",
        "libraries": {},
        "text": "native kernel inactive: switched off by ALTARR_NATIVE=0",
        "plan": False,
        "loaded": False,
    }
    assert (
        _version(ROOT / "src", ALTARR_NATIVE="off")[1]
        == "native kernel inactive: switched off by ALTARR_NATIVE=off"
    )


def test_the_route_of_zstd_writes_is_said_and_a_missing_cffi_backend_with_why():
    """python-zstandard's cffi backend where it loads; where it does not (no cffi, PyPy: made here by
    hiding _cffi_backend), its C extension, said with the reason by native_status() and altarr --version
    (it was silent), and zstd writes still work."""
    libzstd = ".".join(map(str, native.zstandard.ZSTD_VERSION))
    assert altarr.native_status().zstd == f"zstd writes: python-zstandard's cffi backend, libzstd {libzstd}"
    child = (
        "import sys; sys.modules['_cffi_backend'] = None\n"
        "import numpy as np, altarr as aa\n"
        "ds = aa.create_dataset('memory://z', data=np.arange(64.0), chunks=(16,), compressor='zstd')\n"
        "assert (ds[...] == np.arange(64.0)).all() and aa.native_status().zstd\n"
        "from altarr.cli.app import main; main(['--version'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", child],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2] == (
        "zstd writes: python-zstandard's C extension (its cffi backend does not load: import of "
        f"_cffi_backend halted; None in sys.modules), libzstd {libzstd}"
    )


# --- not built ----------------------------------------------------------------------------------------------
def _copy_tree(tmp_path: Path) -> Path:
    """A copy of the package and its build files, without any built extension or build record."""
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "altarr-build-probe"\nversion = "0"\n')
    shutil.copytree(
        ROOT / "src/altarr",
        tmp_path / "src/altarr",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "_native_build.json", "__pycache__"),
    )
    return tmp_path / "src"


def _compiler_without(tmp_path: Path, hidden: set[str]) -> str:
    """A ``CC`` that sees the system's include directories except the ``hidden`` headers: gcc with
    ``-nostdinc`` and a mirror of each directory made of symbolic links."""
    probe = subprocess.run(["gcc", "-xc", "-E", "-v", "/dev/null"], capture_output=True, text=True)
    lines = probe.stderr.splitlines()
    start = lines.index("#include <...> search starts here:") + 1
    dirs = [ln.strip() for ln in lines[start : lines.index("End of search list.")]]
    flags = []
    for i, d in enumerate(dirs):
        mirror = tmp_path / f"include{i}"
        mirror.mkdir()
        for entry in os.listdir(d):
            if entry not in hidden:
                (mirror / entry).symlink_to(os.path.join(d, entry))
        flags += ["-isystem", str(mirror)]
    return " ".join(["gcc", "-nostdinc", *flags])


def _build(tmp_path: Path, pkg_config: bool = False, **env: str) -> subprocess.CompletedProcess:
    if not pkg_config:  # pkg-config knows no library: the compiler's own paths are searched
        env["PKG_CONFIG_LIBDIR"] = str(tmp_path / "no-pkg-config")
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stderr  # the install goes on
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if "altarr" in ln]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the simulation hides headers from gcc")
@pytest.mark.parametrize(
    ("hidden", "reason"),
    [
        ({"blosc.h", "blosc-export.h"}, "blosc.h not found (install libblosc-dev on Debian/Ubuntu"),
        ({"zstd.h"}, "zstd.h not found (install libzstd-dev on Debian/Ubuntu"),
    ],
)
def test_a_missing_library_is_named_after_the_install(tmp_path, hidden, reason):
    """A machine without a library's development files: the install goes on, says which in one line,
    and records it; the installed package then tells the same line, and reads and writes on the
    pure-Python path."""
    src = _copy_tree(tmp_path)
    line = _one_line(_build(tmp_path, CC=_compiler_without(tmp_path, hidden)))
    assert line.startswith(f"altarr: native kernel not built ({reason}")
    assert line.endswith("; the pure-Python path is used instead")
    assert not list((src / "altarr").glob("_native*.so"))
    record = json.loads((src / "altarr/_native_build.json").read_text())
    assert record["built"] is False and record["reason"].startswith(reason)
    got = _child(src)
    assert got["active"] is False and got["reason"] == f"not built: {record['reason']}" and not got["plan"]
    assert _version(src)[1] == f"native kernel inactive: not built: {record['reason']}"


def test_no_compiler_falls_back_in_one_line(tmp_path):
    src = _copy_tree(tmp_path)
    line = _one_line(_build(tmp_path, CC="/bin/false", LDSHARED="/bin/false"))
    assert line.startswith("altarr: native kernel not built (no working C compiler (/bin/false fails))")
    assert _child(src)["reason"] == "not built: no working C compiler (/bin/false fails)"


def test_a_tree_never_built_says_so(tmp_path):
    src = _copy_tree(tmp_path)
    got = _child(src)
    assert got["active"] is False and got["reason"].startswith(
        "not built: no build record beside the package"
    )


def test_an_extension_that_does_not_load_is_told_apart(tmp_path):
    """Built, then unloadable (a library removed since, a broken file): the import error is the reason."""
    src = _copy_tree(tmp_path)
    suffix = ".cpython-{}{}-{}.so".format(*sys.version_info[:2], sys.implementation._multiarch)
    (src / "altarr" / f"_native{suffix}").write_bytes(b"not an ELF file")
    (src / "altarr/_native_build.json").write_text('{"built": true, "reason": ""}\n')
    got = _child(src)
    assert got["active"] is False and got["reason"].startswith("built, but it does not load: ")
    assert len(got["reason"]) > len("built, but it does not load: ")


@pytest.mark.parametrize("pkg_config", [True, False])
def test_the_build_records_success(tmp_path, native_required, pkg_config):
    """Where the libraries are found (by pkg-config, or in the compiler's own paths), the build records
    it; the copy it built is active."""
    src = _copy_tree(tmp_path)
    out = _build(tmp_path, pkg_config)
    assert out.returncode == 0 and "altarr" not in out.stderr, out.stderr
    assert json.loads((src / "altarr/_native_build.json").read_text()) == {"built": True, "reason": ""}
    got = _child(src)
    assert got["active"] and got["plan"] and got["text"] == str(altarr.native_status())
