"""Remote reads in the fewest round trips (issue 13), asserted by request and round counts, not timings.

Against the moto S3 server (``s3_endpoint``) and a loopback HTTP file server with ETags
(``benchmarks/netservers.py``): a batch of k regions over s shards costs 1 round of metadata (cold) + 1
round per shard level + 1 data round; a warm repeat reads no index; a shard rewritten by someone else is
never read through a stale cached index; a batch of partial writes costs one read and one write per
touched shard. Plus ``read_regions``/``write_regions``/``read_many`` against NumPy on local stores.
"""

from __future__ import annotations

import pickle
import statistics
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from _processes import fork_and_spawn_in_fresh_process
from _s3 import BUCKET, REQUESTS, requests_since, s3_options
from altarr.errors import StoreError
from altarr.stores import WHOLE, FsspecStore, ObstoreStore, Range, Suffix, store_from_url
from altarr.stores.obstore_client import fsspec_to_obstore_options, version_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import http_server

SHAPE = (32, 32)
CHUNKS = (4, 4)
SHARDS = (16, 16)
VALUES = (np.arange(32 * 32, dtype="uint16").reshape(SHAPE) * 7) % 5003

#: 5 regions over 3 of the 4 shards, unaligned, two of them sharing chunks; under half of each shard's
#: chunks, so every shard's index is read (a shard mostly wanted is read whole instead)
REGIONS = [np.s_[1:6, 2:9], np.s_[3:11, 5:7], np.s_[20:30, 1:3], np.s_[17, 3:14], np.s_[18:31:9, 17:25]]
TOUCHED_SHARDS = 3


