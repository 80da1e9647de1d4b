"""Page pre-touching A/B: ``bench_remote.py``'s altarr against the same altarr with its results' pages not
touched while the answers are on the way (``kernel.touch_pages``; ``altarr-notouch`` raises
``kernel.TOUCH_BYTES`` past any result for its own calls), in one process, the two taking turns
repetition by repetition; then the paired ratio notouch / touch per line, with its 95 % bootstrap
interval. Touching stays only while a line's interval lies above 1 (issue 30; benchmarks/README.md).

    python benchmarks/bench_touch.py --latencies 20 --servers http --scenarios whole,slab --repeats 31

Every option is ``bench_remote.py``'s; ``--libs`` defaults to the two altarr lines.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import bench_remote
from altarr.dataset import kernel


class AltarrNoTouch(bench_remote.Altarr):
    """altarr with no page touching during its own calls."""

    def _untouched(self, read: Any, sels: list) -> Any:
        saved = kernel.TOUCH_BYTES
        kernel.TOUCH_BYTES = 1 << 62
        try:
            return read(sels)
        finally:
            kernel.TOUCH_BYTES = saved

    def read(self, sels: list) -> Any:
        return self._untouched(super().read, sels)

    def read_loop(self, sels: list) -> Any:
        return self._untouched(super().read_loop, sels)


def ratios(rows: list[dict[str, Any]]) -> list[str]:
    """One line per server, latency and scenario: both medians and notouch / touch, paired."""
    by: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        by.setdefault((r["server"], r["latency_ms"], r["scenario"]), {})[r["lib"]] = r
    lines = []
    for (server, lat, scen), libs in by.items():
        if "times_ms" not in libs.get("altarr", {}) or "times_ms" not in libs.get("altarr-notouch", {}):
            continue
        on, off = libs["altarr"]["times_ms"], libs["altarr-notouch"]["times_ms"]
        mid, lo, hi = bench_remote.paired_ratio(off, on)
        lines.append(
            f"| {server} | {lat:g} ms | {scen} | {np.median(on):.1f} ms | {np.median(off):.1f} ms "
            f"| {mid:.3f} [{lo:.3f}, {hi:.3f}] | {len(on)} |"
        )
    return lines


def main(argv: list[str]) -> int:
    bench_remote.CLASSES["altarr-notouch"] = AltarrNoTouch
    if not any(a == "--libs" or a.startswith("--libs=") for a in argv):
        argv = [*argv, "--libs", "altarr,altarr-notouch"]
    keep = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--json"), None)
    with tempfile.TemporaryDirectory() as d:
        out = keep or str(Path(d) / "rows.json")
        if keep is None:
            argv = [*argv, "--json", out]
        bench_remote.main(argv)
        rows = json.loads(Path(out).read_text())
    print("\n| server | latency | scenario | touched | not touched | not touched / touched, paired | n |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(ratios(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
