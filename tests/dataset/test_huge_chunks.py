"""A 2**31-element chunk under an address-space limit (issue 34: a bare ``MemoryError``): every read and
write path raises ``MaterializeError`` (an altarr error, and a ``MemoryError``) naming the chunk, and
never NumPy's bare error.

Each format runs in a child process with a real stored chunk (one zstd frame announcing 2 GiB of zeros,
64 KB on disk), first with ``RLIMIT_AS`` 1.5 GiB above what the process has mapped, where every call must
refuse before allocating, then at 4 GiB, where a call may fit (the process's earlier allocations decide,
garbage not yet collected among them) or must fail as a ``MaterializeError`` naming the chunk."""

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
with open("/proc/self/statm") as f:
    mapped = int(f.read().split()[0]) * resource.getpagesize()
calls = {
    "write": lambda: ds.__setitem__((slice(0, 10), 1), 1),
    "read_chunks": lambda: ds.read_chunks([(0, 0)]),
    "region": lambda: ds[0:10, 0],
    "visit": lambda: ds.visit_chunks([(0, 0)], lambda i, a: None),
    "lazy_slice": lambda: np.asarray(aa.open(path)[0:10, 0]),
    "lazy_sum": lambda: aa.open(path).sum(),
}
got = {}
for limit in ("tight", "4gib"):
    soft = mapped + (3 << 29) if limit == "tight" else 4 << 30
    resource.setrlimit(resource.RLIMIT_AS, (soft, resource.RLIM_INFINITY))
    for name, call in calls.items():
        try:
            call()
            got[f"{limit}:{name}"] = ["ok", ""]
        except BaseException as e:
            got[f"{limit}:{name}"] = [f"{type(e).__module__}.{type(e).__name__}", str(e)]
print(json.dumps(got))
"""


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_a_2_31_chunk_under_an_address_space_limit(tmp_path, fmt):
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
    assert len(got) == 12
    for name, (kind, message) in got.items():
        if name.startswith("4gib:") and kind == "ok":
            continue
        assert kind == "altarr.errors.MaterializeError", (name, kind, message)
        assert "(2147483648, 1)" in message and "chunk=(0, " in message, (name, message)
        if name.startswith("tight:"):  # no 2 GiB buffer fits: refused before it is allocated
            assert "address space this process has left" in message, (name, message)