def _region_chunks(regions, chunks=CHUNKS) -> set[tuple[int, int]]:
    out = set()
    for r in regions:
        rows = range(*r[0].indices(SHAPE[0])) if isinstance(r[0], slice) else [r[0]]
        cols = range(*r[1].indices(SHAPE[1])) if isinstance(r[1], slice) else [r[1]]
        out |= {(i // chunks[0], j // chunks[1]) for i in rows for j in cols}
    return out


def _s3_url() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}/data.zarr"


def _write(url: str, endpoint: str | None = None, shards=SHARDS, **kw) -> aa.Dataset:
    opts = {} if endpoint is None else s3_options(endpoint)
    ds = aa.create_dataset(
        url, shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=shards, storage_options=opts or None, **kw
    )
    ds[...] = VALUES
    return ds


# --- read_regions / write_regions / read_many on local stores --------------------------------------------
def test_read_regions_equal_numpy_and_read_each_chunk_once(tmp_path):
    ds = aa.create_dataset("memory://" + uuid.uuid4().hex, shape=SHAPE, dtype="uint16", chunks=CHUNKS)
    ds[...] = VALUES
    ds.store.stats.reset()
    got = ds.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    # unsharded: one request per distinct chunk, shared chunks read (and decoded) once
    assert ds.store.stats.reads == len(_region_chunks(REGIONS))


def test_read_regions_index_expressions_and_modes(tmp_path):
    ds = _write(str(tmp_path / "a.zarr"))
    mask = VALUES % 3 == 0
    sels = [np.s_[[3, 30, 3], 5:9], (mask,), np.s_[..., ::-5], np.s_[None, 7, [1, 31]], np.s_[31, 31]]
    got = ds.read_regions(sels)
    for g, s in zip(got, sels, strict=True):
        np.testing.assert_array_equal(g, VALUES[s])
    o = ds.read_regions([([1, 9, 30], [0, 31])], mode="oindex")[0]
    np.testing.assert_array_equal(o, VALUES[np.ix_([1, 9, 30], [0, 31])])
    v = ds.read_regions([([1, 9, 30], [0, 31, 2])], mode="vindex")[0]
    np.testing.assert_array_equal(v, VALUES[[1, 9, 30], [0, 31, 2]])
    assert ds.read_regions([]) == []


def test_read_regions_bad_input(tmp_path):
    ds = _write(str(tmp_path / "a.zarr"))
    with pytest.raises(ValueError, match="mode must be one of"):
        ds.read_regions([np.s_[0]], mode="points")
    with pytest.raises(TypeError, match="list of selections"):
        ds.read_regions(np.s_[0:2, 0:2])
    with pytest.raises(aa.errors.SelectionError):
        ds.read_regions([np.s_[0:2], np.s_[40]])
    with pytest.raises(ValueError, match="2 selections but 1 values"):
        ds.write_regions([np.s_[0], np.s_[1]], [1])
    with pytest.raises(aa.errors.ReadOnlyError):
        aa.open_dataset(str(tmp_path / "a.zarr")).write_regions([np.s_[0]], [1])


def test_write_regions_equal_sequential_writes_one_read_one_write_per_shard(tmp_path):
    ds = _write(str(tmp_path / "a.zarr"))
    expect = VALUES.copy()
    regions = [*REGIONS, np.s_[0:16, 0:4], np.s_[2:4, 0:3]]  # a covered chunk column, then an edit of it
    values = [np.full(expect[r].shape, 100 + i, "uint16") for i, r in enumerate(regions)]
    for r, v in zip(regions, values, strict=True):
        expect[r] = v
    ds.store.stats.reset()
    ds.write_regions(regions, values)
    assert ds.store.stats.writes == TOUCHED_SHARDS
    assert ds.store.stats.reads <= TOUCHED_SHARDS
    np.testing.assert_array_equal(ds[...], expect)


def test_lazy_read_many_one_fetch_call_and_each_chunk_once():
    calls = []

    def fetch(chunks):
        calls.append(len(chunks))
        return [VALUES[4 * i : 4 * i + 4, 4 * j : 4 * j + 4] for i, j in chunks]

    x = aa.altarr(SHAPE, CHUNKS, fetch, dtype="uint16")
    got = x.read_many(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    assert calls == [len(_region_chunks(REGIONS))]
    assert aa.stats(x)["extract_subset"] == len(REGIONS)
    with aa.set_options(cache_bytes=0):  # over budget: streamed, still one call, nothing cached
        y = aa.altarr(SHAPE, CHUNKS, fetch, dtype="uint16")
        got = aa.read_many(y, REGIONS, mode="oindex")
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    assert calls[-1] == len(_region_chunks(REGIONS)) and aa.stats(y)["chunks_cached"] == 0


# --- S3: rounds and requests ------------------------------------------------------------------------------
def test_s3_batch_costs_metadata_plus_one_round_per_level_plus_data(s3_endpoint):
    """The rounds and requests of a batch, as the store counts them and as the server saw them."""
    url = _s3_url()
    _write(url, s3_endpoint)
    mark = len(REQUESTS)
    ds = aa.open_dataset(url, **s3_options(s3_endpoint))
    st = ds.store.stats
    assert st.rounds == 1  # metadata: every candidate document probed at once
    meta_reads = st.reads
    got = ds.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    assert st.rounds == 1 + 1 + 1  # + shard indexes + chunk ranges
    assert st.size_queries == 0 and len(requests_since(mark)) == st.reads
    cold_data_reads = st.reads - meta_reads - TOUCHED_SHARDS  # one index read per touched shard
    assert 1 <= cold_data_reads <= len(_region_chunks(REGIONS))
    st.reset()
    mark = len(REQUESTS)
    ds.read_regions(REGIONS)  # warm: the cached indexes, validated by the ETags of the data answers
    assert st.rounds == 1 and st.reads == cold_data_reads == len(requests_since(mark))


def test_s3_merges_chunk_ranges_up_to_a_mib_apart_local_stores_up_to_64_kib(s3_endpoint, tmp_path):
    """Three 64 KiB chunks of one shard, 128 KiB apart: one ranged GET on S3 (a request costs a round
    trip there, the bytes between far less), three reads of a local file."""
    values = np.arange(8 * 32768, dtype="uint16")
    kw = dict(shape=values.shape, dtype="uint16", chunks=(32768,), shards=(8 * 32768,), compressor=None)
    wanted = [(0,), (3,), (6,)]
    reads = {}
    for where, url, opts in [("s3", _s3_url(), s3_options(s3_endpoint)), ("local", str(tmp_path / "a"), {})]:
        aa.create_dataset(url, storage_options=opts or None, **kw)[...] = values
        ds = aa.open_dataset(url, **opts)
        ds.store.stats.reset()
        got = ds.read_chunks(wanted)
        for c, g in zip(wanted, got, strict=True):
            np.testing.assert_array_equal(g, values[c[0] * 32768 : (c[0] + 1) * 32768])
        reads[where] = ds.store.stats.reads - 1  # the index read
        assert ds.store.coalesce_gap == (1 << 20 if where == "s3" else 64 << 10)
    assert reads == {"s3": 1, "local": 3}


def test_s3_nested_shards_one_round_per_level(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint, shards=[(8, 8), (16, 16)])
    ds = aa.open_dataset(url, **s3_options(s3_endpoint))
    assert isinstance(ds.store, ObstoreStore) and ds.store.stats.rounds == 1
    got = ds.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    assert ds.store.stats.rounds == 1 + 2 + 1
    ds.store.stats.reset()
    ds.read_regions(REGIONS)
    assert ds.store.stats.rounds == 1  # both levels' indexes cached


def test_s3_recheck_true_reads_indexes_every_call(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    ds = aa.open_dataset(url, recheck=True, **s3_options(s3_endpoint))
    ds.read_regions(REGIONS)
    ds.store.stats.reset()
    ds.read_regions(REGIONS)
    assert ds.store.stats.rounds == 2


def test_s3_cached_index_of_a_rewritten_or_deleted_shard_is_never_used(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    reader = aa.open_dataset(url, **s3_options(s3_endpoint))
    reader.read_regions(REGIONS)  # caches the indexes of three shards
    writer = aa.open_dataset(url, mode="r+", **s3_options(s3_endpoint))
    # rewrite shard (0, 0) with chunks of other sizes, so the old index would point at wrong bytes
    noise = np.random.default_rng(1).integers(0, 60000, (16, 16), dtype="uint16")
    writer[0:16, 0:16] = noise
    expect = VALUES.copy()
    expect[0:16, 0:16] = noise
    reader.store.stats.reset()
    got = reader.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, expect[r])
    # the data round saw another ETag: the index was read again, then the data
    assert reader.store.stats.rounds == 3
    writer.delete_chunks(writer.chunks_in_shard((1, 0)))  # the shard object goes
    expect[16:32, 0:16] = 0
    got = reader.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, expect[r])


def test_s3_write_regions_one_read_one_write_per_touched_shard(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    ds = aa.open_dataset(url, mode="r+", **s3_options(s3_endpoint))
    expect = VALUES.copy()
    values = [np.full(expect[r].shape, 9, "uint16") for r in REGIONS]
    for r, v in zip(REGIONS, values, strict=True):
        expect[r] = v
    ds.store.stats.reset()
    ds.write_regions(REGIONS, values)
    st = ds.store.stats
    assert st.reads == TOUCHED_SHARDS and st.writes == TOUCHED_SHARDS and st.rounds == 2
    np.testing.assert_array_equal(aa.open_dataset(url, **s3_options(s3_endpoint))[...], expect)
    # a warm read after our own write: the dropped index entries are read again, never stale
    st.reset()
    got = ds.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, expect[r])
    assert st.rounds == 2


def test_lazy_open_read_many_over_s3(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    x = aa.open(url, **s3_options(s3_endpoint))
    got = x.read_many(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    assert aa.stats(x)["fetch_calls"] == 1
    assert x._source.fetch.dataset().store.stats.rounds == 3


# --- HTTP: the requests a server sees -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def http_array(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    _write(str(root / "a.zarr"))
    with http_server(root) as (url, log):
        yield f"{url}/a.zarr", log


@pytest.mark.parametrize("client", ["obstore", "fsspec"])
def test_http_batch_requests_and_rounds(http_array, client):
    """The same requests and rounds through the URL's client (obstore) and through fsspec's HTTP file
    system given as a store; only obstore reports the ETag that lets a warm read skip the indexes."""
    url, log = http_array
    log.reset()
    ds = aa.open_dataset(url if client == "obstore" else FsspecStore(url))
    meta = log.requests()
    assert meta == ds.store.stats.reads and ds.store.stats.rounds == 1
    assert all(m == "GET" for m, *_ in log.entries)  # no HEAD, no listing
    got = ds.read_regions(REGIONS)
    for g, r in zip(got, REGIONS, strict=True):
        np.testing.assert_array_equal(g, VALUES[r])
    sent = log.entries[meta:]
    suffixes = [e for e in sent if e[2] and e[2].startswith("bytes=-")]
    assert len(suffixes) == TOUCHED_SHARDS  # one index read per shard, a suffix range
    assert len(sent) == ds.store.stats.reads - meta and ds.store.stats.rounds == 3
    log.reset()
    ds.read_regions(REGIONS)
    warm_suffixes = [e for e in log.entries if e[2] and e[2].startswith("bytes=-")]
    assert len(warm_suffixes) == (0 if client == "obstore" else TOUCHED_SHARDS)
    assert all(m == "GET" for m, *_ in log.entries)


def test_http_region_loop_costs_k_times_more_rounds_than_one_batch(http_array):
    url, _ = http_array
    ds = aa.open_dataset(url)
    ds.store.stats.reset()
    for r in REGIONS:
        ds[r]
    loop_rounds = ds.store.stats.rounds
    fresh = aa.open_dataset(url)
    fresh.store.stats.reset()
    fresh.read_regions(REGIONS)
    assert fresh.store.stats.rounds == 2 < loop_rounds


def _most_in_flight(entries) -> int:
    """The most requests the server was serving at one moment (from each request's service interval)."""
    events = sorted([(e[3], 1) for e in entries] + [(e[4], -1) for e in entries])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.mark.parametrize(("concurrency", "in_flight"), [(None, 9), (3, 3)])
def test_obstore_batch_requests_are_in_flight_together_up_to_concurrency(tmp_path, concurrency, in_flight):
    """A batch's GETs go out together (one round as the server sees it), at most ``concurrency`` at once."""
    for i in range(9):
        (tmp_path / f"k{i}").write_bytes(bytes([i]) * (1000 + i))
    with http_server(tmp_path, latency=0.5) as (url, log):  # long enough to overlap on a loaded machine
        store = ObstoreStore(url, **({} if concurrency is None else {"concurrency": concurrency}))
        got = store.get_ranges([(f"k{i}", WHOLE) for i in range(9)] + [("missing", WHOLE)])
        assert got == [bytes([i]) * (1000 + i) for i in range(9)] + [None]
        entries = [e for e in log.entries if e[1] != "/missing"]
        assert len(entries) == 9
        assert _most_in_flight(entries) == in_flight
        assert store.stats.rounds == 1


# --- the obstore store itself ---------------------------------------------------------------------------------
def test_obstore_store_pickles_and_reads_ranges(s3_endpoint):
    s = ObstoreStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", **s3_options(s3_endpoint))
    data = bytes(range(256)) * 40
    s.set("x/y", data)
    t = pickle.loads(pickle.dumps(s))
    got = t.get_ranges(
        [
            ("x/y", Range(5, 10)),
            ("x/y", Suffix(3)),
            ("x/y", Range(20_000, 20_010)),
            ("x/y", Range(7, 7)),
            ("q", Range(0, 1)),
        ]
    )
    assert got == [data[5:10], data[-3:], b"", b"", None]
    assert t.list_dir("x") == (["y"], []) and t.list_dir("") == ([], ["x"])
    assert s.delete("x/y") and not s.delete("x/y")


def test_store_from_url_one_client_per_scheme(s3_endpoint):
    s, _ = store_from_url(f"s3://{BUCKET}/k", **s3_options(s3_endpoint))
    assert isinstance(s, ObstoreStore)
    assert isinstance(store_from_url("http://127.0.0.1:9/x")[0], ObstoreStore)
    assert isinstance(store_from_url("memory://x")[0], FsspecStore)
    assert isinstance(store_from_url("simplecache::memory://x")[0], FsspecStore)
    with pytest.raises(StoreError, match="client"):  # no switch of clients: an option obstore does not know
        store_from_url("s3://b/k", client="fsspec")


def test_storage_options_as_one_dict_as_zarr_and_xarray_take_them(s3_endpoint):
    """``storage_options={...}`` (zarr-python's, xarray's and fsspec's spelling) works wherever the
    client's options are taken as keywords; an option given both ways, or options that are not a dict,
    are refused before any request."""
    url = _s3_url()
    _write(url, s3_endpoint)
    opts = s3_options(s3_endpoint)
    np.testing.assert_array_equal(aa.open_dataset(url, storage_options=opts)[...], VALUES)
    x = aa.open(url, storage_options=opts)
    assert int(x[3:9, 5:20].sum()) == int(VALUES[3:9, 5:20].sum())
    store, prefix = store_from_url(url, storage_options=opts)
    assert type(store) is ObstoreStore and prefix == "" and store.get("zarr.json") is not None
    with pytest.raises(TypeError, match=r"both as keywords and in storage_options: \['key'\]"):
        aa.open_dataset(url, storage_options=opts, key="testing")
    with pytest.raises(TypeError, match="storage_options must be a dict"):
        aa.open_dataset(url, storage_options="endpoint_url")


def test_fsspec_options_are_translated():
    opts = fsspec_to_obstore_options(
        "s3://b", {"key": "a", "secret": "b", "anon": False, "client_kwargs": {"region_name": "eu-west-1"}}
    )
    assert opts == {"access_key_id": "a", "secret_access_key": "b", "region": "eu-west-1"}
    assert fsspec_to_obstore_options("http://127.0.0.1:1/x", {}) == {"client_options": {"allow_http": True}}
    opts = fsspec_to_obstore_options("s3://b", {"anon": True, "endpoint_url": "http://127.0.0.1:9000"})
    assert opts == {
        "skip_signature": True,
        "endpoint": "http://127.0.0.1:9000",
        "client_options": {"allow_http": True},
    }
    assert (version_of({"e_tag": '"abc"', "size": 3}), version_of({"e_tag": None, "version": None})) == (
        '"abc"',
        None,
    )


def test_s3_shards_mostly_wanted_are_read_whole_then_warm_from_their_cached_index(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    ds = aa.open_dataset(url, **s3_options(s3_endpoint))
    slab = [np.s_[0:16, :], np.s_[3:5, 7]]
    meta_reads = ds.store.stats.reads
    got = ds.read_regions(slab)
    np.testing.assert_array_equal(got[0], VALUES[slab[0]])
    np.testing.assert_array_equal(got[1], VALUES[slab[1]])
    assert ds.store.stats.rounds == 1 + 1 and ds.store.stats.reads - meta_reads == 2  # two shards, read whole
    ds.store.stats.reset()
    np.testing.assert_array_equal(ds.read_regions(slab)[0], VALUES[slab[0]])
    assert ds.store.stats.rounds == 1  # their indexes were parsed from the whole reads and cached


def test_docs_remote_examples_run():
    """The code blocks of docs/remote.md from "Many regions in one call" on (the earlier ones need a
    bucket) run as written."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "remote.md").read_text()
    blocks = text.split("## Many regions in one call")[1].split("```python\n")[1:]
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block.split("```")[0], "docs/remote.md", "exec"), {})


def test_open_with_a_format_hint_asks_for_that_format_only(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint)
    ds = aa.open_dataset(url, format="zarr3", **s3_options(s3_endpoint))
    assert ds.store.stats.reads == 1 and ds.store.stats.rounds == 1
    with pytest.raises(aa.errors.MetadataError):
        aa.open_dataset(url, format="n5", **s3_options(s3_endpoint))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_metadata_opens_children_without_requests(tmp_path, zarr_format):
    zarr = pytest.importorskip("zarr")
    root = zarr.open_group(str(tmp_path / "h.zarr"), mode="w", zarr_format=zarr_format)
    a = root.create_array("raw/a", shape=(6, 6), chunks=(3, 3), dtype="int16")
    a[...] = np.arange(36, dtype="int16").reshape(6, 6)
    root.create_group("empty")
    zarr.consolidate_metadata(str(tmp_path / "h.zarr"), zarr_format=zarr_format)
    g = aa.open_group(str(tmp_path / "h.zarr"))
    opened = g.store.stats.reads
    sub = g["raw"]
    ds = sub["a"]
    assert g.store.stats.reads == opened  # both from the consolidated snapshot
    assert isinstance(g["empty"], aa.Group) and g.store.stats.reads == opened
    np.testing.assert_array_equal(ds[...], np.arange(36).reshape(6, 6))
    after_data = g.store.stats.reads
    assert g["raw/a"].shape == (6, 6) and g.store.stats.reads == after_data
    # writable groups do not trust the snapshot (it goes stale as they add children)
    w = aa.open_group(str(tmp_path / "h.zarr"), mode="r+")
    before = w.store.stats.reads
    w["raw/a"]
    assert w.store.stats.reads > before


def test_obstore_store_in_a_forked_child_fails_fast_and_works_when_spawned(s3_endpoint):
    """obstore's runtime does not survive fork(): a forked child gets a clear error, not a hang; a
    spawned child (a pickled store) reads. The store is made, used and forked in a fresh process
    (tests/_processes.py says why)."""
    fork_and_spawn_in_fresh_process(f"s3://{BUCKET}/{uuid.uuid4().hex}", s3_options(s3_endpoint))


def test_bench_remote_smoke(tmp_path):
    """A tiny run of the network benchmark (altarr alone, both servers): it checks every result it
    times against the source data, and prints its table."""
    import json
    import subprocess

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_remote.py"
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(script), "--quick", "--libs", "altarr", "--json", str(out),
         "--scenarios", "open_chunk,boxes,boxes_loop,write_boxes"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert {r["scenario"] for r in rows} == {"open_chunk", "boxes", "boxes_loop", "write_boxes"}
    assert all("error" not in r for r in rows)
    one = [r for r in rows if r["scenario"] == "open_chunk"]
    assert all(r["requests"] == 3 and r["rounds"] == 3 for r in one)  # metadata, index, chunk
    assert "| boxes_loop |" in proc.stdout


def test_bench_remote_paired_ratio_cancels_a_drift_of_the_machine():
    """Per-repetition ratios: a machine that slows down over the run (both libraries' times doubled
    from one repetition to the next) leaves the paired ratio exact, while the ratio of medians of the
    same times is off; the table shows both, the paired one with its interval."""
    import bench_remote as bench

    theirs = [10.0 * 2**i for i in range(7)]
    ours = [0.9 * t for t in theirs]
    ours[3] = 200.0  # one slow repetition moves the median of ours, not the median of the ratios
    mid, lo, hi = bench.paired_ratio(ours, theirs)
    assert mid == pytest.approx(0.9) and lo <= mid <= hi
    assert statistics.median(ours) / statistics.median(theirs) == pytest.approx(1.8)  # 144 / 80
    spread = bench.paired_ratio([1.0, 1.2, 0.8, 1.1, 0.9], [1.0] * 5)
    assert spread[0] == pytest.approx(1.0) and spread[1] < 1.0 < spread[2]
    rows = [
        {"server": "s3", "latency_ms": 20.0, "lib": lib, "scenario": "slab", "ms": statistics.median(t),
         "requests": 5, "rounds": 2, "times_ms": t}
        for lib, t in (("altarr", ours), ("tensorstore", theirs), ("zarr-obstore", [1e4] * 7))
    ]  # fmt: skip
    line = bench.table(rows, "s3", 20.0, ["altarr", "tensorstore", "zarr-obstore"]).splitlines()[-1]
    assert line.endswith(f"| 1.80; paired {mid:.3f} [{lo:.3f}, {hi:.3f}] |")  # to the best peer


def test_bench_remote_aa_verdict(tmp_path, capsys):
    """With a third arm (``--aa``, a second checkout of the other version) the A/B table gives each
    line's A/A (other2 / other, paired) and says "meets" when this / other is at most the A/A
    interval's upper end or at most 1, "above" when it is past both; ``--pool`` reads runs as one."""
    import json

    import bench_remote as bench

    other = [10.0, 11.0, 12.0, 10.5, 11.5, 10.2, 11.8]
    other2 = [t * f for t, f in zip(other, (1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99), strict=True)]
    rows = [
        {"server": "http", "latency_ms": 20.0, "lib": lib, "scenario": scen, "ms": statistics.median(t),
         "requests": 3, "rounds": 3, "times_ms": t}
        for scen, k in (("open_chunk", 1.005), ("slab", 0.999), ("whole", 1.05))
        for lib, t in (("altarr", [k * v for v in other]), ("altarr@other", other), ("altarr@other2", other2))
    ]  # fmt: skip
    lines = bench.table_against(rows, "http", 20.0).splitlines()
    assert lines[0].endswith("| A/A: other2 / other | verdict |") and lines[1].count("|---") == 6
    aa = "{:.3f} [{:.3f}, {:.3f}]".format(*bench.paired_ratio(other2, other))
    assert lines[2].endswith(f"| {aa} | meets |") and lines[2].startswith("| open_chunk |")
    assert lines[3].startswith("| slab |") and lines[3].endswith(f"| {aa} | meets |")  # below 1
    assert lines[4].endswith(f"| {aa} | above |") and "paired 1.050 [1.050, 1.050]" in lines[4]
    halves = [tmp_path / "a.json", tmp_path / "b.json"]  # --pool: two runs' rows read as one run
    for path, cut in zip(halves, (slice(0, 3), slice(3, None)), strict=True):
        path.write_text(json.dumps([{**r, "times_ms": r["times_ms"][cut]} for r in rows]))
    bench.print_pooled([str(p) for p in halves])
    assert capsys.readouterr().out.strip().splitlines()[2:] == lines


@pytest.mark.parametrize("decoder", ["kernel", "numcodecs"])
def test_remote_floor_sends_altarrs_requests_and_gives_its_arrays(tmp_path, decoder, native_required):
    """The floor of bench_remote's lines (``benchmarks/remote_floor.py``) replays the requests one
    altarr call sent, recorded from the server's log, with no altarr code: the server sees the same
    ``(path, Range)`` requests in the same number of rounds, and the arrays are the source's."""
    import argparse

    import bench_remote as bench
    from remote_floor import Floor, record

    geo = bench.Geometry(64, 32, 8)
    data = bench.make_volume(geo.n)
    ds = aa.create_dataset(
        str(tmp_path / "a.zarr"), shape=geo.shape, dtype="uint16", chunks=(8,) * 3, shards=(32,) * 3,
        compressor="zstd",
    )  # fmt: skip
    ds[...] = data
    scenarios = ["open_chunk", "boxes", "boxes_loop", "whole"]
    # bench_remote's altarr sets the process's pool size (its worker's whole life): restored on exit here,
    # as the suite's pool-size matrix (.ci/run, ALTARR_THREADS=1) expects of every test. Rounds are told
    # apart by the server's times: a request started up to one latency late is still in its round (at
    # 10 ms, a loaded CI machine once split boxes' chunk round in two)
    with http_server(tmp_path, latency=0.03) as (url, log), aa.set_options(threads=bench.THREADS):
        args = argparse.Namespace(libs=["altarr"], scenarios=scenarios)
        calls = {s: fn for s, _, fn, _ in bench.cases("http", f"{url}/a.zarr", None, geo, data, args)}
        rounds = {s: record(log, fn) for s, fn in calls.items()}
        floor = Floor("http", f"{url}/a.zarr", None, geo, rounds, decoder)
        for scen in scenarios:
            floor.read(scen)  # the warm-up call works out where each chunk lies
            got = floor.read(scen)
            replayed = record(log, lambda s=scen: floor.read(s))
            assert [sorted(r) for r in replayed] == [sorted(r) for r in rounds[scen]]
            sels = bench.selections(geo)["boxes" if scen == "boxes_loop" else scen]
            for g, sel in zip(got, sels, strict=True):
                np.testing.assert_array_equal(g, data[sel])
    assert [len(rounds[s]) for s in scenarios[:2]] == [3, 3]  # metadata, shard indexes, chunks


def test_bench_remote_floor_verdict():
    """With a floor arm the table says "unreachable" when the floor's interval lies above the A/A's upper
    end (and 1), "room" when its median does not, and leaves a line without a floor blank."""
    import bench_remote as bench

    other = [10.0, 11.0, 12.0, 10.5, 11.5, 10.2, 11.8]
    arms = {"altarr": 1.05, "altarr@other": 1.0, "altarr@other2": 1.0}
    rows = [
        {"server": "s3", "latency_ms": 20.0, "lib": lib, "scenario": scen, "ms": 1.0, "requests": 1,
         "rounds": 1, "times_ms": [k * v for v in other]}
        for scen, floor in (("slab", 1.04), ("whole", 0.99), ("write_boxes", None))
        for lib, k in {**arms, "floor": floor}.items() if k is not None
    ]  # fmt: skip
    lines = bench.table_against(rows, "s3", 20.0).splitlines()
    assert lines[0].endswith("| floor / other | floor says |") and lines[1].count("|---") == 8
    assert lines[2].endswith("| 1.040 [1.040, 1.040] | unreachable |")
    assert lines[3].endswith("| 0.990 [0.990, 0.990] | room |")
    assert lines[4].endswith("| above | | |")


def test_bench_clients_smoke():
    """A tiny run of the client comparison over HTTP (its S3 half compares with s3fs, which the test
    environment does not hold): it finishes and prints the table with both clients' cells."""
    import subprocess

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_clients.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--quick", "--servers", "http"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ") and " ms | " in ln]
    assert [r.split(" |")[0] for r in rows] == [
        "| dependent_reads",
        "| ranged_reads",
        "| suffix_reads",
        "| whole_reads",
    ]
    assert all(r.count(" req)") == 2 for r in rows)  # obstore and fsspec each


def test_bench_bodies_smoke():
    """A tiny run of the whole-body comparison below the stores: it prints one row per client."""
    import subprocess

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_bodies.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--objects", "2", "--mib", "0.1", "--repeats", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ") and " ms |" in ln]
    assert [r.split(" |")[0] for r in rows] == [
        "| obstore get().bytes()", "| obstore get_range()", "| http.client readinto"
    ]  # fmt: skip


def test_s3_nested_cached_outer_index_of_a_deleted_shard_reads_as_missing(s3_endpoint):
    url = _s3_url()
    _write(url, s3_endpoint, shards=[(8, 8), (16, 16)])
    reader = aa.open_dataset(url, **s3_options(s3_endpoint))
    reader.read_regions(REGIONS)
    writer = aa.open_dataset(url, mode="r+", **s3_options(s3_endpoint))
    writer.delete_chunks(writer.chunks_in_shard((0, 0)))
    expect = VALUES.copy()
    expect[0:16, 0:16] = 0
    for g, r in zip(reader.read_regions(REGIONS), REGIONS, strict=True):
        np.testing.assert_array_equal(g, expect[r])
