"""``altarr copy`` run for real: every pair of formats (read back by zarr-python and tensorstore),
re-chunking, codecs, groups with attributes, and a copy interrupted with SIGINT then resumed to the same
bytes as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from _cli_support import altarr_command, run_cli, tree_bytes

SOURCES = {
    "zarr3": {"format": "zarr3", "chunks": (4, 6, 5), "shards": (8, 12, 10)},
    "zarr2": {"format": "zarr2", "chunks": (4, 6, 5), "shards": None},
    "n5": {"format": "n5", "chunks": (4, 6, 5), "shards": None},
}


def _values() -> np.ndarray:
    return (np.arange(13 * 17 * 19, dtype="i4") * 7 - 5000).reshape(13, 17, 19)


def _peer_read(path, fmt: str) -> np.ndarray:
    """The copy as another library reads it: zarr-python for Zarr, tensorstore for N5 (whose shapes are
    in N5's reversed order)."""
    if fmt == "n5":
        t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}).result()
        return np.asarray(t.read().result()).transpose()
    return zarr.open_array(str(path), mode="r")[...]


@pytest.mark.parametrize("dst_fmt", sorted(SOURCES))
@pytest.mark.parametrize("src_fmt", sorted(SOURCES))
def test_copy_between_every_pair_of_formats(tmp_path, src_fmt, dst_fmt):
    spec = SOURCES[src_fmt]
    src_path = tmp_path / f"src.{src_fmt}"
    src = aa.create_dataset(
        str(src_path),
        shape=(13, 17, 19),
        dtype="i4",
        chunks=spec["chunks"],
        shards=spec["shards"],
        format=spec["format"],
        attributes={"origin": src_fmt},
    )
    values = _values()
    src[...] = values
    dst_path = tmp_path / f"dst.{dst_fmt}"
    # no Python peer reads sharded N5 (N5 4.x codecs), so the peer-checked N5 copy is unsharded
    extra = ["--shards", "none"] if dst_fmt == "n5" else []
    out = run_cli("copy", src_path, dst_path, "--format", dst_fmt, "--codec", "gzip:6", *extra)
    assert out.returncode == 0, out.stderr
    np.testing.assert_array_equal(_peer_read(dst_path, dst_fmt), values)
    dst = aa.open_dataset(str(dst_path))
    assert dst.format == dst_fmt and dst.attrs["origin"] == src_fmt
    if src_fmt == "zarr3" and dst_fmt == "zarr2":
        assert dst.shards is None and "cannot hold shards" in out.stderr  # dropped, with a note
    elif src_fmt == "zarr3" and dst_fmt == "zarr3":
        assert dst.shards == (8, 12, 10)


def test_copy_into_n5_writes_plain_n5_with_a_note_and_keeps_shards_given(tmp_path):
    """Plain N5 (gzip, what every N5 reader opens: tensorstore and z5py read it back) unless --shards asks
    for sharded N5; a group of a sharded array, as a user's Zarr v3 container is."""
    group = aa.create_group(str(tmp_path / "s.zarr"))
    src = group.create_dataset("vol", shape=(13, 17, 19), dtype="i4", chunks=(4, 6, 5), shards=(8, 12, 10))
    src[...] = _values()
    out = run_cli("copy", tmp_path / "s.zarr", tmp_path / "p.n5", "--format", "n5", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "plain N5 written" in out.stderr and "--shards" in out.stderr
    plain = aa.open_dataset(str(tmp_path / "p.n5"), path="vol")
    assert plain.shards is None and plain.chunks == (4, 6, 5)
    doc = json.loads((tmp_path / "p.n5" / "vol" / "attributes.json").read_text())
    assert doc["compression"] == {"type": "gzip", "useZlib": False, "level": 6}  # Java's gzip default
    spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "p.n5" / "vol")}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), _values().T)  # N5 order
    z5py = pytest.importorskip("z5py")
    np.testing.assert_array_equal(z5py.File(str(tmp_path / "p.n5"), mode="r")["vol"][...], _values())
    shards = ("--shards", "8,12,10")
    out = run_cli("copy", tmp_path / "s.zarr", tmp_path / "s.n5", "--format", "n5", *shards, "--no-progress")
    assert out.returncode == 0, out.stderr
    dst = aa.open_dataset(str(tmp_path / "s.n5"), path="vol")
    assert dst.format == "n5" and dst.shards == (8, 12, 10)
    np.testing.assert_array_equal(dst[...], _values())
    assert run_cli("verify", tmp_path / "s.n5").returncode == 0


@pytest.mark.parametrize(
    "codec, check",
    [
        ("zstd:5", lambda c: c["name"] == "zstd" and c["configuration"]["level"] == 5),
        ("blosc:lz4:5", lambda c: c["name"] == "blosc" and c["configuration"]["cname"] == "lz4"),
        ("gzip:6", lambda c: c["name"] == "gzip" and c["configuration"]["level"] == 6),
    ],
)
def test_copy_rechunks_reshards_and_sets_the_codec(tmp_path, codec, check):
    src = aa.create_dataset(
        str(tmp_path / "a.n5"), shape=(13, 17, 19), dtype="i4", chunks=(5, 5, 5), format="n5"
    )
    values = _values()
    src[...] = values
    out = run_cli(
        "copy", tmp_path / "a.n5", tmp_path / "b.zarr", "--format", "zarr3",
        "--chunks", "4,4,4", "--shards", "8,8,8", "--codec", codec,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    meta = json.loads((tmp_path / "b.zarr" / "zarr.json").read_text())
    sharding = meta["codecs"][0]
    assert sharding["configuration"]["chunk_shape"] == [4, 4, 4] and meta["chunk_grid"]["configuration"][
        "chunk_shape"
    ] == [8, 8, 8]
    assert check(sharding["configuration"]["codecs"][1])  # after bytes (a crc32c may follow: checksum)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b.zarr"), mode="r")[...], values)
    # and back out without shards
    out = run_cli("copy", tmp_path / "b.zarr", tmp_path / "c.zarr", "--shards", "none")
    assert out.returncode == 0, out.stderr
    assert aa.open_dataset(str(tmp_path / "c.zarr")).shards is None
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "c.zarr"), mode="r")[...], values)


