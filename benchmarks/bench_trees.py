"""altarr against altarr: ``bench_engine.py`` on two or more source trees (or settings), each in its own
process, the arms alternating round by round, then altarr's time per scenario paired with the first arm's.

Two versions of altarr cannot share one process (one package name), so this A/B pairs processes: round
``r`` runs every arm once (in reverse order every other round), and the ``i``-th timed repetition of one
arm's run in round ``r`` is paired with the ``i``-th of the first arm's. A drift of the machine's speed
between rounds moves both sides of a pair; the per-pair ratios' median, with a 95 % bootstrap interval,
is the number to read (as in ``bench_remote.py``).

    python benchmarks/bench_trees.py --arm main=/path/to/main/src --arm new=src --rounds 5 \\
        --out /tmp/ab -- --libs altarr --codec both --repeats 3
    python benchmarks/bench_trees.py --arm native=src --arm python=src:ALTARR_NATIVE=0 --out /tmp/ab2 -- ...

An arm is ``NAME=SRC`` (a ``src`` directory put first on ``PYTHONPATH``) with optional environment
variables, ``NAME=SRC:VAR=VALUE,VAR=VALUE``. Each run's JSON stays in ``--out`` (a run already there is
not run again, so an interrupted A/B carries on); the table is printed at the end.

Example:
    >>> paired([1.0, 2.0, 4.0], [1.1, 2.2, 4.4])
    (1.1, 1.1, 1.1)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ENGINE = Path(__file__).resolve().with_name("bench_engine.py")


def paired(base: list[float], other: list[float], draws: int = 2000) -> tuple[float, float, float]:
    """The median of ``other[i] / base[i]`` and its 95 % bootstrap interval (fixed seed)."""
    r = np.asarray(other, dtype=float) / np.asarray(base, dtype=float)
    boot = np.median(np.random.default_rng(0).choice(r, size=(draws, r.size)), axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return round(float(np.median(r)), 6), round(float(lo), 6), round(float(hi), 6)


def parse_arm(spec: str) -> tuple[str, str, dict[str, str]]:
    """``NAME=SRC[:VAR=VALUE,...]`` -> ``(name, src, env)``.

    >>> parse_arm("python=src:ALTARR_NATIVE=0")
    ('python', 'src', {'ALTARR_NATIVE': '0'})
    """
    name, _, rest = spec.partition("=")
    src, _, assignments = rest.partition(":")
    if not name or not src:
        raise argparse.ArgumentTypeError(f"an arm is NAME=SRC[:VAR=VALUE,...], not {spec!r}")
    env = dict(a.split("=", 1) for a in assignments.split(",") if a)
    return name, src, env


def run(arms: list[tuple[str, str, dict[str, str]]], rounds: int, out: Path, engine_args: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for r in range(rounds):
        for name, src, env in arms if r % 2 == 0 else arms[::-1]:
            path = out / f"{name}-{r}.json"
            if path.exists():
                continue
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, str(ENGINE), *engine_args, "--json", str(path)],
                env={**os.environ, "PYTHONPATH": os.path.abspath(src), **env},
                check=True,
                stdout=subprocess.DEVNULL,
            )
            print(f"round {r} {name}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)


def report(names: list[str], rounds: int, out: Path) -> str:
    """Per codec and scenario: each arm's median and its paired ratio to the first arm."""
    runs = {n: [json.loads((out / f"{n}-{r}.json").read_text()) for r in range(rounds)] for n in names}
    base, lines = names[0], []
    for codec in runs[base][0]["codecs"]:
        lines += [
            "",
            f"#### {codec}: altarr's time, and each arm's paired ratio to {base} [95 % interval]",
            "",
        ]
        lines += ["| scenario | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for scen in runs[base][0]["codecs"][codec]["results"]:
            times = {
                n: [t for run in runs[n] for t in run["codecs"][codec]["results"][scen]["altarr"]["times_s"]]
                for n in names
            }
            cells = [f"{np.median(times[base]) * 1e3:.1f} ms"]
            for n in names[1:]:
                mid, lo, hi = paired(times[base], times[n])
                cells.append(f"{np.median(times[n]) * 1e3:.1f} ms, {mid:.3f} [{lo:.3f}, {hi:.3f}]")
            lines.append(f"| {scen} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arm", action="append", type=parse_arm, required=True, help="NAME=SRC[:VAR=VALUE,...]")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, required=True, help="directory of the runs' JSON files")
    p.add_argument("engine_args", nargs=argparse.REMAINDER, help="-- then bench_engine.py's options")
    a = p.parse_args(argv)
    if len(a.arm) < 2:
        p.error("two arms at least")
    engine_args = [x for x in a.engine_args if x != "--"]
    run(a.arm, a.rounds, a.out, engine_args)
    print(f"{a.rounds} rounds of: bench_engine.py {' '.join(engine_args)}")
    print(report([n for n, _, _ in a.arm], a.rounds, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
