"""The Python journeys of issue 32 as a new user met them: each test is what the user typed, and what
they should have got (the console-script journeys are in tests/cli)."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MaterializeError, MetadataError, NodeNotFoundError
from altarr.lazy import options


# --- the materialization limit ------------------------------------------------------------------------
def test_an_8_mib_volume_converts_to_numpy_and_takes_a_lazy_mask_with_the_default_limit(tmp_path):
    volume = (np.arange(128 * 128 * 256, dtype="uint32") % 4000).astype("uint16").reshape(128, 128, 256)
    ds = aa.create_dataset(tmp_path / "vol.zarr", shape=volume.shape, dtype="uint16", chunks=(32, 32, 64))
    ds[...] = volume
    x = aa.open(tmp_path / "vol.zarr")
    assert aa.get_options()["max_materialize"] is None  # the default: from the memory available
    assert x.nbytes == 8 * 2**20 and x.size > 1_000_000  # above the old limit of 10**6 elements
    np.testing.assert_array_equal(np.asarray(x), volume)
    np.testing.assert_array_equal(x[x > 3995], volume[volume > 3995])


def test_the_default_limit_is_half_the_available_memory_and_refuses_what_cannot_fit():
    limit = options.materialize_limit()
    free = options.available_memory()
    # measured at each call: a second reading may move a little, never by half
    assert 0.4 * free <= limit <= 0.6 * free
    huge = aa.altarr((2**20, 2**20), (1024, 1024), lambda c: [np.zeros((1024, 1024))] * len(c))
    assert huge.nbytes > 4 * free  # 8 TiB
    with pytest.raises(MaterializeError, match="half the free memory") as info:
        np.asarray(huge)
    assert "max_materialize=" in str(info.value) and "bytes" in str(info.value)
    assert aa.stats(huge)["fetch_calls"] == 0  # refused before anything was read


def test_a_limit_set_in_bytes_counts_bytes_not_elements_and_none_restores_the_default():
    calls = []
    x = aa.altarr((100,), (10,), lambda c: calls.append(len(c)) or [np.ones(10, "f8")] * len(c))
    with aa.set_options(max_materialize=800):  # 100 float64 values: exactly 800 bytes
        assert np.asarray(x).sum() == 100
        assert options.materialize_limit() == 800
    with aa.set_options(max_materialize=799), pytest.raises(MaterializeError, match="max_materialize=799"):
        np.asarray(x)
    with aa.set_options(max_materialize=10**9):
        aa.set_options(max_materialize=None)
        assert aa.get_options()["max_materialize"] is None
    for bad in (-1, "1GB", 1.5):
        with pytest.raises((ValueError, TypeError)):
            aa.set_options(max_materialize=bad)


# --- errors of the right kind ---------------------------------------------------------------------------
@pytest.mark.parametrize("opener", [aa.open_dataset, aa.open_group, aa.open])
def test_a_missing_path_is_a_file_not_found_error_naming_the_path(tmp_path, opener):
    missing = tmp_path / "no-such.zarr"
    with pytest.raises(FileNotFoundError) as info:
        opener(missing)
    err = info.value
    assert isinstance(err, NodeNotFoundError) and isinstance(err, MetadataError)  # old handlers still work
    assert "no-such.zarr" in str(err) and err.errno == 2


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_a_missing_node_of_a_named_format_is_a_file_not_found_error(tmp_path, fmt):
    aa.create_group(tmp_path / "g", format=fmt)
    with pytest.raises(FileNotFoundError):
        aa.open_dataset(tmp_path / "g", path="nothing", format=fmt)
    with pytest.raises(FileNotFoundError):
        aa.open_group(tmp_path / "g")["nothing"]


# --- one codec vocabulary -------------------------------------------------------------------------------
def _zarr_compressors(path):
    import zarr

    return [
        c.to_dict() if hasattr(c, "to_dict") else c.get_config() for c in zarr.open_array(path).compressors
    ]


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2"])
def test_compressor_strings_numcodecs_and_zarr_codecs_objects_are_read_back_by_zarr_python(tmp_path, fmt):
    import numcodecs
    import zarr
    import zarr.codecs as zc

    data = np.arange(60 * 40, dtype="int32").reshape(60, 40)
    cases = [
        ("zstd:5", {"name": "zstd", "configuration": {"level": 5, "checksum": False}}),
        (numcodecs.Zstd(level=4), {"name": "zstd", "configuration": {"level": 4, "checksum": False}}),
        (zc.ZstdCodec(level=7), {"name": "zstd", "configuration": {"level": 7, "checksum": False}}),
        (zc.GzipCodec(level=2), {"name": "gzip", "configuration": {"level": 2}}),
        (
            "blosc:zstd:3",
            {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}},
        ),
        (
            zc.BloscCodec(cname="lz4", clevel=1, shuffle="bitshuffle"),
            {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "bitshuffle"}},
        ),
        ({"id": "gzip", "level": 3}, {"name": "gzip", "configuration": {"level": 3}}),
        ({"type": "gzip", "level": 1}, {"name": "gzip", "configuration": {"level": 1}}),
    ]
    for i, (given, want) in enumerate(cases):
        path = tmp_path / f"{i}.zarr"
        no_checksum = {"checksum": False} if fmt == "zarr3" else {}  # the codec as given, nothing added
        aa.create_dataset(path, data=data, chunks=(16, 16), compressor=given, format=fmt, **no_checksum)
        np.testing.assert_array_equal(zarr.open_array(path)[...], data)
        (got,) = _zarr_compressors(path)
        if fmt == "zarr2":  # numcodecs terms: the same choice
            conf = want["configuration"]
            assert got["id"] == want["name"] and got.get("level", got.get("clevel")) == conf.get(
                "level", conf.get("clevel")
            ), (given, got)
        else:
            assert {k: got["configuration"][k] for k in want["configuration"]} == want["configuration"], given
            assert got["name"] == want["name"]


def test_zarr_python_spellings_compressors_serializer_filters(tmp_path):
    import numcodecs
    import zarr
    import zarr.codecs as zc

    data = np.arange(100, dtype="int32")
    ds = aa.create_dataset(
        tmp_path / "a.zarr",
        data=data,
        compressors=[zc.ZstdCodec(level=2), zc.Crc32cCodec()],
        serializer=zc.BytesCodec(),
    )
    z = zarr.open_array(tmp_path / "a.zarr")
    assert [type(c).__name__ for c in z.compressors] == ["ZstdCodec", "Crc32cCodec"]
    assert [c.name for c in ds.compressors] == ["zstd", "crc32c"] and ds.serializer.name == "bytes"
    np.testing.assert_array_equal(z[...], data)
    v2 = aa.create_dataset(
        tmp_path / "b.zarr",
        data=data,
        format="zarr2",
        filters=[numcodecs.Delta(dtype="i4")],
        compressors="zlib:1",
    )
    z2 = zarr.open_array(tmp_path / "b.zarr")
    assert z2.filters == v2.filters == (numcodecs.Delta(dtype="i4"),) and z2.compressors == (
        numcodecs.Zlib(1),
    )
    np.testing.assert_array_equal(z2[...], data)


@pytest.mark.parametrize(
    ("fmt", "given", "words"),
    [
        ("zarr3", "lz5", ["compressor='lz5'", "unknown codec"]),
        ("zarr3", "blosc:snappy:5", ["compressor='blosc:snappy:5'", "snappy"]),
        ("zarr2", "zstd:99", ["compressor='zstd:99'", "outside"]),
        ("zarr3", "lz4", ["compressor='lz4'", "Zarr v3 has no 'lz4'"]),
        ("n5", "gzip:fast", ["compressor='gzip:fast'"]),
        ("zarr2", {"id": "blosc", "cname": "snappy"}, ["snappy"]),
    ],
)
def test_a_bad_codec_is_refused_naming_the_argument_before_anything_is_written(tmp_path, fmt, given, words):
    from altarr.errors import MetadataError

    path = tmp_path / "bad"
    with pytest.raises(MetadataError) as info:
        aa.create_dataset(path, shape=(10,), dtype="u2", chunks=(5,), compressor=given, format=fmt)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert not path.exists()
    # overwrite=True does not delete what is there when the new arguments are bad
    kept = aa.create_dataset(path, data=np.arange(10, dtype="u2"), format=fmt)
    with pytest.raises(MetadataError):
        aa.create_dataset(path, data=np.zeros(10, "u2"), compressor=given, format=fmt, overwrite=True)
    np.testing.assert_array_equal(aa.open_dataset(path)[...], kept[...])


def test_compressors_argument_name_is_the_one_in_the_message(tmp_path):
    from altarr.errors import UnknownCodecError

    with pytest.raises(UnknownCodecError, match=r"^compressors='lz5'"):
        aa.create_dataset(tmp_path / "x", shape=(4,), dtype="u1", compressors="lz5")
    with pytest.raises(MetadataError, match="not both"):
        aa.create_dataset(tmp_path / "x", shape=(4,), dtype="u1", compressors="zstd", compressor="gzip")


# --- the zarr-python surface, against zarr-python on the same calls -------------------------------------
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((1000, 1000), "f8"), ((512, 512, 512), "u2"), ((100,), "u1"), ((10**6,), "f4"), ((4000, 3000), "u1"),
     ((7, 5000, 3), "i2"), ((1,), "f8"), ((0, 5), "f4")],
)  # fmt: skip
def test_automatic_chunks_are_zarr_pythons(tmp_path, shape, dtype):
    import zarr

    ours = aa.create_dataset(tmp_path / "a.zarr", shape=shape, dtype=dtype)  # chunks="auto"
    theirs = zarr.create_array(tmp_path / "z.zarr", shape=shape, dtype=dtype)
    assert ours.chunks == theirs.chunks
    sharded = aa.create_dataset(tmp_path / "s.zarr", shape=(1000, 1000), dtype="f8", shards=(500, 500))
    assert all(s % c == 0 for s, c in zip(sharded.shards, sharded.chunks, strict=True))


def test_create_dataset_from_data_as_zarr_python_create_array(tmp_path):
    import zarr

    data = np.random.default_rng(0).integers(0, 1000, (300, 200)).astype("uint16")
    ours = aa.create_dataset(tmp_path / "a.zarr", data=data)
    theirs = zarr.create_array(tmp_path / "z.zarr", data=data)
    assert (ours.shape, ours.dtype, ours.chunks) == (theirs.shape, theirs.dtype, theirs.chunks)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "a.zarr")[...], data)
    with pytest.raises(MetadataError, match="differs"):
        aa.create_dataset(tmp_path / "b.zarr", data=data, shape=(3, 3))


@pytest.mark.parametrize("shards", [None, (50, 40)])
def test_array_members_match_zarr_python_on_the_same_array(tmp_path, shards):
    import zarr

    path = tmp_path / "a.zarr"
    ds = aa.create_dataset(
        path, shape=(100, 80), dtype="f4", chunks=(10, 20), shards=shards, compressor="zstd:5"
    )
    ds[:10, :20] = 1
    ds[60:70, :] = 2
    z = zarr.open_array(path)
    for name in ("shape", "chunks", "shards", "nchunks", "nchunks_initialized", "cdata_shape", "ndim", "name",
                 "basename", "nbytes", "fill_value", "read_only"):  # fmt: skip
        assert getattr(ds, name) == getattr(z, name), name
    assert [c.to_json() for c in ds.compressors] == [c.to_dict() for c in z.compressors]
    assert ds.serializer.to_json() == z.serializer.to_dict() and ds.filters == () == z.filters
    text = repr(ds.info)
    for field in ("Type", "Shape", "Chunk shape", "Compressors", "Serializer", "No. bytes"):
        assert field in text and field in repr(z.info), field
    assert ("Shard shape" in text) == bool(shards)
    assert "Chunks initialized" in repr(ds.info_complete())
    assert ds.codecs[0]["name"] == ("sharding_indexed" if shards else "bytes")


def _hierarchy(g):
    g.create_array("x", shape=(3,), dtype="i4")
    sub = g.create_group("sub")
    sub.create_array("y", shape=(2, 2), dtype="u1")
    sub.create_group("deeper")
    return g


def test_group_members_match_zarr_python_on_the_same_calls(tmp_path):
    import zarr

    ours = _hierarchy(aa.create_group(tmp_path / "a.zarr"))
    theirs = _hierarchy(zarr.open_group(tmp_path / "z.zarr", mode="w"))
    assert len(ours) == len(theirs) == 2
    assert sorted(ours) == sorted(theirs) and sorted(ours.keys()) == sorted(theirs.keys())
    assert sorted(ours.array_keys()) == sorted(theirs.array_keys()) == ["x"]
    assert sorted(ours.group_keys()) == sorted(theirs.group_keys()) == ["sub"]
    assert [a.shape for a in ours.array_values()] == [a.shape for a in theirs.array_values()] == [(3,)]
    assert [g.name for g in ours.group_values()] == [g.name for g in theirs.group_values()] == ["/sub"]
    for depth in (0, 1, None):
        assert sorted(n for n, _ in ours.members(max_depth=depth)) == sorted(
            n for n, _ in theirs.members(max_depth=depth)
        ), depth
        assert ours.nmembers(max_depth=depth) == theirs.nmembers(max_depth=depth)
    assert repr(ours.tree()) == repr(theirs.tree()).rstrip()
    assert "sub/y" in ours and "sub/y" in theirs and "nope" not in ours
    assert repr(ours.info).splitlines()[1].split(":")[1].strip() == "Group"
    # the same errors, by the built-in kind a caller catches
    for g in (ours, theirs):
        with pytest.raises(KeyError):
            g["nope"]
        with pytest.raises(TypeError):
            g.require_array("x", shape=(4,), dtype="i4")
        with pytest.raises(TypeError):
            g.require_group("x")
        assert g.require_group("sub").path.endswith("sub")
        assert g.require_array("x", shape=(3,), dtype="i4").shape == (3,)
        assert g.require_array("new", shape=(5,), dtype="u1").shape == (5,)
        del g["x"]
        assert "x" not in g and len(g) == 2
    with pytest.raises(FileExistsError):
        ours.create_group("sub")
    assert ours.create_group("sub", overwrite=True).nmembers() == 0
    assert ours.get("nope") is None
    assert ours.require_dataset("new", shape=(5,), dtype="u1").shape == (5,)  # zarr-python: deprecated alias


# --- xarray: storage_options= and consolidated= -----------------------------------------------------------
def _consolidated_group_with_a_late_array(store, zarr_format):
    """A group consolidated by zarr-python, then an array added without consolidating again."""
    import zarr

    g = zarr.open_group(store, mode="w", zarr_format=zarr_format)
    t = g.create_array("t", shape=(4,), dtype="f4", dimension_names=["x"] if zarr_format == 3 else None)
    t[:] = np.arange(1, 5)  # no value is the fill value, which CF decoding masks
    if zarr_format == 2:
        t.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    zarr.consolidate_metadata(store, zarr_format=zarr_format)
    late = zarr.create_array(
        f"{store}/late",
        shape=(2,),
        dtype="i2",
        zarr_format=zarr_format,
        dimension_names=["y"] if zarr_format == 3 else None,
    )
    late[:] = 7
    if zarr_format == 2:
        late.attrs["_ARRAY_DIMENSIONS"] = ["y"]


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part:UserWarning")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_consolidated_means_what_it_means_to_the_zarr_engine(tmp_path, zarr_format):
    import xarray as xr

    path = str(tmp_path / "c.zarr")
    _consolidated_group_with_a_late_array(path, zarr_format)
    for consolidated in (True, None, False):
        ours = xr.open_dataset(path, engine="altarr", consolidated=consolidated)
        theirs = xr.open_zarr(path, consolidated=consolidated, zarr_format=zarr_format)
        assert sorted(ours.data_vars) == sorted(theirs.data_vars), consolidated
        np.testing.assert_array_equal(ours["t"].values, np.arange(1, 5))
    assert "late" not in xr.open_dataset(path, engine="altarr", consolidated=True)
    assert "late" in xr.open_dataset(path, engine="altarr", consolidated=False)
    tree = xr.open_datatree(path, engine="altarr", consolidated=True)
    assert list(tree.data_vars) == ["t"]


def test_xarray_consolidated_true_without_consolidated_metadata_names_the_group(tmp_path):
    import xarray as xr

    g = aa.create_group(tmp_path / "plain.zarr")
    g.create_array("a", shape=(3,), dtype="u1")
    with pytest.raises(MetadataError, match="consolidated=True"):
        xr.open_dataset(tmp_path / "plain.zarr", engine="altarr", consolidated=True)
    assert list(xr.open_dataset(tmp_path / "plain.zarr", engine="altarr")) == ["a"]


def test_xarray_storage_options_reach_the_store(s3_endpoint):
    import uuid

    import xarray as xr
    import zarr

    from _s3 import BUCKET, s3_options

    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/climate.zarr"
    options = s3_options(s3_endpoint)
    store = zarr.storage.FsspecStore.from_url(url, storage_options=options)
    g = zarr.open_group(store, mode="w")
    a = g.create_array("temperature", shape=(3, 4), dtype="f4", dimension_names=["lat", "lon"])
    a[...] = np.arange(12, dtype="f4").reshape(3, 4)
    zarr.consolidate_metadata(store)
    ds = xr.open_dataset(url, engine="altarr", storage_options=options, consolidated=True)
    assert ds["temperature"].dims == ("lat", "lon")
    np.testing.assert_array_equal(ds["temperature"].values, np.arange(12).reshape(3, 4))
    tree = xr.open_datatree(url, engine="altarr", storage_options=options)
    assert float(tree["temperature"].sum()) == 66.0
