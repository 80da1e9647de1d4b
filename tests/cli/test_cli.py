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


def test_demo_runs_and_verifies_what_it_reads(tmp_path):
    out = run_cli("demo", "--dir", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no warning printed above (or below) the demo
    assert "MISMATCH" not in out.stdout
    assert out.stdout.count("equal") >= 6
    assert "read_chunks: 4 chunks of 1 shard" in out.stdout
    assert "zarr3 -> n5" in out.stdout and "zarr3 -> zarr2" in out.stdout
    assert "The plan for" in out.stdout
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
    image = np.asarray(Image.open(png).convert("RGB"))
    plane = values[10]
    scale = image.shape[0] // plane.shape[0]
    assert image.shape[0] == plane.shape[0] * scale and scale >= 1  # the PNG is the slice's rows high
    drawn = image[::scale, : plane.shape[1] * scale : scale]  # one pixel per value
    assert drawn.shape[:2] == plane.shape
    expected = colormaps["viridis"](Normalize(plane.min(), plane.max())(plane), bytes=True)[..., :3]
    assert np.abs(drawn.astype(int) - expected.astype(int)).max() <= 1
    assert image.shape[1] > plane.shape[1] * scale  # room for the colour bar on the right


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


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_print_one_line_and_exit_non_zero(case, sharded, tmp_path):
    src, _ = sharded
    group = aa.create_group(str(tmp_path / "g.zarr"))
    group.create_dataset("a", shape=(2, 2), dtype="u1", chunks=(1, 1))
    fields = {"tmp": tmp_path, "src": src, "bad": _corrupt_metadata(tmp_path), "group": tmp_path / "g.zarr"}
    args = [a.format(**fields) for a in BAD[case]]
    out = run_cli(*args)
    assert out.returncode != 0, (case, out.stdout)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, (case, out.stderr)
    assert lines[0].startswith("error: "), lines
    assert "Traceback" not in out.stderr + out.stdout
    assert not (tmp_path / "o").exists()  # nothing written for a bad argument


def test_debug_shows_the_traceback(tmp_path):
    out = run_cli("--debug", "info", tmp_path / "nope.zarr")
    assert out.returncode != 0
    assert "Traceback" in out.stderr and "FileNotFoundError" in out.stderr


def test_every_command_has_an_example_in_its_help():
    for command in ("info", "tree", "copy", "verify", "show", "demo"):
        out = run_cli(command, "--help")
        assert out.returncode == 0, out.stderr
        assert f"Example: altarr {command}" in out.stdout, command
