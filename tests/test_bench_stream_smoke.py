"""Smoke test of the streaming-write benchmark: a tiny run must finish, print its tables and checks, and
write its JSON; every writer's array is read back and compared with the volume by the script itself.

No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_stream.py"


def test_bench_stream_tiny_run(tmp_path: Path) -> None:
    out_json = tmp_path / "out.json"
    writers = "altarr-buffered,altarr,zarr-python,tensorstore-txn"
    args = ["--size", "32", "--tile", "16", "--repeats", "1", "--codec", "blosc", "--writers", writers]
    args += ["--max-interference", "64"]  # a smoke run on a busy machine is not re-run
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--dir", str(tmp_path / "work"), "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "### planes, blosc" in proc.stdout and "### tiles, blosc" in proc.stdout
    assert "altarr buffered / tensorstore txn time" in proc.stdout
    report = json.loads(out_json.read_text())
    for run in ("planes-blosc", "tiles-blosc"):
        lines = report["runs"][run]
        assert set(lines) == set(writers.split(","))
        buffered = lines["altarr-buffered"]
        assert buffered["altarr_store_stats"]["reads"] == 0  # every shard written once, complete
        assert buffered["write_amplification"] <= 1.05 < lines["altarr"]["write_amplification"]
