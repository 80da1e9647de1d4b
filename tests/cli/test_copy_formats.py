"""Copying datasets between formats with ``altarr.copy_dataset`` and the ``altarr copy`` CLI (issue 3).

Every pair of N5, N5 sharded, Zarr v2, Zarr v3, Zarr v3 sharded and Zarr v3 nested-sharded: the copy holds
every value and the user attributes, a chunk that was never written stays missing (the fill value is 0
in every source, which N5 can represent), each destination object is written once, and the copy is what
the format's peers (zarr-python, tensorstore, z5py) read.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorstore as ts
import z5py
import zarr

import altarr as aa
from _peers import all_chunks, chunk_slices, sample
from altarr.errors import MetadataError, UnsupportedError
from altarr.transfer import copy_units

SHAPE = (9, 11, 13)
CHUNKS = (2, 3, 5)
LAYOUTS = {
    "n5": {"format": "n5", "shards": None},
    "n5-sharded": {"format": "n5", "shards": (4, 6, 10)},
    "zarr2": {"format": "zarr2", "shards": None},
    "zarr3": {"format": "zarr3", "shards": None},
    "zarr3-sharded": {"format": "zarr3", "shards": (4, 6, 10)},
    "zarr3-nested": {"format": "zarr3", "shards": [(4, 6, 5), (8, 12, 10)]},
}
ATTRS = {"title": "copy test", "scale": [0.5, 1.0, 2.0], "meta": {"nested": True, "n": 3}}
#: Written regions; chunk rows 3-4 of the first axis stay unwritten in part.
REGIONS = [(slice(0, 6), slice(0, 11), slice(2, 13)), (slice(6, 9), slice(0, 4), slice(0, 6))]


def make_source(root, layout: str, dtype: str = "float32"):
    spec = LAYOUTS[layout]
    ds = aa.create_dataset(
        str(root),
        path="src",
        shape=SHAPE,
        dtype=dtype,
        chunks=CHUNKS,
        shards=spec["shards"],
        format=spec["format"],
        compressor="gzip",
        attributes=ATTRS,
    )
    values = sample(SHAPE, dtype, 11)
    if np.dtype(dtype).kind == "f":
        values[~np.isfinite(values)] = 1.0
    values[values == 0] = 1  # no chunk may be all fill value, so "stored" is exactly "written"
    expected = np.zeros(SHAPE, dtype)
    for sel in REGIONS:
        ds[sel] = values[sel]
        expected[sel] = values[sel]
    return ds, expected


def stored_pattern(ds) -> list[bool]:
    return [a is not None for a in ds.read_chunks(all_chunks(ds))]


def stored_objects(path) -> list[str]:
    meta = {"zarr.json", ".zarray", ".zattrs", ".zgroup", "attributes.json", ".zmetadata"}
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and p.name not in meta)


def read_with_peer(root, layout: str) -> np.ndarray | None:
    """What the format's peers read from ``root/dst`` (None where no peer reads the layout)."""
    fmt = LAYOUTS[layout]["format"]
    path = root / "dst"
    if fmt == "zarr3":
        got = zarr.open_array(str(path), mode="r")[...]
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result()
        np.testing.assert_array_equal(t.read().result(), got)
        return got
    if fmt == "zarr2":
        return zarr.open_array(str(path), mode="r", zarr_format=2)[...]
    if layout == "n5":
        return z5py.File(str(root), mode="r", use_zarr_format=False)["dst"][...]
    return None  # sharded N5: no peer reads it (see tests/interop/test_n5_datasets.py::test_peers_do_not_misread_sharded_n5)


@pytest.mark.parametrize("dst_layout", list(LAYOUTS))
@pytest.mark.parametrize("src_layout", list(LAYOUTS))
def test_copy_between_formats(tmp_path, src_layout, dst_layout):
    src, expected = make_source(tmp_path, src_layout)
    spec = LAYOUTS[dst_layout]
    dst = aa.copy_dataset(src, str(tmp_path), path="dst", format=spec["format"], shards=spec["shards"])
    writes = dst.store.stats.writes

    back = aa.open_dataset(str(tmp_path), path="dst")
    assert back.format == spec["format"]
    assert back.shape == SHAPE and back.dtype == src.dtype and back.chunks == CHUNKS
    assert back.shard_levels[-1] == (CHUNKS if spec["shards"] is None else back.shards)
    np.testing.assert_array_equal(back[...], expected)
    assert back.attrs.asdict() == ATTRS
    # never-written chunks stay missing, written ones are stored
    assert stored_pattern(back) == stored_pattern(src)
    assert not all(stored_pattern(back))
    for c, a in zip(all_chunks(back), back.read_chunks(all_chunks(back)), strict=True):
        if a is not None:
            np.testing.assert_array_equal(a, expected[chunk_slices(back, c)])
    # every destination object was written once (plus at most two metadata documents)
    # and the resume journal, once at the start and after each unit
    objects = stored_objects(tmp_path / "dst")
    assert objects and writes <= len(objects) + 2 + len(copy_units(back)) + 1
    peer = read_with_peer(tmp_path, dst_layout)
    if peer is not None:
        np.testing.assert_array_equal(peer, expected)


