"""Smoke test of the engine benchmark script: a tiny run of altarr alone must finish and print its table.

No timing is asserted; the script itself checks every result it times against the source data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import altarr

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_engine.py"


def test_bench_engine_quick_altarr(tmp_path: Path) -> None:
    out_json = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--libs",
            "altarr",
            "--scenarios",
            "write,read",
            "--size",
            "64",
            "--dir",
            str(tmp_path / "work"),
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = [ln for ln in lines if ln.startswith("| scenario ")]
    assert len(header) >= 2  # one table per codec (zstd and blosc)
    assert "altarr" in header[0] and "floor" in header[0] and "altarr/floor" in header[0]
    assert any(ln.startswith("| 1 write whole array") for ln in lines)
    assert any(ln.startswith("| 2 read whole array") for ln in lines)
    report = json.loads(out_json.read_text())
    assert set(report["codecs"]) == {"zstd", "blosc"}
    for codec in ("zstd", "blosc"):
        res = report["codecs"][codec]["results"]
        assert set(res) == {"write", "read"}
        assert res["read"]["altarr"]["median_s"] > 0
        assert res["read"]["altarr"]["store_stats_per_rep"]["reads"] >= 1


def test_bench_pyramid_runs_both_libraries_and_compares_their_levels(tmp_path: Path) -> None:
    script = SCRIPT.parent / "bench_pyramid.py"
    out_json = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(script), "--shape", "32,64,96", "--repeats", "1", "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| altarr |" in proc.stdout and "| ngff-zarr |" in proc.stdout
    report = json.loads(out_json.read_text())
    assert report["shape"] == [32, 64, 96] and report["levels"] == 5
    for lib in ("altarr", "ngff-zarr"):
        assert report["results"][lib]["median_s"] > 0 and report["results"][lib]["stored_bytes"] > 0


def test_bench_trees_pairs_two_arms(tmp_path: Path) -> None:
    """Two arms of one tree (the native kernel on and off), one round: the table pairs the second with
    the first, scenario by scenario; a second call finds the runs done and does not run them again."""
    script = SCRIPT.with_name("bench_trees.py")
    src = str(SCRIPT.parents[1] / "src")
    args = [sys.executable, str(script), "--arm", f"on={src}", "--arm", f"off={src}:ALTARR_NATIVE=0"]
    args += ["--rounds", "1", "--out", str(tmp_path / "ab"), "--", "--quick", "--libs", "altarr"]
    args += ["--size", "64", "--codec", "zstd", "--scenarios", "write,read", "--dir", str(tmp_path / "work")]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| write |") or ln.startswith("| read |")]
    assert len(rows) == 2 and all(row.count("[") == 1 for row in rows), proc.stdout
    runs = {p.name: json.loads(p.read_text()) for p in (tmp_path / "ab").iterdir()}
    assert set(runs) == {"on-0.json", "off-0.json"}
    assert runs["on-0.json"]["machine"]["altarr_native_kernel"] == str(altarr.native_status())
    assert runs["off-0.json"]["machine"]["altarr_native_kernel"].endswith("switched off by ALTARR_NATIVE=0")
    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "round 0" not in again.stderr and again.stdout == proc.stdout


def test_bench_touch_pairs_altarr_with_and_without_page_touching() -> None:
    """A tiny run over the HTTP server: both altarr lines read, and the paired ratio is printed."""
    script = SCRIPT.with_name("bench_touch.py")
    proc = subprocess.run(
        [sys.executable, str(script), "--quick", "--servers", "http", "--scenarios", "whole,slab"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| http | 5 ms |")]
    assert sorted(r.split("|")[3].strip() for r in rows) == ["slab", "whole"], proc.stdout
    assert all(r.count("[") == 1 for r in rows)
