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