@pytest.mark.parametrize("dst_layout", ["n5", "zarr2", "zarr3-sharded"])
def test_copy_with_other_chunks(tmp_path, dst_layout):
    """A copy that changes the chunk shape goes region by region and still keeps every value."""
    src, expected = make_source(tmp_path, "zarr3-nested", "int32")
    spec = LAYOUTS[dst_layout]
    shards = None if spec["shards"] is None else (6, 8, 8)
    dst = aa.copy_dataset(
        src, str(tmp_path), path="dst", format=spec["format"], chunks=(3, 4, 4), shards=shards
    )
    assert dst.chunks == (3, 4, 4) and dst.shards == shards
    np.testing.assert_array_equal(aa.open_dataset(str(tmp_path), path="dst")[...], expected)
    assert aa.open_dataset(str(tmp_path), path="dst").attrs.asdict() == ATTRS


def test_copy_keeps_a_nan_fill_value_and_missing_chunks(tmp_path):
    src = aa.create_dataset(
        str(tmp_path / "s.zarr"),
        shape=(8, 8),
        dtype="float64",
        chunks=(2, 2),
        shards=(4, 4),
        fill_value=np.nan,
    )
    src[0:3, 0:3] = 1.5
    dst = aa.copy_dataset(src, str(tmp_path / "d.zarr"), format="zarr2", shards=None)
    assert np.isnan(dst.fill_value)
    assert json.loads((tmp_path / "d.zarr" / ".zarray").read_text())["fill_value"] == "NaN"
    assert stored_pattern(dst) == stored_pattern(src) and sum(stored_pattern(dst)) == 4
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "d.zarr"), mode="r")[...], src[...])


def test_copy_refuses_what_the_destination_cannot_hold(tmp_path):
    """N5 has no fill value: the copy fails loudly instead of changing the data, before writing; Zarr v2
    has no sharding: the source's shards are dropped with a note, shards asked for are refused."""
    src = aa.create_dataset(
        str(tmp_path / "s.zarr"), shape=(4, 4), dtype="int16", chunks=(2, 2), fill_value=7
    )
    src[0:2, 0:2] = 1
    with pytest.raises(UnsupportedError, match="fill value"):
        aa.copy_dataset(src, str(tmp_path / "d.n5"), format="n5")
    sharded, _ = make_source(tmp_path / "x", "zarr3-sharded")
    with pytest.warns(UserWarning, match="zarr2 cannot hold shards"):  # shards="same": dropped, with a note
        plain = aa.copy_dataset(sharded, str(tmp_path / "d.zarr"), format="zarr2")
    assert plain.shards is None
    with pytest.raises(MetadataError, match="shards=.* zarr2 cannot hold shards"):
        aa.copy_dataset(sharded, str(tmp_path / "e.zarr"), format="zarr2", shards=(4, 4, 4))
    assert not (tmp_path / "e.zarr").exists()


# --- the command line -------------------------------------------------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "altarr.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_copy_and_info(tmp_path):
    src, expected = make_source(tmp_path / "in.n5", "n5", "uint16")
    out = tmp_path / "out.zarr"
    res = run_cli(
        "copy", str(tmp_path / "in.n5" / "src"), str(out), "--format", "zarr3", "--shards", "4,6,10"
    )
    assert res.returncode == 0, res.stderr
    assert "copied" in res.stdout
    dst = aa.open_dataset(str(out))
    assert dst.format == "zarr3" and dst.shards == (4, 6, 10) and dst.chunks == CHUNKS
    np.testing.assert_array_equal(dst[...], expected)
    assert dst.attrs.asdict() == ATTRS
    assert stored_pattern(dst) == stored_pattern(src)
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], expected)

    info = run_cli("info", str(out))
    assert info.returncode == 0, info.stderr
    text = " ".join(info.stdout.split())  # rich wraps long lines
    assert "zarr3" in text and "shape [9, 11, 13]" in text and "shards [4, 6, 10]" in text
    assert "sharding_indexed" in text and '"title": "copy test"' in text

    # and back to N5, sharded as --shards asks (without it: plain N5); an existing destination needs
    # --overwrite
    back = tmp_path / "back.n5"
    assert run_cli("copy", str(out), str(back), "--format", "n5").returncode == 0
    again = run_cli("copy", str(out), str(back), "--format", "n5")
    assert again.returncode == 2 and "--overwrite" in again.stderr
    res = run_cli(
        "copy",
        str(out),
        str(back),
        "--format",
        "n5",
        "--shards",
        "4,6,10",
        "--compressor",
        "none",
        "--overwrite",
    )
    assert res.returncode == 0, res.stderr
    attrs = json.loads((back / "attributes.json").read_text())
    assert attrs["blockSize"] == [10, 6, 4] and attrs["codecs"][0]["name"] == "sharding_indexed"
    assert attrs["codecs"][0]["configuration"]["codecs"] == [{"name": "n5bytes"}]  # raw: no data codec
    n5 = aa.open_dataset(str(back))
    np.testing.assert_array_equal(n5[...], expected)
    assert n5.attrs.asdict() == ATTRS

    info = run_cli("info", str(tmp_path / "in.n5"))
    text = " ".join(info.stdout.split())
    assert info.returncode == 0 and text.startswith("group ") and "format n5" in text and '"src"' in text


