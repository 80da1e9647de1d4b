"""Issue 32's frictions as the user met them, replayed for real: the ``altarr`` console script and the
Python API each run in a subprocess, one test per friction (the Python-only journeys are in
tests/test_user_journeys_api.py; an interrupted copy's exit code 130 and its resume are in
tests/cli/test_cli_copy.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import tensorstore as ts

import altarr as aa
from _cli_support import run_cli


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def _volume(path) -> np.ndarray:
    values = np.arange(32 * 40, dtype="u2").reshape(32, 40)
    aa.create_dataset(str(path), data=values, chunks=(8, 8), shards=(16, 16))  # the defaults otherwise
    return values


def test_a_flipped_byte_makes_verify_fail_naming_the_key(tmp_path):
    _volume(tmp_path / "v.zarr")
    assert run_cli("verify", tmp_path / "v.zarr").returncode == 0
    shard = tmp_path / "v.zarr" / "c" / "1" / "0"
    raw = bytearray(shard.read_bytes())
    raw[40] ^= 0x10  # inside the first chunk's zstd frame
    shard.write_bytes(bytes(raw))
    out = run_cli("verify", tmp_path / "v.zarr")
    assert out.returncode == 1 and "c/1/0" in out.stdout, out.stdout


def test_a_copy_to_n5_opens_in_tensorstore(tmp_path):
    values = _volume(tmp_path / "v.zarr")
    out = run_cli("copy", tmp_path / "v.zarr", tmp_path / "v.n5", "--format", "n5", "--no-progress")
    assert out.returncode == 0 and "plain N5 written" in out.stderr, out.stderr
    spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "v.n5")}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), values.T)  # N5 order


def test_a_bad_codec_is_one_line_exit_2_and_nothing_written(tmp_path):
    _volume(tmp_path / "v.zarr")
    for codec in ("blosc:snappy:5", "lz5", "zstd:99"):
        out = run_cli("copy", tmp_path / "v.zarr", tmp_path / "bad.zarr", "--codec", codec)
        assert out.returncode == 2 and out.stdout == "", out
        assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("error: --codec "), (
            out.stderr
        )
        assert not (tmp_path / "bad.zarr").exists()


def test_a_resume_with_another_codec_is_refused_naming_it(tmp_path):
    _volume(tmp_path / "v.zarr")
    dst = tmp_path / "out.zarr"
    assert run_cli("copy", tmp_path / "v.zarr", dst, "--codec", "zstd:5", "--no-progress").returncode == 0
    (dst / ".altarr-copy.json").write_text(
        json.dumps(
            {
                "altarr_copy": 1,
                "units": 4,
                "done": [0],
                "compressor": [{"name": "zstd", "configuration": {"level": 5, "checksum": False}}],
                "checksum": None,
            }
        )
    )
    out = run_cli("copy", tmp_path / "v.zarr", dst, "--resume", "--codec", "gzip")
    assert out.returncode == 2 and "--codec gzip" in out.stderr, out.stderr
    assert run_cli("copy", tmp_path / "v.zarr", dst, "--resume", "--codec", "zstd:5").returncode == 0


def test_an_8_mib_volume_converts_with_np_asarray(tmp_path):
    out = _python(
        "import numpy as np, altarr as aa\n"
        f"p = {str(tmp_path / 'big.zarr')!r}\n"
        "aa.create_dataset(p, data=np.ones((128, 128, 128), 'f4'), chunks=(64, 64, 64))\n"
        "x = aa.open(p); print(np.asarray(x).nbytes, int((x > 0).sum()))"
    )
    assert out.returncode == 0 and out.stdout.split() == [str(8 << 20), str(128**3)], out.stderr


def test_a_missing_path_is_a_file_not_found_error_and_exit_code_1(tmp_path):
    missing = str(tmp_path / "nope.zarr")
    out = _python(
        f"import altarr as aa\ntry:\n    aa.open_dataset({missing!r})\nexcept FileNotFoundError as e:\n"
        "    print(type(e).__name__)"
    )
    assert out.stdout.strip() == "NodeNotFoundError", out.stderr
    cli = run_cli("info", missing)
    assert cli.returncode == 1 and cli.stderr.strip().splitlines() == [
        f"error: no such file or directory: {missing}"
    ]


def test_each_documented_exit_code(tmp_path):
    """docs/cli.md: 0 done, 1 failed (a missing path, corrupt data), 2 bad arguments; --debug keeps it."""
    _volume(tmp_path / "v.zarr")
    assert run_cli("info", tmp_path / "v.zarr").returncode == 0
    assert run_cli("tree", tmp_path / "nope").returncode == 1
    assert run_cli("copy", tmp_path / "v.zarr", tmp_path / "o.zarr", "--chunks", "64,64,64").returncode == 2
    assert run_cli("info", tmp_path / "v.zarr", "--frob").returncode == 2
    debug = run_cli("--debug", "copy", tmp_path / "v.zarr", tmp_path / "o.zarr", "--codec", "lz5")
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_an_array_altarr_adds_to_a_consolidated_group_is_listed_by_zarr_python_and_xarray(tmp_path):
    """zarr-python writes a consolidated Zarr v2 group; altarr adds an array in its own process; zarr-python
    and ``xr.open_zarr`` in a third list it from the consolidated document."""
    p = str(tmp_path / "c.zarr")
    made = _python(
        "import numpy as np, zarr\n"
        f"g = zarr.open_group({p!r}, mode='w', zarr_format=2)\n"
        "t = g.create_array('t', shape=(4,), dtype='f4', chunks=(2,), dimension_names=None)\n"
        "t.attrs['_ARRAY_DIMENSIONS'] = ['x']; t[:] = np.arange(4)\n"
        f"zarr.consolidate_metadata({p!r})"
    )
    assert made.returncode == 0, made.stderr
    added = _python(
        "import altarr as aa\n"
        f"g = aa.open_group({p!r}, mode='r+')\n"
        "a = g.create_dataset('added', shape=(3,), dtype='i2', chunks=(3,), attributes={'_ARRAY_DIMENSIONS': ['y']})\n"
        "a[...] = [7, 8, 9]"
    )
    assert added.returncode == 0, added.stderr
    seen = _python(
        "import zarr, xarray as xr\n"
        f"print(sorted(zarr.open_consolidated({p!r}, zarr_format=2).keys()))\n"
        f"ds = xr.open_zarr({p!r}, consolidated=True, zarr_format=2)\n"
        "print(sorted(ds.data_vars), ds['added'].values.astype(int).tolist())"
    )
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.splitlines() == ["['added', 't']", "['added', 't'] [7, 8, 9]"], seen.stdout


def test_a_z5py_n5_group_opens_in_xarray_datatree(tmp_path):
    """z5py writes an N5 container whose group has no attributes.json; xarray's datatree opens it through
    altarr's engine in another process."""
    p = str(tmp_path / "z.n5")
    made = _python(
        "import numpy as np, z5py\n"
        f"f = z5py.File({p!r}, mode='w', use_zarr_format=False)\n"
        "d = f.create_group('g').create_dataset('d', shape=(4, 6), chunks=(2, 3), dtype='u2')\n"
        "d[:] = np.arange(24, dtype='u2').reshape(4, 6)"
    )
    assert made.returncode == 0, made.stderr
    assert not (tmp_path / "z.n5" / "g" / "attributes.json").exists()  # as z5py writes a bare group
    seen = _python(
        "import xarray as xr\n"
        f"tree = xr.open_datatree({p!r}, engine='altarr')\n"
        "print(sorted(tree.groups), int(tree['g/d'].values.sum()))"
    )
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.split("]")[0] + "]" == "['/', '/g']" and seen.stdout.split()[-1] == str(sum(range(24)))
