"""The altarr console script: the README's first command runs and checks itself."""

import subprocess
import sys


def test_demo_runs_and_verifies_what_it_reads(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "altarr.cli", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "MISMATCH" not in out.stdout
    assert out.stdout.count("equal") >= 4
    assert "read_chunks: 4 chunks of 1 shard" in out.stdout
    assert (tmp_path / "demo.zarr" / "zarr.json").exists()


def test_copy_can_drop_sharding_and_info_shows_n5_compression(tmp_path):
    import numpy as np

    import altarr as aa

    src = aa.create_dataset(
        str(tmp_path / "s.zarr"),
        shape=(8, 8),
        dtype="u2",
        chunks=(2, 2),
        shards=(4, 4),
        dimension_names=["y", "x"],
    )
    src[...] = np.arange(64).reshape(8, 8)
    for fmt, dst in [("zarr2", "v2.zarr"), ("n5", "d.n5")]:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "altarr.cli",
                "copy",
                str(tmp_path / "s.zarr"),
                str(tmp_path / dst),
                "--format",
                fmt,
                "--shards",
                "none",
                "--compressor",
                "gzip",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        copied = aa.open_dataset(str(tmp_path / dst))
        assert copied.shards is None and copied.format == fmt
        np.testing.assert_array_equal(copied[...], np.arange(64).reshape(8, 8))
    info = subprocess.run(
        [sys.executable, "-m", "altarr.cli", "info", str(tmp_path / "d.n5")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert info.returncode == 0 and "gzip" in info.stdout
