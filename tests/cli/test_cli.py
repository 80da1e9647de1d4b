"""The altarr console script, run for real in a subprocess: demo, info, tree, verify, show, and one-line
errors with a non-zero exit for every bad argument."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from _cli_support import run_cli


@pytest.fixture
def sharded(tmp_path) -> tuple[Path, np.ndarray]:
    path = tmp_path / "s.zarr"
    ds = aa.create_dataset(
        str(path),
        shape=(12, 16, 20),
        dtype="u2",
        chunks=(4, 4, 5),
        shards=(8, 8, 10),
        dimension_names=["z", "y", "x"],
        attributes={"units": "counts"},
    )
    values = (np.arange(12 * 16 * 20) % 1000).astype("u2").reshape(12, 16, 20)
    ds[...] = values
    return path, values


def test_demo_runs_verifies_what_it_reads_and_ends_with_the_next_steps(tmp_path):
    out = run_cli("demo", "--dir", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no warning printed above (or below) the demo
    assert "MISMATCH" not in out.stdout and out.stdout.count("equal") == 3
    assert "demo.n5: n5" in out.stdout and "demo-v2.zarr: zarr2" in out.stdout
    assert aa.open_dataset(str(tmp_path / "demo.n5")).shards is None  # plain N5, what N5 readers open
    steps = out.stdout[out.stdout.index("Next steps") :]
    for step in ("aa.open(", 'engine="altarr"', "altarr info"):
        assert step in steps, step
    assert (tmp_path / "demo.zarr" / "zarr.json").exists()
    png = out.stdout.strip().splitlines()[-1]  # the demo ends with the path of the PNG it wrote
    assert png.endswith(".png") and Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_info_json_describes_everything(sharded):
    path, values = sharded
    out = run_cli("info", path, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["format"] == "zarr3" and doc["shape"] == [12, 16, 20] and doc["dtype"] == "uint16"
    assert doc["chunks"] == [4, 4, 5] and doc["shards"] == [8, 8, 10]
    assert doc["dimension_names"] == ["z", "y", "x"]
    assert doc["attributes"] == {"units": "counts"}
    assert doc["fill_value"] == 0
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    on_disk = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    assert doc["stored_bytes"] == on_disk
    assert doc["compression_ratio"] == round(values.nbytes / on_disk, 3)
    table = run_cli("info", path)
    assert table.returncode == 0
    for text in ("zarr3", "dimension names", '"z", "y", "x"', "compression ratio", "fill value"):
        assert text in table.stdout


def test_info_shows_n5_compression_and_groups(tmp_path):
    g = aa.create_group(str(tmp_path / "c.n5"), format="n5", attributes={"owner": "lab"})
    g.create_dataset("raw", shape=(6, 5), dtype="f4", chunks=(3, 3), compressor="gzip")
    out = run_cli("info", tmp_path / "c.n5" / "raw")
    assert out.returncode == 0 and "gzip" in out.stdout
    doc = json.loads(run_cli("info", tmp_path / "c.n5", "--json").stdout)
    assert doc["kind"] == "group" and doc["attributes"]["owner"] == "lab"
    assert doc["children"] == [{"name": "raw", "kind": "array"}]


def test_tree_lists_the_hierarchy(tmp_path):
    g = aa.create_group(str(tmp_path / "t.zarr"))
    g.create_dataset("a", shape=(4, 4), dtype="i2", chunks=(2, 2))
    g.create_group("sub").create_dataset("b", shape=(9,), dtype="f8", chunks=(3,), shards=(9,))
    out = run_cli("tree", tmp_path / "t.zarr")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("a (4, 4) int16 zarr3" in line for line in lines)
    assert any("sub/ (group, zarr3)" in line for line in lines)
    assert any("b (9,) float64 zarr3" in line and "shards (9,)" in line for line in lines)


def test_verify_passes_a_clean_dataset_and_finds_a_corrupted_shard(sharded):
    path, _ = sharded
    clean = run_cli("verify", path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "OK" in clean.stdout
    shard = path / "c" / "1" / "0" / "1"
    raw = bytearray(shard.read_bytes())
    raw[10] ^= 0xFF  # inside the first chunk's compressed bytes
    shard.write_bytes(bytes(raw))
    bad = run_cli("verify", path)
    assert bad.returncode == 1
    assert "c/1/0/1" in bad.stdout
    doc = json.loads(run_cli("verify", path, "--json").stdout)
    assert doc["ok"] is False and any(p["key"].endswith("c/1/0/1") for p in doc["problems"])


def test_show_writes_a_png_of_the_slice(sharded, tmp_path):
    from matplotlib import colormaps
    from matplotlib.colors import Normalize
    from PIL import Image

    path, values = sharded
    png = tmp_path / "slice.png"
    out = run_cli("show", path, "--index", "10,:,:", "-o", png)
    assert out.returncode == 0, out.stderr
    opened = Image.open(png)
    left, top, scale = (int(v) for v in opened.info["altarr-image"].split(","))
    image = np.asarray(opened.convert("RGB"))
    plane = values[10]
    c = scale // 2  # the centre of each value's pixels (the axes' frame is drawn over the edge)
    drawn = image[
        top + c : top + plane.shape[0] * scale : scale, left + c : left + plane.shape[1] * scale : scale
    ]
    assert drawn.shape[:2] == plane.shape and scale >= 1  # one pixel per value, row 0 at the top
    expected = colormaps["viridis"](Normalize(plane.min(), plane.max())(plane), bytes=True)[..., :3]
    assert np.abs(drawn.astype(int) - expected.astype(int)).max() <= 1
    assert image.shape[1] > left + plane.shape[1] * scale  # room for the colour bar on the right


def test_show_limits_percentiles_and_a_latitude_drawn_north_up(tmp_path):
    """--vmin/--vmax and --percentile set the colour limits; a latitude axis (xarray's coordinates beside
    the array) increasing from -89 is drawn with its first row at the bottom, --origin upper overrides."""
    from PIL import Image

    g = aa.create_group(str(tmp_path / "c.zarr"), format="zarr2")
    lat = np.linspace(-89, 89, 30)
    field = np.repeat(lat[:, None], 40, axis=1).astype("f4")
    g.create_dataset("t", data=field, chunks=(15, 20), attributes={"_ARRAY_DIMENSIONS": ["lat", "lon"]})
    g.create_dataset("lat", data=lat, chunks=(30,), attributes={"_ARRAY_DIMENSIONS": ["lat"]})

    def first_row_colour(*options: str, row: int = 0) -> np.ndarray:
        png = tmp_path / "s.png"
        out = run_cli("show", tmp_path / "c.zarr" / "t", "-o", png, "--cmap", "gray", *options)
        assert out.returncode == 0, out.stderr
        opened = Image.open(png)
        left, top, scale = (int(v) for v in opened.info["altarr-image"].split(","))
        return np.asarray(opened.convert("L"))[top + row * scale + scale // 2, left + scale // 2]

    assert first_row_colour() > 250  # the top row is the northernmost (89, white in gray)
    assert first_row_colour("--origin", "upper") < 5  # row 0 (-89) at the top
    assert first_row_colour("--vmax", "0") > 250 and first_row_colour("--vmin", "95", "--vmax", "100") < 5
    assert 100 < first_row_colour(row=15) < 160  # lat -3 of -89..89
    assert first_row_colour("--percentile", "0,50", row=15) > 240  # -3 of -89..0 (the median)
    bad = run_cli("show", tmp_path / "c.zarr" / "t", "-o", tmp_path / "x.png", "--percentile", "99,1")
    assert bad.returncode == 2 and "--percentile" in bad.stderr


def _corrupt_metadata(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.zarr"
    bad.mkdir()
    (bad / "zarr.json").write_text("{ not json")
    return bad


BAD = {
    "info missing path": ["info", "{tmp}/nope.zarr"],
    "tree missing path": ["tree", "{tmp}/nope.zarr"],
    "verify missing path": ["verify", "{tmp}/nope.zarr"],
    "show missing path": ["show", "{tmp}/nope.zarr"],
    "copy missing source": ["copy", "{tmp}/nope.zarr", "{tmp}/out.zarr"],
    "info corrupt metadata": ["info", "{bad}"],
    "copy corrupt metadata": ["copy", "{bad}", "{tmp}/out.zarr"],
    "info not a dataset": ["info", "{tmp}"],
    "unknown command": ["frobnicate"],
    "unknown option": ["info", "{src}", "--frob"],
    "missing argument": ["copy", "{src}"],
    "bad format": ["copy", "{src}", "{tmp}/o", "--format", "hdf5"],
    "bad codec": ["copy", "{src}", "{tmp}/o", "--codec", "lzma:3"],
    "bad codec level": ["copy", "{src}", "{tmp}/o", "--codec", "gzip:42"],
    "blosc compressor not built": ["copy", "{src}", "{tmp}/o", "--codec", "blosc:snappy:5"],
    "checksum into zarr2": ["copy", "{src}", "{tmp}/o", "--format", "zarr2", "--checksum"],
    "chunks wrong rank": ["copy", "{src}", "{tmp}/o", "--chunks", "4,4"],
    "chunks not ints": ["copy", "{src}", "{tmp}/o", "--chunks", "a,b,c"],
    "shards not multiples": ["copy", "{src}", "{tmp}/o", "--shards", "5,5,5"],
    "shards into zarr2": ["copy", "{src}", "{tmp}/o", "--format", "zarr2", "--shards", "8,8,10"],
    "workers zero": ["copy", "{src}", "{tmp}/o", "--workers", "0"],
    "workers not int": ["copy", "{src}", "{tmp}/o", "--workers", "many"],
    "resume and overwrite": ["copy", "{src}", "{tmp}/o", "--resume", "--overwrite"],
    "destination exists": ["copy", "{src}", "{src}"],
    "show leaves 3 dims": ["show", "{src}", "--index", ":,:,:"],
    "show leaves 1 dim": ["show", "{src}", "--index", "1,2,:"],
    "show index out of range": ["show", "{src}", "--index", "99,:,:"],
    "show bad index": ["show", "{src}", "--index", "x,:,:"],
    "show too many entries": ["show", "{src}", "--index", "1,:,:,:"],
    "show bad cmap": ["show", "{src}", "--index", "1,:,:", "--cmap", "nope"],
    "show a group": ["show", "{group}"],
}


#: docs/cli.md: 1 when the command ran and failed (a missing path, unreadable data), 2 for bad arguments.
EXIT_1 = {"info missing path", "tree missing path", "verify missing path", "show missing path"}
EXIT_1 |= {"copy missing source", "info corrupt metadata", "copy corrupt metadata", "info not a dataset"}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_print_one_line_and_exit_with_the_documented_code(case, sharded, tmp_path):
    src, _ = sharded
    group = aa.create_group(str(tmp_path / "g.zarr"))
    group.create_dataset("a", shape=(2, 2), dtype="u1", chunks=(1, 1))
    fields = {"tmp": tmp_path, "src": src, "bad": _corrupt_metadata(tmp_path), "group": tmp_path / "g.zarr"}
    args = [a.format(**fields) for a in BAD[case]]
    out = run_cli(*args)
    assert out.returncode == (1 if case in EXIT_1 else 2), (case, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, (case, out.stderr)
    assert lines[0].startswith("error: "), lines
    assert "Traceback" not in out.stderr + out.stdout
    assert not (tmp_path / "o").exists()  # nothing written for a bad argument


def test_debug_shows_the_traceback_and_keeps_the_exit_code(tmp_path):
    out = run_cli("--debug", "info", tmp_path / "nope.zarr")
    assert out.returncode == 1
    assert "Traceback" in out.stderr and "FileNotFoundError" in out.stderr
    out = run_cli("--debug", "copy", tmp_path / "nope.zarr", tmp_path / "o", "--workers", "0")
    assert out.returncode == 2 and "Traceback" in out.stderr and "--workers" in out.stderr


def test_every_command_has_an_example_in_its_help():
    for command in ("info", "tree", "copy", "verify", "show", "demo"):
        out = run_cli(command, "--help")
        assert out.returncode == 0, out.stderr
        assert f"Example: altarr {command}" in out.stdout, command