def test_copy_group_checks_every_array_first_then_copies_with_progress_and_workers(tmp_path):
    """aa.copy_group is altarr copy's engine: every array's arguments are checked before anything is
    written, notes are warnings, progress is reported per unit, and a finished copy resumes as done."""
    g = aa.create_group(str(tmp_path / "g.zarr"), attributes={"site": "a"})
    one = g.create_dataset(
        "x/one", data=np.arange(64, dtype="u2").reshape(8, 8), chunks=(4, 4), shards=(8, 8)
    )
    g.create_dataset("two", data=np.ones((3, 5, 7), "f4"), chunks=(2, 2, 2))
    with pytest.raises(MetadataError, match=r"chunks=\(4, 4\)"):  # fits x/one, not the 3-D array
        aa.copy_group(g, str(tmp_path / "bad.n5"), format="n5", chunks=(4, 4))
    assert not (tmp_path / "bad.n5").exists()
    seen: list[int] = []
    with pytest.warns(UserWarning, match="x/one: plain N5 written"):
        out = aa.copy_group(
            g, str(tmp_path / "g.n5"), format="n5", workers=2, progress=lambda n, u: seen.append(n)
        )
    assert sum(seen) == 64 * 2 + 3 * 5 * 7 * 4
    assert out.attrs["site"] == "a" and out["x/one"].shards is None and out["two"].format == "n5"
    np.testing.assert_array_equal(out["x/one"][...], one[...])
    with pytest.warns(UserWarning, match="already complete"):
        again = aa.copy_group(
            str(tmp_path / "g.zarr"), str(tmp_path / "g.n5"), format="n5", shards=None, resume=True
        )
    np.testing.assert_array_equal(again["two"][...], np.ones((3, 5, 7), "f4"))


def test_a_copy_with_workers_leaves_the_pool_size_of_other_threads_alone():
    """A copy runs its units on ``workers`` threads of its own: another thread reading meanwhile keeps the
    pool size set for it (5dd1967 set the process-wide size to the copy's workers until the copy ended,
    so every other read in the process ran at the copy's thread count)."""
    import threading

    from altarr.stores import MemoryStore
    from altarr.transfer import write_units

    values = np.arange(24, dtype="u1").reshape(6, 4)
    dst = aa.create_dataset(MemoryStore(), shape=(6, 4), dtype="u1", chunks=(1, 2), shards=(1, 4))
    together = threading.Barrier(3, timeout=30)  # three units at once: the copy runs on 3 threads
    seen: list[int] = []

    class Source:
        def __getitem__(self, region):
            together.wait()
            other = threading.Thread(target=lambda: seen.append(aa.get_options()["threads"]))
            other.start()
            other.join()
            return values[region]

    with aa.set_options(threads=2):
        write_units(Source(), dst, workers=3)
    assert seen == [2] * 6  # one per unit (6 shards)
    np.testing.assert_array_equal(dst[...], values)


def test_copy_group_resume_checks_every_array_against_the_interrupted_copy_before_writing(tmp_path):
    """aa.copy_group(resume=True) refuses arguments that differ from what the interrupted copy wrote
    before it writes anything, as altarr copy --resume does: it wrote 'a' with the new chunks, then
    met 'b' written with the old ones."""
    from altarr.errors import ExistsError

    g = aa.create_group(str(tmp_path / "g.zarr"))
    g.create_dataset("a", data=np.ones((8, 8), "u1"), chunks=(2, 2))
    g.create_dataset("b", data=np.ones((8, 8), "u1"), chunks=(2, 2))
    dst = tmp_path / "copy.zarr"
    aa.copy_group(g, str(dst), chunks=(2, 2))
    del aa.open_group(str(dst), mode="r+")["a"]  # interrupted before 'a'
    with pytest.raises(ExistsError, match=r"chunks=\(4, 4\) \(the destination has \(2, 2\)\)"):
        aa.copy_group(g, str(dst), chunks=(4, 4), resume=True)
    assert "a" not in aa.open_group(str(dst))
    out = aa.copy_group(g, str(dst), chunks=(2, 2), resume=True)
    assert out["a"].chunks == (2, 2) and int(out["a"][...].sum()) == 64
