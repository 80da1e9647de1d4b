"""A 2**31-element chunk under a 4 GiB address-space limit (issue 34: a bare ``MemoryError``): every read
and write path raises ``MaterializeError`` (an altarr error, and a ``MemoryError``) naming the chunk,
refused before its buffer is allocated where the engine allocates it, and never NumPy's bare error.

Each format runs in a child process with ``RLIMIT_AS`` at 4 GiB and a real stored chunk: one zstd frame
announcing 2 GiB of zeros (64 KB on disk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_CHILD = r"""
import io, json, os, resource, struct, sys
import numpy as np, zstandard
import altarr as aa

fmt, path = sys.argv[1], sys.argv[2]
ds = aa.create_dataset(path, shape=(2**31 + 5, 2), chunks=(2**31, 1), dtype="u1", format=fmt, compressor="zstd")
frame = io.BytesIO()
with zstandard.ZstdCompressor().stream_writer(frame, size=2**31, closefd=False) as w:
    zeros = bytes(64 << 20)
    for _ in range(32):
        w.write(zeros)
data = frame.getvalue()
if fmt == "n5":
    data = struct.pack(">HHII", 0, 2, 1, 2**31) + data
key = {"zarr3": "c/0/0", "zarr2": "0.0", "n5": "0/0"}[fmt]
os.makedirs(os.path.dirname(os.path.join(path, key)), exist_ok=True)
with open(os.path.join(path, key), "wb") as f:
    f.write(data)
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
calls = {
    "write": lambda: ds.__setitem__((slice(0, 10), 1), 1),
    "read_chunks": lambda: ds.read_chunks([(0, 0)]),
    "region": lambda: ds[0:10, 0],
    "visit": lambda: ds.visit_chunks([(0, 0)], lambda i, a: None),
    "lazy_slice": lambda: np.asarray(aa.open(path)[0:10, 0]),
    "lazy_sum": lambda: aa.open(path).sum(),
}
got = {}
for name, call in calls.items():
    try:
        call()
        got[name] = ["ok", ""]
    except BaseException as e:
        got[name] = [f"{type(e).__module__}.{type(e).__name__}", str(e)]
print(json.dumps(got))
"""


#: The calls that need one 2 GiB buffer and nothing beside it: under 4 GiB they may fit (how much address
#: space the process has used already decides), and then they succeed, or their allocation fails and
#: becomes a MaterializeError naming the chunk; never a bare MemoryError.
MAY_FIT = ("lazy_slice", "visit")


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_a_2_31_chunk_under_a_4_gib_limit(tmp_path, fmt):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, fmt, str(tmp_path / "a")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for name, (kind, message) in got.items():
        if name in MAY_FIT and kind == "ok":
            continue
        assert kind == "altarr.errors.MaterializeError", (name, kind, message)
        assert "(2147483648, 1)" in message and "chunk=(0, " in message, (name, message)
    # where the engine allocates the chunk and more beside it, it refuses before allocating
    for name in ("read_chunks", "region", "write"):
        assert "address space this process has left" in got[name][1], (name, got[name])
