"""Zarr v2 at the dataset level, both directions, against zarr-python 3.1 (``zarr_format=2``) and
tensorstore's ``zarr`` driver (issue 2).

Covered: dtypes with byte orders ``<``, ``>`` and ``|``; chunk memory order C and F; the compressors zlib,
gzip, zstd, blosc, lz4, bz2 and none (through numcodecs); the filters Delta and FixedScaleOffset; fill
values null / NaN / infinities / numbers; dimension separators ``.`` and ``/``; consolidated metadata
(``.zmetadata``) in both directions. Every case writes two overlapping regions of a small array whose
shape is not a multiple of the chunk shape, so edge chunks are padded and some chunks are never written.

Where tensorstore lacks something, the test asserts its refusal (its exception) instead of skipping.
"""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from _peers import altarr_chunks_match, read_json, sample, ts_read

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")

SHAPE = (9, 7)
CHUNKS = (4, 3)
REGIONS = [(slice(0, 6), slice(1, 7)), (slice(4, 9), slice(0, 2))]  # chunks (2, 1) and (2, 2) stay unwritten
DTYPES = ["|b1", "|u1", "|i1", "<i2", ">i2", "<u4", ">u8", ">i8", "<f2", ">f2", "<f4", ">f8", "<c8", ">c16"]
WRITERS = ["altarr", "zarr-python", "tensorstore"]


def native(dtype: str) -> np.dtype:
    return np.dtype(dtype).newbyteorder("=")


def expected_values(dtype: str, fill, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(values, what the array holds after writing REGIONS of them); null fill reads as the type's zero."""
    values = sample(SHAPE, native(dtype), seed)
    expected = np.full(SHAPE, 0 if fill is None else fill, dtype=native(dtype))
    for sel in REGIONS:
        expected[sel] = values[sel]
    return values, expected


def assert_values(got, expected: np.ndarray, what: str) -> None:
    """Same shape and values, same dtype up to byte order (peers hand out the stored byte order)."""
    got = np.asarray(got)
    assert got.shape == expected.shape, what
    assert got.dtype.newbyteorder("=") == expected.dtype, (what, got.dtype)
    np.testing.assert_array_equal(got, expected, err_msg=what)


# --- writers ------------------------------------------------------------------------------------------------
def write(
    writer: str,
    path,
    dtype: str,
    *,
    order="C",
    compressor=None,
    filters=None,
    fill=None,
    sep=".",
    values=None,
):
    """Create the array with ``writer`` and write REGIONS of ``values``. ``compressor``/``filters`` are
    numcodecs configs (dicts)."""
    if writer == "altarr":
        ds = aa.create_dataset(
            str(path),
            shape=SHAPE,
            dtype=dtype,
            chunks=CHUNKS,
            format="zarr2",
            compressor=compressor,
            filters=filters,
            order=order,
            fill_value=fill,
            dimension_separator=sep,
            attributes={"writer": writer},
        )
        put = ds.__setitem__
    elif writer == "zarr-python":
        z = zarr.create_array(
            store=str(path),
            shape=SHAPE,
            chunks=CHUNKS,
            dtype=dtype,
            compressors=None if compressor is None else numcodecs.get_codec(compressor),
            filters=None if not filters else [numcodecs.get_codec(f) for f in filters],
            order=order,
            zarr_format=2,
            fill_value=fill,
            chunk_key_encoding={"name": "v2", "separator": sep},
            attributes={"writer": writer},
        )
        put = z.__setitem__
    else:
        assert not filters, "tensorstore's zarr driver has no filters"
        t = ts.open(
            {
                "driver": "zarr",
                "kvstore": {"driver": "file", "path": str(path)},
                "create": True,
                "metadata": {
                    "shape": list(SHAPE),
                    "chunks": list(CHUNKS),
                    "dtype": dtype,
                    "order": order,
                    "compressor": compressor,
                    "fill_value": _json_fill(fill, dtype),
                    "dimension_separator": sep,
                },
            }
        ).result()

        def put(sel, v):
            t[sel].write(v).result()

    for sel in REGIONS:
        put(sel, values[sel])


def _json_fill(fill, dtype: str = "<f8"):
    if fill is None:
        return None
    kind = np.dtype(dtype).kind
    if kind == "b":
        return bool(fill)
    if kind == "c":
        return [_json_fill(complex(fill).real), _json_fill(complex(fill).imag)]
    if isinstance(fill, float) and np.isnan(fill):
        return "NaN"
    if fill in (float("inf"), float("-inf")):
        return "Infinity" if fill > 0 else "-Infinity"
    return fill


def read_back(reader: str, path) -> np.ndarray:
    if reader == "altarr":
        return aa.open_dataset(str(path))[...]
    if reader == "zarr-python":
        return zarr.open_array(str(path), mode="r", zarr_format=2)[...]
    return ts_read(path, "zarr")


def check_all_readers(writer: str, path, expected: np.ndarray, fill) -> None:
    for reader in WRITERS:
        if reader != writer:
            assert_values(read_back(reader, path), expected, f"{writer} -> {reader}")
    ds = aa.open_dataset(str(path))
    assert ds.format == "zarr2" and ds.shape == SHAPE and ds.chunks == CHUNKS and ds.shards is None
    assert ds.dtype == expected.dtype
    np.testing.assert_array_equal(ds.fill_value, expected.dtype.type(0 if fill is None else fill))
    stored, missing = altarr_chunks_match(ds, expected)
    assert stored and missing
    assert_values(ds[1:8:3, ::-2], expected[1:8:3, ::-2], "altarr strided region")


# --- byte orders and memory orders ----------------------------------------------------------------------------
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_byte_orders_and_memory_orders(tmp_path, dtype, order, writer):
    fill = 1 if native(dtype).kind == "b" else 5
    values, expected = expected_values(dtype, fill)
    path = tmp_path / "a.zarr"
    write(writer, path, dtype, order=order, compressor={"id": "zlib", "level": 1}, fill=fill, values=values)
    zarray = read_json(path / ".zarray")
    assert zarray["dtype"] == np.dtype(dtype).str and zarray["order"] == order
    check_all_readers(writer, path, expected, fill)


def test_stored_byte_order_is_the_declared_one(tmp_path):
    """A big-endian array stores big-endian bytes (checked on an uncompressed chunk), F order on disk."""
    path = tmp_path / "be.zarr"
    ds = aa.create_dataset(
        str(path), shape=(2, 3), dtype=">u2", chunks=(2, 3), format="zarr2", compressor=None, order="F"
    )
    ds[...] = np.array([[1, 2, 3], [4, 5, 6]])
    assert (path / "0.0").read_bytes() == np.array([1, 4, 2, 5, 3, 6], ">u2").tobytes()
    assert ds[...].dtype == np.dtype("uint16")  # users get native byte order
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], [[1, 2, 3], [4, 5, 6]])