def test_copy_a_group_recursively_with_attributes(tmp_path):
    g = aa.create_group(str(tmp_path / "g.zarr"), attributes={"title": "experiment"})
    a = g.create_dataset("a", shape=(10, 10), dtype="f4", chunks=(5, 5), shards=(10, 10))
    a[...] = np.arange(100, dtype="f4").reshape(10, 10)
    a.attrs["units"] = "m"
    sub = g.create_group("sub", {"level": 2})
    b = sub.create_dataset("b", shape=(7,), dtype="u1", chunks=(3,))
    b[...] = np.arange(7)
    out = run_cli("copy", tmp_path / "g.zarr", tmp_path / "g.n5", "--format", "n5", "--workers", "2")
    assert out.returncode == 0, out.stderr
    root = aa.open_group(str(tmp_path / "g.n5"))
    assert root.format == "n5" and root.attrs["title"] == "experiment"
    assert root["sub"].attrs["level"] == 2 and root["a"].attrs["units"] == "m"
    np.testing.assert_array_equal(root["a"][...], a[...])
    np.testing.assert_array_equal(root["sub/b"][...], b[...])
    np.testing.assert_array_equal(
        np.asarray(
            ts.open(
                {"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "g.n5" / "sub" / "b")}}
            )
            .result()
            .read()
            .result()
        ),
        np.arange(7),
    )


def test_copy_interrupted_by_sigint_resumes_to_the_same_bytes(tmp_path):
    src_path = tmp_path / "big.zarr"
    src = aa.create_dataset(
        str(src_path),
        shape=(64, 64, 256),
        dtype="u2",
        chunks=(8, 8, 32),
        shards=(8, 16, 64),
        compressor="gzip",
    )
    rng = np.random.default_rng(0)
    src[...] = rng.integers(0, 5000, src.shape, dtype="u2")
    args = ["--format", "n5", "--shards", "8,16,64", "--codec", "gzip:6", "--workers", "1"]

    reference = tmp_path / "reference.n5"
    assert run_cli("copy", src_path, reference, *args).returncode == 0

    dst = tmp_path / "resumed.n5"
    journal = dst / ".altarr-copy.json"
    proc = subprocess.Popen(
        [*altarr_command(), "copy", str(src_path), str(dst), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists():
            try:
                done = json.loads(journal.read_text())["done"]
            except (ValueError, OSError):
                done = []
            if done:
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the copy finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "--resume" in err
    state = json.loads(journal.read_text())
    assert 0 < len(state["done"]) < state["units"]  # really interrupted half way
    assert tree_bytes(dst) != tree_bytes(reference)

    out = run_cli("copy", src_path, dst, *args, "--resume")
    assert out.returncode == 0, out.stderr
    assert f"{len(state['done'])} already there" in out.stdout
    assert not journal.exists()
    assert tree_bytes(dst) == tree_bytes(reference)
    # resuming a finished copy changes nothing
    again = run_cli("copy", src_path, dst, *args, "--resume")
    assert again.returncode == 0 and tree_bytes(dst) == tree_bytes(reference)
    # and a resume that asks for another layout refuses, in one line
    other = run_cli("copy", src_path, dst, "--format", "n5", "--chunks", "4,4,4", "--resume")
    assert other.returncode != 0 and len(other.stderr.strip().splitlines()) == 1
    assert os.path.exists(dst / "attributes.json")


def _peak_rss_mb(*args: str) -> float:
    """Peak resident memory (MB) of one ``altarr`` run, measured by a fresh parent that has no other child."""
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "assert r.returncode == 0, r.stderr\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *altarr_command(), *args], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


def test_copy_memory_is_bounded_by_the_shards_in_flight(tmp_path):
    rng = np.random.default_rng(1)
    for name, shape in [("small", (64, 64, 128)), ("big", (256, 256, 256))]:
        ds = aa.create_dataset(
            str(tmp_path / f"{name}.zarr"), shape=shape, dtype="u2", chunks=(32, 32, 64), shards=(64, 64, 128)
        )
        ds[...] = rng.integers(0, 4000, shape, dtype="u2")
    args = ["--format", "n5", "--chunks", "32,32,32", "--workers", "2", "--no-progress"]
    small = _peak_rss_mb("copy", str(tmp_path / "small.zarr"), str(tmp_path / "small.n5"), *args)
    big = _peak_rss_mb("copy", str(tmp_path / "big.zarr"), str(tmp_path / "big.n5"), *args)
    # the big array holds 32 MiB of values in 32 shards of 1 MiB; two workers hold ~2 shards at a time
    assert big - small < 16, (small, big)
    np.testing.assert_array_equal(aa.open_dataset(str(tmp_path / "big.n5"))[...], ds[...])