# --- compressors and filters ---------------------------------------------------------------------------------
COMPRESSORS = {
    "none": None,
    "zlib": {"id": "zlib", "level": 6},
    "gzip": {"id": "gzip", "level": 1},
    "zstd": {"id": "zstd", "level": 3},
    "blosc": {"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 2, "blocksize": 0},
    "lz4": {"id": "lz4", "acceleration": 1},
    "bz2": {"id": "bz2", "level": 9},
}
FILTERS = {
    "none": ("<i4", None),
    "delta": (">i4", [{"id": "delta", "dtype": ">i4"}]),
    "fixedscaleoffset": (
        "<f8",
        [{"id": "fixedscaleoffset", "offset": 100, "scale": 10, "dtype": "<f8", "astype": "<i4"}],
    ),
    # each stage's decode is capped by what it can hold (issue 34): a compressor as a filter, a filter
    # that makes its input larger and a checksum after it
    "zlib": ("<i4", [{"id": "zlib", "level": 1}]),
    "astype-crc32": (
        "<i2",
        [{"id": "astype", "encode_dtype": "<i4", "decode_dtype": "<i2"}, {"id": "crc32"}],
    ),
}


def filter_values(filt: str) -> tuple[np.ndarray, np.ndarray]:
    dtype, _ = FILTERS[filt]
    values = ((np.arange(np.prod(SHAPE)).reshape(SHAPE) * 37) % 1001 - 500).astype(native(dtype))
    stored = values
    if filt == "fixedscaleoffset":  # lossy: what every reader gets back is numcodecs' round trip
        values = values / 10
        fso = numcodecs.get_codec(FILTERS[filt][1][0])
        stored = fso.decode(fso.encode(values)).reshape(SHAPE)
    expected = np.zeros(SHAPE, native(dtype))
    for sel in REGIONS:
        expected[sel] = stored[sel]
    return values, expected


@pytest.mark.parametrize("writer", ["altarr", "zarr-python"])
@pytest.mark.parametrize("filt", list(FILTERS))
@pytest.mark.parametrize("comp", list(COMPRESSORS))
def test_compressors_and_filters(tmp_path, comp, filt, writer):
    dtype, filters = FILTERS[filt]
    values, expected = filter_values(filt)
    path = tmp_path / "c.zarr"
    write(writer, path, dtype, compressor=COMPRESSORS[comp], filters=filters, fill=0, values=values)
    zarray = read_json(path / ".zarray")
    assert (zarray["compressor"] or {}).get("id") == (COMPRESSORS[comp] or {}).get("id")
    assert [f["id"] for f in zarray["filters"] or []] == [f["id"] for f in filters or []]
    other = "zarr-python" if writer == "altarr" else "altarr"
    assert_values(read_back(other, path), expected, f"{writer} -> {other}")
    stored, missing = altarr_chunks_match(aa.open_dataset(str(path)), expected)
    assert stored and missing
    if filters:
        # tensorstore's zarr driver has no filters: it refuses the array instead of misreading it (it
        # reports the first member it cannot parse: lz4 and zstd's "checksum" are refused as well)
        with pytest.raises(ValueError, match='filters are not supported|"lz4"|"checksum"'):
            ts_read(path, "zarr")


#: Compressors tensorstore's zarr (v2) driver reads and writes.
TS_COMPRESSORS = ["none", "zlib", "gzip", "zstd", "blosc", "bz2"]


@pytest.mark.parametrize("comp", TS_COMPRESSORS)
def test_tensorstore_writes_compressors(tmp_path, comp):
    values, expected = filter_values("none")
    path = tmp_path / "t.zarr"
    write("tensorstore", path, "<i4", compressor=COMPRESSORS[comp], fill=0, values=values)
    assert_values(read_back("altarr", path), expected, "tensorstore -> altarr")
    assert_values(read_back("zarr-python", path), expected, "tensorstore -> zarr-python")


@pytest.mark.parametrize("comp", list(COMPRESSORS))
def test_altarr_writes_compressors_for_tensorstore(tmp_path, comp):
    values, expected = filter_values("none")
    path = tmp_path / "a.zarr"
    write("altarr", path, "<i4", compressor=COMPRESSORS[comp], fill=0, values=values)
    if comp == "lz4":
        # tensorstore's zarr driver has no lz4 compressor
        with pytest.raises(ValueError, match='"lz4" is not registered'):
            ts_read(path, "zarr")
    else:
        if comp == "zstd":
            # numcodecs' canonical Zstd config carries "checksum": false, which tensorstore's zarr driver
            # refuses as an unknown member; altarr leaves the default out so tensorstore can read it
            assert read_json(path / ".zarray")["compressor"] == {"id": "zstd", "level": 3}
        assert_values(ts_read(path, "zarr"), expected, "altarr -> tensorstore")


def test_tensorstore_cannot_write_lz4(tmp_path):
    """tensorstore's zarr driver cannot create an lz4 array (so that direction does not exist)."""
    with pytest.raises(ValueError, match="lz4"):
        write("tensorstore", tmp_path / "t.zarr", "<i4", compressor=COMPRESSORS["lz4"], values=None)


# --- fill values and dimension separators -----------------------------------------------------------------------
FILLS = [
    ("<f4", None),
    ("<f4", float("nan")),
    (">f8", float("-inf")),
    (">f8", 2.5),
    ("<i2", None),
    ("<i2", -7),
    ("|u1", 255),
    ("<c8", None),
]


@pytest.mark.parametrize("sep", [".", "/"])
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("dtype,fill", FILLS)
def test_fill_values_and_separators(tmp_path, dtype, fill, writer, sep):
    values, expected = expected_values(dtype, fill)
    path = tmp_path / "f.zarr"
    write(writer, path, dtype, compressor={"id": "gzip", "level": 5}, fill=fill, sep=sep, values=values)
    zarray = read_json(path / ".zarray")
    assert zarray["fill_value"] == _json_fill(fill, dtype)
    assert zarray.get("dimension_separator", ".") == sep
    # chunk (0, 1) is stored under the separator's key
    assert (path / f"0{sep}1").is_file()
    assert not (path / ("0/1" if sep == "." else "0.1")).exists()
    check_all_readers(writer, path, expected, fill)
    z = zarr.open_array(str(path), mode="r", zarr_format=2)
    if fill is None:
        assert z.fill_value is None  # zarr-python keeps null, and reads missing chunks as zeros like altarr
    else:
        np.testing.assert_array_equal(np.asarray(z.fill_value), expected.dtype.type(fill))


def test_altarr_partial_write_into_zarr_python_array(tmp_path):
    """altarr edits a zarr-python v2 array (F order, big-endian, Delta + blosc): merged chunks are read,
    whole ones replaced, and zarr-python reads the result."""
    path = tmp_path / "p.zarr"
    values, expected = filter_values("delta")
    write(
        "zarr-python",
        path,
        ">i4",
        order="F",
        compressor=COMPRESSORS["blosc"],
        filters=FILTERS["delta"][1],
        fill=0,
        sep="/",
        values=values,
    )
    ds = aa.open_dataset(str(path), mode="r+")
    ds[2:9, 1:6] = -np.arange(35).reshape(7, 5)
    expected[2:9, 1:6] = -np.arange(35).reshape(7, 5)
    ds.write_chunk((0, 0), np.full((4, 3), 42))
    expected[0:4, 0:3] = 42
    assert ds.delete_chunk((0, 2)) is True
    expected[0:4, 6:7] = 0
    assert_values(read_back("zarr-python", path), expected, "zarr-python after altarr's edits")
    assert read_json(path / ".zarray")["order"] == "F"


# --- consolidated metadata --------------------------------------------------------------------------------------
def _group_with_arrays(writer: str, path) -> dict[str, np.ndarray]:
    a = np.arange(30, dtype="<f4").reshape(5, 6)
    b = np.array([1, -2, 3, -4], dtype=">i8")
    if writer == "altarr":
        g = aa.create_group(str(path), format="zarr2", attributes={"title": "demo"})
        ds = g.create_dataset(
            "a", shape=a.shape, dtype="<f4", chunks=(2, 3), compressor="zlib", fill_value=float("nan")
        )
        ds.attrs["units"] = "m"
        ds[...] = a
        g.create_dataset("sub/b", shape=b.shape, dtype=">i8", chunks=(3,), compressor=None, fill_value=None)[
            ...
        ] = b
        aa.consolidate_metadata(str(path))
    else:
        g = zarr.open_group(str(path), mode="w", zarr_format=2, attributes={"title": "demo"})
        za = g.create_array("a", shape=a.shape, dtype="<f4", chunks=(2, 3), fill_value=float("nan"))
        za.attrs["units"] = "m"
        za[...] = a
        g.create_group("sub").create_array("b", shape=b.shape, dtype=">i8", chunks=(3,), fill_value=None)[
            ...
        ] = b
        zarr.consolidate_metadata(str(path), zarr_format=2)
    return {"a": a, "sub/b": b}


def _remove_array_metadata(path) -> None:
    """Drop the per-array documents: only .zmetadata can describe the arrays now."""
    for name in ("a/.zarray", "a/.zattrs", "sub/b/.zarray"):
        (path / name).unlink()


@pytest.mark.parametrize("writer", ["altarr", "zarr-python"])
def test_consolidated_metadata(tmp_path, writer):
    path = tmp_path / "g.zarr"
    arrays = _group_with_arrays(writer, path)
    doc = read_json(path / ".zmetadata")
    assert doc["zarr_consolidated_format"] == 1
    assert {"a/.zarray", "a/.zattrs", "sub/b/.zarray", ".zgroup", ".zattrs"} <= set(doc["metadata"])

    # tensorstore's zarr driver does not use .zmetadata; it reads the arrays from their own .zarray
    np.testing.assert_array_equal(ts_read(path / "a", "zarr"), arrays["a"])
    _remove_array_metadata(path)
    with pytest.raises(ValueError, match="NOT_FOUND|not found|Error opening"):
        ts_read(path / "a", "zarr")

    # zarr-python reads through the consolidated document alone
    zg = zarr.open_consolidated(str(path), zarr_format=2)
    assert zg.attrs["title"] == "demo"
    assert zg["a"].attrs["units"] == "m"
    np.testing.assert_array_equal(zg["a"][...], arrays["a"])
    np.testing.assert_array_equal(zg["sub/b"][...], arrays["sub/b"])

    # and so does altarr
    root = aa.open_group(str(path))
    for name, want in arrays.items():
        ds = root[name]
        np.testing.assert_array_equal(ds[...], want)
        assert ds.dtype == want.dtype.newbyteorder("=")
    assert root["a"].attrs["units"] == "m" and np.isnan(root["a"].fill_value)


def test_altarr_consolidates_what_zarr_python_wrote(tmp_path):
    """altarr's .zmetadata over a zarr-python hierarchy holds the same documents as zarr-python's own."""
    path = tmp_path / "g.zarr"
    _group_with_arrays("zarr-python", path)
    theirs = read_json(path / ".zmetadata")["metadata"]
    # zarr-python 3.1 also records an (empty, must_understand: false) "consolidated_metadata" member in
    # nested .zgroup entries; that is a zarr-python v3-ism, not part of consolidated format 1
    for doc in theirs.values():
        doc.pop("consolidated_metadata", None)
    aa.consolidate_metadata(str(path))
    assert json.loads((path / ".zmetadata").read_text())["metadata"] == theirs
